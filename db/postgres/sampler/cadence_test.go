package postgres

import (
	"slices"
	"testing"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// Sessions, locks and the horizon's holder are read on every tick; the
// counters once a second (pg_stat_statements, added when the server has
// it, is a counter too).
func TestEveryTickSources(t *testing.T) {
	t.Parallel()
	var fast []string
	for _, src := range sampler.Schedule(append(sources(nil), &statements{}), nil) {
		if src.EveryTick {
			fast = append(fast, src.Name())
		}
	}
	want := []string{pgmetric.Activity, pgmetric.XminHorizon, pgmetric.Locks}
	if !slices.Equal(fast, want) {
		t.Errorf("read every tick: %v, want %v", fast, want)
	}
}
