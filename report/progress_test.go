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
