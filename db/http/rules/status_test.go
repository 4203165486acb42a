package httprules

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// statusRun is one target's run of 20 one-second samples with two
// endpoints, each answering per second the classes given (index 1 … 5)
// and noReply requests without a reply.
func statusRun(classes map[string][6]float64, noReply map[string]float64, codes map[string]int64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Target: timeline.Target{Kind: "http"},
		Workloads: []timeline.WorkloadInfo{{Name: "browse"}}}}
	for i := 1; i <= 20; i++ {
		v := map[string]float64{}
		for ep, byClass := range classes {
			total := 0.0
			for class := 1; class <= 5; class++ {
				v[httpmetric.EndpointKey(ep, httpmetric.StatusClass(class))] = byClass[class]
				total += byClass[class]
			}
			v[httpmetric.EndpointKey(ep, httpmetric.RequestsPerS)] = total
			v[httpmetric.EndpointKey(ep, httpmetric.ErrorsPerS)] = noReply[ep]
		}
		run.Samples = append(run.Samples, timeline.Sample{Source: httpmetric.Source, T: float64(i), Values: v})
	}
	run.Intervals = []timeline.Interval{{Workload: "browse", Start: 0, End: 20, Errors: codes}}
	return run
}

func TestErrorRateAndStatusClassByEndpoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		classes  map[string][6]float64
		noReply  map[string]float64
		codes    map[string]int64
		rule     diagnose.Rule
		severity string // "" for no finding
		headline string
		remedy   string
	}{
		{"healthy", map[string][6]float64{"GET /a": {2: 100}, "GET /b": {2: 50}}, nil, nil, errorRate{}, "", "", ""},
		// One endpoint answers 503 to a fifth of its requests.
		{"5xx", map[string][6]float64{"GET /a": {2: 100}, "POST /b": {2: 40, 5: 10}}, nil, map[string]int64{"http-503": 200},
			errorRate{}, diagnose.Critical, "POST /b failed 20.0 % of its requests (200 5xx)", "proxy"},
		// Requests time out: 2 % of them.
		{"timeouts", map[string][6]float64{"GET /a": {2: 98}}, map[string]float64{"GET /a": 2}, map[string]int64{"timeout": 40},
			errorRate{}, diagnose.Warning, "GET /a failed 2.0 % of its requests (40 without a reply)", "fails fast"},
		// A few 500s in many: info.
		{"rare", map[string][6]float64{"GET /a": {2: 999, 5: 0.1}}, nil, nil, errorRate{}, diagnose.Info, "GET /a failed", ""},
		{"4xx", map[string][6]float64{"GET /a": {2: 90, 4: 10}}, nil, map[string]int64{"http-404": 200},
			statusClass{}, diagnose.Warning, "10 % of GET /a's replies were 4xx", "ids within what exists"},
		{"3xx", map[string][6]float64{"GET /a": {3: 10}}, nil, nil,
			statusClass{}, diagnose.Warning, "100 % of GET /a's replies were 3xx", "final URL"},
		{"no client errors", map[string][6]float64{"GET /a": {2: 90, 5: 10}}, nil, nil, statusClass{}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := c.rule.Check(statusRun(c.classes, c.noReply, c.codes))
			if c.severity == "" {
				if len(fs) != 0 {
					t.Fatalf("want nothing, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			f := fs[0]
			if f.Severity != c.severity || !strings.HasPrefix(f.Headline, c.headline) || !strings.Contains(f.Remedy, c.remedy) || f.Workload != "browse" {
				t.Errorf("got %s %q (workload %q)\nremedy %q\nwant %s %q, remedy with %q", f.Severity, f.Headline, f.Workload, f.Remedy, c.severity, c.headline, c.remedy)
			}
		})
	}
}
