package servicerules

import (
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/diagnose/diagnosetest"
)

// TestRecordedRuns holds the rules to real runs of the two drills
// (diagnose/testdata: threadpool-*, throttle-*): each broken run gives
// its incident's findings, each fixed run not those.
func TestRecordedRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recording string
		want      map[string]string // rule → severity ("any": reported at all)
		absent    []string
		says      map[string]string // rule → what its headline says
	}{
		// One instance of 1,000 threads on 2 cores, 150 requests/s
		// against its 50: the threads wait for a core, and from 27 s
		// every answer comes after its caller's 15 s timeout.
		{"threadpool-broken", map[string]string{"oldest-requests-starve": diagnose.Critical, "service-saturation": diagnose.Warning}, nil,
			map[string]string{"service-saturation": "bound by the CPU"}},
		// Five of 200, each on its own cores: nothing waits.
		{"threadpool-fixed", nil, []string{"oldest-requests-starve", "service-saturation", "hot-target-threads"}, nil},
		// A remote throttle 2.5 s late lets 300 joins/s through to
		// shard1, whose calls then hold every thread.
		{"throttle-broken", map[string]string{"throttle-lag": diagnose.Warning, "hot-target-threads": diagnose.Warning}, nil,
			map[string]string{"hot-target-threads": "Calls to shard1", "service-saturation": "bound by the connection pool"}},
		// A local throttle and a bulkhead per shard: shard1's calls are
		// refused at its bulkhead; its breaker opens (again after each
		// half-open spell while the surge lasts: 3 times here, a warning).
		{"throttle-fixed", map[string]string{"breaker-flapping": "any"}, []string{"throttle-lag", "hot-target-threads", "oldest-requests-starve"}, nil},
	} {
		t.Run(tc.recording, func(t *testing.T) {
			t.Parallel()
			run := diagnosetest.Open(t, tc.recording)
			got := map[string]string{}
			for _, f := range diagnose.Diagnose(run, Rules()) {
				got[f.Rule] = f.Severity
				if want, ok := tc.says[f.Rule]; ok && !strings.Contains(f.Headline, want) {
					t.Errorf("%s says %q, want it to say %q", f.Rule, f.Headline, want)
				}
				if f.Remedy == "" || len(f.Evidence) == 0 {
					t.Errorf("%s: a finding without evidence or remedy: %+v", f.Rule, f)
				}
			}
			for rule, severity := range tc.want {
				if got[rule] != severity && (severity != "any" || got[rule] == "") {
					t.Errorf("%s: %q, want %s (all: %v)", rule, got[rule], severity, got)
				}
			}
			for rule := range got {
				if slices.Contains(tc.absent, rule) {
					t.Errorf("%s reported, want none", rule)
				}
			}
		})
	}
}
