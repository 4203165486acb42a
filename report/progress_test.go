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

// A workload blocked for the whole interval finished nothing: its line
// prints dashes for the latencies, not "0.00 ms", and how long its
// oldest transaction has been running; a busy one prints its max.
func TestProgressShowsAStallInProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		iv      timeline.Interval
		want    []string
		notWant string
	}{
		{"blocked", timeline.Interval{Workload: "app", Start: 11, End: 12, Clients: 8, OldestUS: 2_400_000},
			[]string{"0.0 tps  p50 –  p99 –  max –", "oldest running 2.40 s"}, "0.00 ms"},
		{"busy", timeline.Interval{Workload: "app", Start: 11, End: 12, Count: 500, Clients: 8, OldestUS: 900,
			LatencyPct: timeline.Percentiles{P50: 400, P99: 2100, Max: 32_000}},
			[]string{"p50 0.40 ms  p99 2.10 ms  max 32 ms"}, "oldest running"},
		{"stuck beside finishing ones", timeline.Interval{Workload: "app", Start: 11, End: 12, Count: 500, Clients: 8, OldestUS: 900_000,
			LatencyPct: timeline.Percentiles{P50: 400, P99: 2100, Max: 32_000}},
			[]string{"max 32 ms", "oldest running 900 ms"}, ""},
	} {
		var out strings.Builder
		p := &Progress{W: &out}
		p.Tick(12, []timeline.Interval{tc.iv}, nil)
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: %q, want %q", tc.name, out.String(), w)
			}
		}
		if tc.notWant != "" && strings.Contains(out.String(), tc.notWant) {
			t.Errorf("%s: %q has %q", tc.name, out.String(), tc.notWant)
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

// In a run of several targets each workload's line names its target
// ("<target>/<workload>"), as the wait lines and findings do; a run of one
// system keeps the workload's name alone.
func TestProgressNamesTheWorkloadsTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		targets map[string]string
		want    string
	}{
		{nil, "1.0 s  orders "},
		{map[string]string{"orders": "db", "reads": "cache"}, "1.0 s  db/orders "},
	} {
		var out strings.Builder
		p := &Progress{W: &out, Targets: tc.targets}
		p.Tick(1, []timeline.Interval{{Workload: "orders", Start: 0, End: 1, Count: 10, Clients: 2}}, nil)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("targets %v: %q, want %q", tc.targets, out.String(), tc.want)
		}
	}
}
