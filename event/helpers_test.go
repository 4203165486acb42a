package event

import (
	"context"
	"github.com/firedrill/firedrill/event/eventtest"
	"testing"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
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

// runResult is what an event's Run returned (eventtest).
type runResult = eventtest.Result

// runAsync runs ev in the background (eventtest.RunAsync).
func runAsync(ctx context.Context, ev Event, env *Env) (<-chan map[string]any, <-chan runResult) {
	return eventtest.RunAsync(func(started func(map[string]any)) (string, map[string]any, error) {
		return ev.Run(ctx, env, started)
	})
}

var (
	waitStarted = eventtest.WaitStarted
	waitDone    = eventtest.WaitDone
	eventually  = eventtest.Eventually
	mustContain = eventtest.MustContain
)
