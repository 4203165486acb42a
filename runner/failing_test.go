package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// loadScenarioText writes a scenario into a temp dir and loads it.
func loadScenarioText(t *testing.T, text string) *scenario.Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A workload whose every transaction fails (a division by zero, a syntax
// error) stops the run within a few seconds of the default 5 s limit,
// not at its 30 s end: status failed, the error and the script line in
// the manifest, and clients that back off instead of spinning.
func TestAllFailingRunStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sql, code string
	}{
		{"division-by-zero", "SELECT 1/0;", "22012"},
		{"syntax-error", "SELEC 1;", "42601"},
		// Not retried (max_tries 1), a conflict that can only fail is a
		// broken script too.
		{"serialization-not-retried", "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$;", "40001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := loadScenarioText(t, fmt.Sprintf(`name: failing
duration: 30s
workloads:
  - name: broken
    clients: 2
    scripts:
      - inline: |
          \set id random(1, 10)
          SELECT :id;
          %s
`, tc.sql))
			var log strings.Builder
			started := time.Now()
			res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir() + "/run", Log: &log})
			took := time.Since(started)
			if !errors.Is(err, ErrFailing) {
				t.Fatalf("Run: %v, want ErrFailing\nlog:\n%s", err, log.String())
			}
			if res == nil {
				t.Fatal("no result with ErrFailing: the run directory must be complete")
			}
			run, oerr := timeline.Open(res.Dir)
			if oerr != nil {
				t.Fatal(oerr)
			}
			m := run.Manifest
			t.Logf("took %v; status %s: %s", took, m.Status, m.Error)
			if m.Status != timeline.StatusFailed {
				t.Errorf("status %q, want failed", m.Status)
			}
			for _, want := range []string{"every transaction failed for 5s", tc.code, "scripts/broken-1-inline-1.sql:3"} {
				if !strings.Contains(m.Error, want) {
					t.Errorf("manifest error %q does not say %q", m.Error, want)
				}
			}
			if run.Summary == nil || len(run.Summary.Workloads) != 1 {
				t.Fatalf("summary %+v", run.Summary)
			}
			ws := run.Summary.Workloads[0]
			// The load stopped between 5 s (the limit) and 8 s.
			if ws.Duration < 5 || ws.Duration > 8 {
				t.Errorf("the workload ran %.1f s, want 5–8 s", ws.Duration)
			}
			if ws.Count != 0 || ws.Failed == 0 {
				t.Errorf("%d succeeded, %d failed; want none and some", ws.Count, ws.Failed)
			}
			// Backing off, two clients fail some hundreds of times in
			// 5 s, not hundreds of thousands.
			if ws.Failed > 2000 || ws.Backoff <= 0 {
				t.Errorf("%d failures, %.1f s of backoff: the clients spun", ws.Failed, ws.Backoff)
			}
			if len(ws.Errors) != 1 || ws.Errors[0].Code != tc.code || ws.Errors[0].Line != 3 {
				t.Errorf("errors %+v, want one %s at line 3", ws.Errors, tc.code)
			}
		})
	}
}

// A workload that retries its conflicts (max_tries > 1) and runs out of
// tries on every transaction is the incident being measured (gap-lock
// deadlocks under REPEATABLE READ): the failure limit does not stop it,
// the run completes and counts the failures.
func TestRetriedConflictsDoNotStopTheRun(t *testing.T) {
	t.Parallel()
	sc := loadScenarioText(t, `name: conflicts
duration: 9s
workloads:
  - name: conflicts
    clients: 2
    max_tries: 3
    scripts:
      - inline: |
          DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$;
`)
	var log strings.Builder
	res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir() + "/run", Log: &log})
	if err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log.String())
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := run.Manifest; m.Status != timeline.StatusCompleted {
		t.Errorf("status %q (%s), want completed", m.Status, m.Error)
	}
	if run.Summary == nil || len(run.Summary.Workloads) != 1 {
		t.Fatalf("summary %+v", run.Summary)
	}
	ws := run.Summary.Workloads[0]
	if ws.Duration < 8 {
		t.Errorf("the workload ran %.1f s, want its 9 s", ws.Duration)
	}
	if ws.Count != 0 || ws.Failed == 0 {
		t.Errorf("%d succeeded, %d failed; want none and some", ws.Count, ws.Failed)
	}
}

// An outage of the server in the middle of a run (down for about 3 s,
// then back) is counted: the transactions that could not get a connection
// are failures with the connection's error code, and the window is
// marked on the timeline with its cause and length. Before and after it,
// the run is healthy.
func TestOutageIsCountedAndMarked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	sc := loadScenarioText(t, `name: outage
duration: 14s
workloads:
  - name: ping
    clients: 2
    scripts: [{inline: "SELECT 1;"}]
`)
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", inst.Port(), inst.User(), inst.Database())
	startedLoad := make(chan struct{})
	outageDone := make(chan error, 1)
	go func() {
		<-startedLoad
		time.Sleep(4 * time.Second)
		// A value the server refuses keeps it down until the next
		// good restart.
		if err := inst.Restart(ctx, map[string]string{"shared_buffers": "no-such-size"}); err == nil {
			outageDone <- errors.New("the server restarted with a bad setting")
			return
		}
		time.Sleep(3 * time.Second)
		outageDone <- inst.Restart(ctx, nil)
	}()
	var log strings.Builder
	res, err := Run(ctx, Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir() + "/run", DSN: dsn, Log: &log,
		OnStart: func(string) { close(startedLoad) }})
	if oerr := <-outageDone; oerr != nil {
		t.Fatalf("making the outage: %v", oerr)
	}
	if err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log.String())
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Status != timeline.StatusCompleted {
		t.Errorf("status %q (%s), want completed: an outage is measured, not a reason to stop", run.Manifest.Status, run.Manifest.Error)
	}
	ws := run.Summary.Workloads[0]
	var connFailures int64
	for _, e := range ws.Errors {
		t.Logf("error %s × %d: %s", e.Code, e.Count, e.Message)
		if timeline.ConnectionError(e.Code) {
			connFailures += e.Count
		}
	}
	if connFailures == 0 || ws.Failed < connFailures {
		t.Errorf("%d failed, %d connection errors: connection failures must count as failed transactions", ws.Failed, connFailures)
	}
	// The intervals during the outage count the failures by code.
	var ivFailed int64
	for _, iv := range run.WorkloadIntervals("ping") {
		if connectionCodes(iv.Errors) > 0 && iv.Failed == 0 {
			t.Errorf("interval %.0f–%.0f s has connection errors %v but no failures", iv.Start, iv.End, iv.Errors)
		}
		ivFailed += iv.Failed
	}
	if ivFailed != ws.Failed {
		t.Errorf("intervals count %d failures, the summary %d", ivFailed, ws.Failed)
	}
	// One outage of about 3 s, with its cause, recovered.
	var longest float64
	var cause, outcome string
	var start float64
	for _, m := range run.Marks {
		if m.Kind != timeline.MarkOutage {
			continue
		}
		t.Logf("mark %.1f s %s %s %s %v", m.T, m.Event, m.Phase, m.Outcome, m.Detail)
		switch m.Phase {
		case timeline.PhaseStart:
			start = m.T
			cause, _ = m.Detail["cause"].(string)
		case timeline.PhaseEnd:
			if d := m.T - start; d > longest {
				longest, outcome = d, m.Outcome
			}
		}
	}
	if longest < 2 || longest > 6 {
		t.Errorf("longest outage %.1f s, want about 3 s", longest)
	}
	if cause == "" || !strings.HasPrefix(outcome, "recovered after") {
		t.Errorf("outage cause %q, outcome %q", cause, outcome)
	}
	// Healthy before and after.
	if tps(run, "ping", 0, 4) < 100 || tps(run, "ping", 10, 14) < 100 {
		t.Errorf("throughput before %.0f/s, after %.0f/s: the run did not recover", tps(run, "ping", 0, 4), tps(run, "ping", 10, 14))
	}
}

func connectionCodes(errs map[string]int64) int64 {
	var n int64
	for code, c := range errs {
		if timeline.ConnectionError(code) {
			n += c
		}
	}
	return n
}
