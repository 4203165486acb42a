package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// frozenScenario holds a transaction from 1 s to 6 s of a 10 s run; the
// test stops the server at 3 s, so the hold's end finds it frozen.
const frozenScenario = `name: frozen
duration: 10s
workloads:
  - name: reads
    clients: 2
    scripts: [{inline: "SELECT 1;"}]
events:
  - {name: hold, kind: hold_transaction, at: 1s, duration: 5s}
`

// A server that stops answering mid-run (every process of the embedded
// server stopped with SIGSTOP) must not hold the run: it ends by its
// deadline, degraded, with the frozen window, the hold event's end at its
// planned time and throughput over the planned duration.
func TestFrozenServerStopsAtDeadline(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("frozen.yaml", []byte(frozenScenario), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	var begin time.Time
	log := &timedLog{start: time.Now()}
	stopped := make(chan []int, 1)
	opts := Options{Scenario: sc, Backends: kinds.Registry(), RunDir: filepath.Join(t.TempDir(), "run"), Log: log,
		OnStart: func(dir string) {
			begin = time.Now()
			man := readManifest(t, dir)
			pid := postmasterPID(t, man.Target.DataDir)
			time.AfterFunc(3*time.Second, func() {
				procs := postgres.ServerProcesses(pid)
				for _, p := range procs {
					if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
						t.Errorf("SIGSTOP server process %d: %v", p, err)
					}
				}
				fmt.Fprintf(log, "test: stopped the server's %d processes\n", len(procs))
				stopped <- procs
			})
		}}
	t.Cleanup(func() {
		select {
		case procs := <-stopped:
			for _, p := range procs {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
		default:
		}
	})
	res, err := Run(context.Background(), opts)
	took := time.Since(begin)
	t.Logf("log:\n%s", log.String())
	if !errors.Is(err, ErrDegraded) {
		t.Fatalf("Run: %v, want ErrDegraded", err)
	}
	// The duration, the grace, and the embedded server's shutdown.
	if limit := sc.Duration + hardStopGrace + 3*time.Second; took > limit {
		t.Errorf("the run took %v after its start, more than %v", took.Round(time.Millisecond), limit)
	}
	t.Logf("the run took %v after its start", took.Round(time.Millisecond))

	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if m.Status != timeline.StatusDegraded || !strings.Contains(m.Error, "the server stopped answering from ") {
		t.Errorf("status %q, error %q", m.Status, m.Error)
	}
	if len(m.Frozen) != 1 {
		t.Fatalf("frozen windows %+v, want one", m.Frozen)
	}
	w := m.Frozen[0]
	t.Logf("frozen window %+v", w)
	// It starts where the server last answered: in the tick of the stop
	// at 3 s (a transaction completed in it), and lasts until the end.
	if w.Start < 2.5 || w.Start > 4.5 || w.End < 10 || w.Recovered {
		t.Errorf("frozen window %+v, want from about 3 s to the end, not recovered", w)
	}

	var holdEnd *timeline.Mark
	for i := range run.Marks {
		if mk := &run.Marks[i]; mk.Event == "hold" && mk.Phase == timeline.PhaseEnd {
			holdEnd = mk
		}
	}
	if holdEnd == nil {
		t.Fatalf("no end mark for the hold event: %+v", run.Marks)
	}
	t.Logf("hold end: %+v", *holdEnd)
	if math.Abs(holdEnd.T-6) > 0.5 {
		t.Errorf("the hold's end is marked at %.2f s, want its planned 6 s", holdEnd.T)
	}

	if run.Summary == nil || len(run.Summary.Workloads) != 1 {
		t.Fatalf("summary %+v", run.Summary)
	}
	ws := run.Summary.Workloads[0]
	if ws.Duration > 10.01 || run.Summary.Duration > 10.01 || ws.Count == 0 ||
		math.Abs(ws.TPS-float64(ws.Count)/ws.Duration) > 0.01*ws.TPS {
		t.Errorf("summary over %.2f s (workload %.2f s): %d transactions, %.0f tps", run.Summary.Duration, ws.Duration, ws.Count, ws.TPS)
	}
}

func readManifest(t *testing.T, dir string) timeline.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, timeline.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var man timeline.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	return man
}

// postmasterPID reads the server's pid from its data directory.
func postmasterPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 1 {
		t.Fatalf("postmaster.pid: %q: %v", b, err)
	}
	return pid
}

// timedLog keeps a run's log lines with the time each was written.
type timedLog struct {
	mu    sync.Mutex
	start time.Time
	b     strings.Builder
}

func (l *timedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, "%6.2f s  %s", time.Since(l.start).Seconds(), p)
	return len(p), nil
}

func (l *timedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
