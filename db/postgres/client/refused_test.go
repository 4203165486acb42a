package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/engine"
)

// limitedRole is a role that may hold only limitedConns sessions: the
// server refuses more with 53300 (too many connections for role), as it
// does past max_connections, without a server of its own.
const (
	limitedRole  = "fd_limited"
	limitedConns = 3
)

func limitedTarget(t *testing.T, mode pgtarget.QueryMode) *pgtarget.Target {
	t.Helper()
	pg := admin(t)
	setup(t, pg, "CREATE ROLE "+limitedRole+" LOGIN CONNECTION LIMIT "+string(rune('0'+limitedConns)), "DROP ROLE "+limitedRole)
	target, err := pgtarget.NewTarget(server.ConnString()+" user="+limitedRole, mode, appName)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// With ContinueOnError (firedrill run), clients the server refuses
// retry with backoff while the others work: the run ends without error,
// each refused attempt is a failed transaction counted by code as
// refused, the clients waiting for a session are counted at every
// progress tick, and the retries back off (not a tight loop). Sessions
// terminated mid-run are counted as lost, and their clients, or the
// waiting ones, take the freed slots.
func TestRefusedConnectionsAreRetried(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		name := "loop"
		if goroutines {
			name = "goroutines"
		}
		t.Run(name, func(t *testing.T) {
			target := limitedTarget(t, pgtarget.Extended)
			pg := admin(t)
			const clients = 3 * limitedConns
			cfg := newConfig(t, "s.sql", "SELECT pg_sleep(0.002);\n")
			cfg.Clients, cfg.Duration, cfg.ContinueOnError, cfg.Goroutines = clients, 3*time.Second, true, goroutines
			var mu sync.Mutex
			var waiting []int
			cfg.Progress = 250 * time.Millisecond
			cfg.OnProgress = func(p *engine.Progress) {
				mu.Lock()
				waiting = append(waiting, p.Unconnected)
				mu.Unlock()
			}
			var stderr bytes.Buffer
			cfg.Stderr = &stderr
			done := make(chan struct{})
			var res *engine.Result
			var err error
			go func() {
				defer close(done)
				res, err = engine.Run(context.Background(), target, cfg)
			}()
			time.Sleep(1500 * time.Millisecond)
			killed := queryInt(t, pg, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '"+limitedRole+"') AS t")
			<-done
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, stderr.String())
			}
			tot := res.Totals
			t.Logf("%d ok, %d failed; errors %v; refused %v; lost %v; %d clients refused, waited %v; waiting by tick %v; terminated %d",
				tot.Total.Count, tot.Total.OtherFailures, tot.Errors, tot.Refused, tot.Lost, res.RefusedClients, res.ReconnectWait, waiting, killed)
			if res.AbortedClient != 0 || tot.Total.Count == 0 {
				t.Fatalf("%d clients aborted, %d transactions", res.AbortedClient, tot.Total.Count)
			}
			refused := tot.Refused["53300"]
			if refused == 0 || refused != tot.Errors["53300"] {
				t.Errorf("refused %v, errors %v: every 53300 is a refusal", tot.Refused, tot.Errors)
			}
			if len(tot.Unavailable) != 0 {
				t.Errorf("unavailable %v: the server was up", tot.Unavailable)
			}
			if res.RefusedClients < clients-limitedConns {
				t.Errorf("%d clients refused, want at least %d", res.RefusedClients, clients-limitedConns)
			}
			// 10 ms doubling to 1 s, half of it random: in 3 s a client
			// tries 7 to 12 times; a tight loop would be hundreds.
			if per := float64(refused) / float64(res.RefusedClients); per < 4 || per > 16 {
				t.Errorf("%.1f refused attempts per refused client in 3 s, want the backoff's 4–16", per)
			}
			if res.ReconnectWait < time.Duration(clients-limitedConns)*time.Second {
				t.Errorf("clients waited %v in all before retrying, want most of the run for each refused one", res.ReconnectWait)
			}
			mu.Lock()
			most := 0
			for _, n := range waiting {
				most = max(most, n)
			}
			mu.Unlock()
			if most != clients-limitedConns {
				t.Errorf("at most %d clients waiting at a tick, want %d", most, clients-limitedConns)
			}
			// The terminated sessions were lost, by 57P01 or a broken
			// connection, and every failure is a refusal or a loss.
			var lost int64
			for _, n := range tot.Lost {
				lost += n
			}
			if killed > 0 && lost == 0 {
				t.Errorf("%d sessions terminated, none counted lost: %v", killed, tot.Errors)
			}
			if tot.Total.OtherFailures != refused+lost {
				t.Errorf("%d failures, %d refused + %d lost", tot.Total.OtherFailures, refused, lost)
			}
		})
	}
}

