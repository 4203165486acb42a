package kinds_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
)

// Every backend can hold the mark by which shard 0 of a split run tells
// the other shards that its setup is done (runner/shard.go): before the
// mark, and for another run, it is not there; after, it is, also before
// the setup made firedrill's schema (the others look for it at once).
func TestEveryBackendMarksSetupDone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server per backend")
	}
	for _, b := range kinds.Registry().Backends() {
		t.Run(b.Kind(), func(t *testing.T) {
			sc, err := scenario.Load(filepath.Join("..", "db", b.Kind(), "testdata", "conformance.yaml"), kinds.Registry().ScenarioOptions())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tgt, err := b.Open(ctx, backend.Spec{Scenario: sc, Connections: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close(false)
			if sl, ok := tgt.(backend.Setupless); ok && sl.Setupless() {
				return // no setup: the shards have nothing to wait for
			}
			m, ok := tgt.(backend.SetupMarker)
			if !ok {
				t.Fatalf("%s's target cannot mark setup done: the shards of a split run would start without waiting for it", b.Kind())
			}
			const run, other = "conformance@2026-11-25T07:00:00Z/4", "conformance@2026-11-25T07:05:00Z/4"
			if done, err := m.SetupDone(ctx, run); err != nil || done {
				t.Fatalf("before any mark: done %v, %v", done, err)
			}
			if err := m.MarkSetupDone(ctx, run); err != nil {
				t.Fatal(err)
			}
			if done, err := m.SetupDone(ctx, run); err != nil || !done {
				t.Errorf("after the mark: done %v, %v", done, err)
			}
			if done, err := m.SetupDone(ctx, other); err != nil || done {
				t.Errorf("another run: done %v, %v", done, err)
			}
			if err := m.MarkSetupDone(ctx, run); err != nil { // a rerun of the same shard 0
				t.Errorf("marking again: %v", err)
			}
		})
	}
}
