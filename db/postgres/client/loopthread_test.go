package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// threadTarget opens the sessions of a real Target and notes, for every
// command a client runs, the OS thread it runs on, and each thread's
// system-call counters when it first runs a command.
type threadTarget struct {
	*pgtarget.Target
	mu      sync.Mutex
	threads map[int]map[int]bool // client → threads its commands ran on
	start   map[int]threadIO     // thread → counters at its first command
}

var _ engine.LoopTarget = (*threadTarget)(nil)

func (t *threadTarget) ConnectLoop(ctx context.Context, clientID int, p engine.Poller) (engine.Conn, error) {
	c, err := t.Target.ConnectLoop(ctx, clientID, p)
	if err != nil {
		return nil, err
	}
	return &threadConn{Conn: c, t: t, client: clientID}, nil
}

type threadConn struct {
	engine.Conn
	t      *threadTarget
	client int
}

func (c *threadConn) Exec(ctx context.Context, cmd *script.Command, vars *script.Vars) error {
	tid := syscall.Gettid()
	c.t.mu.Lock()
	if c.t.threads[c.client] == nil {
		c.t.threads[c.client] = map[int]bool{}
	}
	c.t.threads[c.client][tid] = true
	if _, ok := c.t.start[tid]; !ok {
		c.t.start[tid] = readThreadIO(tid)
	}
	c.t.mu.Unlock()
	return c.Conn.Exec(ctx, cmd, vars)
}

// threadIO is what the kernel counts for one thread: read and write
// system calls (/proc/…/io: syscr, syscw) and voluntary context switches
// (each a wait that blocked).
type threadIO struct{ reads, writes, switches int64 }

func readThreadIO(tid int) threadIO {
	var io threadIO
	dir := fmt.Sprintf("/proc/self/task/%d/", tid)
	if b, err := os.ReadFile(dir + "io"); err == nil {
		fmt.Sscanf(string(b), "rchar: %d\nwchar: %d\nsyscr: %d\nsyscw: %d", new(int64), new(int64), &io.reads, &io.writes)
	}
	if b, err := os.ReadFile(dir + "status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if _, err := fmt.Sscanf(line, "voluntary_ctxt_switches: %d", &io.switches); err == nil {
				break
			}
		}
	}
	return io
}

// Each event loop runs on one OS thread for the whole run, as each of
// pgbench's threads is one: its clients' commands never move to another
// thread (unlocked, the runtime's preemption every 10 ms handed loops to
// the spare P's thread, spreading two loops over three threads), and the
// two loops of -j 2 are two threads. On those threads a select-only
// transaction costs about one write and one read (pgbench: one send and
// two receives, the second speculative) and at most about one blocking
// wait; the bounds are generous, since a loaded machine makes replies
// arrive later and waits more frequent, but a read that finds nothing
// before every reply, or a wait per command, exceeds them.
func TestLoopsKeepTheirThreads(t *testing.T) {
	for _, mode := range []pgtarget.QueryMode{pgtarget.Simple, pgtarget.Prepared} {
		t.Run(mode.String(), func(t *testing.T) {
			target := &threadTarget{Target: newTarget(t, mode), threads: map[int]map[int]bool{}, start: map[int]threadIO{}}
			cfg := newConfig(t, "select-only", "builtin:select-only")
			cfg.Clients, cfg.Threads, cfg.Duration = 8, 2, 2*time.Second
			res, err := engine.Run(context.Background(), target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			tx := res.Totals.Total.Count
			if tx < 200 {
				t.Fatalf("only %d transactions in %v", tx, cfg.Duration)
			}
			loopThreads := map[int]bool{}
			for client, tids := range target.threads {
				if len(tids) != 1 {
					t.Errorf("client %d ran its commands on %d threads, want 1", client, len(tids))
				}
				for tid := range tids {
					loopThreads[tid] = true
				}
			}
			if len(loopThreads) != 2 {
				t.Fatalf("-j 2 ran on %d threads, want 2", len(loopThreads))
			}
			var sum threadIO
			for tid := range loopThreads {
				end, start := readThreadIO(tid), target.start[tid]
				sum.reads += end.reads - start.reads
				sum.writes += end.writes - start.writes
				sum.switches += end.switches - start.switches
			}
			perTx := func(n int64) float64 { return float64(n) / float64(tx) }
			t.Logf("%d transactions; per transaction: %.2f reads, %.2f writes, %.2f blocking waits",
				tx, perTx(sum.reads), perTx(sum.writes), perTx(sum.switches))
			if perTx(sum.reads) > 1.5 || perTx(sum.writes) > 1.5 || perTx(sum.switches) > 1.5 {
				t.Errorf("per transaction: %.2f reads, %.2f writes, %.2f blocking waits; want at most 1.5 of each",
					perTx(sum.reads), perTx(sum.writes), perTx(sum.switches))
			}
		})
	}
}