// Without ContinueOnError (firedrill pgbench) a refused connection keeps
// pgbench's meaning: the run fails when the clients connect, naming it.
func TestRefusedConnectionFailsPgbenchRun(t *testing.T) {
	target := limitedTarget(t, pgtarget.Extended)
	cfg := newConfig(t, "s.sql", "SELECT 1;\n")
	cfg.Clients, cfg.Duration = 2*limitedConns, time.Second
	res, err := engine.Run(context.Background(), target, cfg)
	if err == nil || !strings.Contains(err.Error(), "53300") || res != nil {
		t.Fatalf("Run = %v, %v; want the refusal (53300) and no result", res, err)
	}
}

// An application pool larger than the server allows: the slots the
// server refuses are retried by their borrowers, with backoff, while
// the connected slots serve the clients.
func TestRefusedPoolSlotsAreRetried(t *testing.T) {
	target := limitedTarget(t, pgtarget.Extended)
	cfg := newConfig(t, "s.sql", "SELECT pg_sleep(0.002);\n")
	cfg.Clients, cfg.Pool, cfg.Duration, cfg.ContinueOnError = 3*limitedConns, 2*limitedConns, 2*time.Second, true
	var stderr bytes.Buffer
	cfg.Stderr = &stderr
	res, err := engine.Run(context.Background(), target, cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	tot := res.Totals
	t.Logf("%d ok, %d failed; refused %v; %d clients refused, waited %v", tot.Total.Count, tot.Total.OtherFailures, tot.Refused, res.RefusedClients, res.ReconnectWait)
	refused := tot.Refused["53300"]
	if tot.Total.Count == 0 || refused == 0 || refused != tot.Total.OtherFailures {
		t.Errorf("%d ok, %d refused, %d failed: want successes, and every failure a refusal", tot.Total.Count, refused, tot.Total.OtherFailures)
	}
	if per := float64(refused) / float64(max(res.RefusedClients, 1)); per > 16 {
		t.Errorf("%.1f refused attempts per refused client in 2 s: no backoff", per)
	}
}

// slowProxy forwards connections on a loopback port to addr, each only
// after delay: a slow network, or a busy server's backend start.
func slowProxy(t *testing.T, addr string, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delay)
				out, err := net.Dial("tcp", addr)
				if err != nil {
					_ = in.Close()
					return
				}
				mu.Lock()
				conns = append(conns, in, out)
				mu.Unlock()
				go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
				_, _ = io.Copy(in, out)
				_ = in.Close()
			}()
		}
	}()
	return l.Addr().String()
}

// Refused clients retrying must not stall the clients that got in on
// the same event loop: with each connection taking 200 ms to open, a
// connect that blocked the loop (as pgconn's does) stopped every client
// for most of each second while six refused ones retried; parked on a
// pipe instead, the connected clients complete transactions in every
// quarter second.
func TestRefusedRetriesDoNotStallTheLoop(t *testing.T) {
	limitedTarget(t, pgtarget.Extended) // the role
	host, port, _ := net.SplitHostPort(slowProxy(t, server.TCPAddr(), 200*time.Millisecond))
	target, err := pgtarget.NewTarget(fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", host, port, limitedRole, server.Database()), pgtarget.Extended, appName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, "s.sql", "SELECT 1;\n")
	cfg.Clients, cfg.Duration, cfg.ContinueOnError = 3*limitedConns, 3*time.Second, true
	var mu sync.Mutex
	var counts []int64
	cfg.Progress = 250 * time.Millisecond
	cfg.OnProgress = func(p *engine.Progress) {
		mu.Lock()
		counts = append(counts, p.Interval.Total.Count)
		mu.Unlock()
	}
	var stderr bytes.Buffer
	cfg.Stderr = &stderr
	res, err := engine.Run(context.Background(), target, cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("transactions per quarter second %v; refused %v", counts, res.Totals.Refused)
	if res.Totals.Refused["53300"] == 0 {
		t.Fatalf("no refusal: %v", res.Totals.Errors)
	}
	stalled := 0
	for _, n := range counts {
		if n == 0 {
			stalled++
		}
	}
	if stalled > 0 {
		t.Errorf("%d of %d quarter seconds without a transaction: the refused clients' connects stalled the loop", stalled, len(counts))
	}
}
