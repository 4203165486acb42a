package event

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/postgres"
	"github.com/firedrill/firedrill/scenario"
)

// startServer starts a throwaway server that is stopped when the test ends.
func startServer(t *testing.T) *postgres.Instance {
	t.Helper()
	inst, err := postgres.Start(t.Context(), postgres.Options{})
	if err != nil {
		t.Fatalf("start the embedded server: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop the embedded server: %v", err)
		}
	})
	return inst
}

// envFor is the Env the runner gives events for an embedded server.
func envFor(inst *postgres.Instance) *Env {
	return &Env{
		ConnString: inst.ConnString(),
		Restart:    func(ctx context.Context) error { return inst.Restart(ctx, nil) },
		DataDir:    inst.DataDir(),
		AppName:    func(workload string) string { return "firedrill:" + workload },
	}
}

// mustNew builds an event of spec or fails the test.
func mustNew(t *testing.T, spec scenario.Event) Event {
	t.Helper()
	ev, err := New(kinds, spec)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	return ev
}

// runResult is what Run returned.
type runResult struct {
	outcome string
	detail  map[string]any
	err     error
}

// runAsync runs ev in the background: the first channel receives what
// it passed to started, the second what Run returned.
func runAsync(ctx context.Context, ev Event, env *Env) (<-chan map[string]any, <-chan runResult) {
	started := make(chan map[string]any, 1)
	done := make(chan runResult, 1)
	go func() {
		outcome, detail, err := ev.Run(ctx, env, func(detail map[string]any) { started <- detail })
		done <- runResult{outcome, detail, err}
	}()
	return started, done
}

// waitStarted waits for an event to call started, failing the test if it
// returns first or takes over a minute.
func waitStarted(t *testing.T, started <-chan map[string]any, done <-chan runResult) map[string]any {
	t.Helper()
	select {
	case detail := <-started:
		return detail
	case result := <-done:
		t.Fatalf("Run returned before starting: outcome %q, err %v", result.outcome, result.err)
	case <-time.After(time.Minute):
		t.Fatal("the event did not start within a minute")
	}
	return nil
}

// waitDone waits for Run to return; within is generous, so that only a
// hung event fails it.
func waitDone(t *testing.T, done <-chan runResult, within time.Duration) runResult {
	t.Helper()
	select {
	case result := <-done:
		return result
	case <-time.After(within):
		t.Fatalf("Run did not return within %s", within)
	}
	return runResult{}
}

// eventually polls cond until it holds, failing the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustContain fails the test unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s %q does not contain %q", what, s, part)
		}
	}
}
