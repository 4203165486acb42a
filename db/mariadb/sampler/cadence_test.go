package mariadb

import (
	"slices"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler"
)

// Only the process list is read on every tick ((*processlist).EveryTick
// says why); InnoDB's lock tables and the counters once a second.
func TestEveryTickSources(t *testing.T) {
	t.Parallel()
	var fast []string
	for _, src := range sampler.Schedule(sources(nil, false), nil) {
		if src.EveryTick {
			fast = append(fast, src.Name())
		}
	}
	if want := []string{mariadbmetric.Processlist}; !slices.Equal(fast, want) {
		t.Errorf("read every tick: %v, want %v", fast, want)
	}
}
