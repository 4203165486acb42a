package report

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// The progress line says how many of a workload's clients are waiting to
// retry a connection the server refused, and says nothing when none is.
func TestProgressShowsClientsWithoutAConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		unconnected int
		want        string
	}{
		{21, "clients 30 (21 without a connection)"},
		{0, "clients 30\n"},
	} {
		var out strings.Builder
		p := &Progress{W: &out}
		p.Tick(1, []timeline.Interval{{Workload: "app", Start: 0, End: 1, Count: 600, Failed: 20, Clients: 30, Unconnected: tc.unconnected}}, nil)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("unconnected %d: %q, want %q", tc.unconnected, out.String(), tc.want)
		}
	}
}

// With the planned duration, each line starts with the elapsed time
// against it, right-aligned to the width of the last line's.
func TestProgressShowsElapsedOfTotal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		total, t float64
		want     string
	}{
		{60, 5, " [5s/60s]  app "},    // padded to the width of "[60s/60s]"
		{60, 12, "[12s/60s]  app "},   // as wide
		{600, 5, "  [5s/600s]  app "}, // the width of "[600s/600s]"
		{0, 12, "   12.0 s  app "},    // no planned duration: elapsed alone
	} {
		var out strings.Builder
		p := &Progress{W: &out, Total: tc.total}
		p.Tick(tc.t, []timeline.Interval{{Workload: "app", Start: tc.t - 1, End: tc.t, Count: 10, Clients: 1}}, nil)
		if !strings.HasPrefix(out.String(), tc.want) {
			t.Errorf("total %v at %v: %q, want it to start %q", tc.total, tc.t, out.String(), tc.want)
		}
	}
}
