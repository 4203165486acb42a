package httprules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// dbActivity is a stand-in database kind's rule that says how busy its
// server was: its samples' "active" values, as a kind's ServerActivity
// does from its own series.
type dbActivity struct{}

func (dbActivity) ID() string                             { return "db-activity" }
func (dbActivity) Inputs() diagnose.Inputs                { return diagnose.Inputs{AnyOf: []string{"dbsource"}} }
func (dbActivity) Check(*timeline.Run) []diagnose.Finding { return nil }
func (dbActivity) Waits(*timeline.Run, float64, float64) []diagnose.Wait {
	return []diagnose.Wait{{Name: "IO:DataFileRead", Series: "dbsource:wait.IO:DataFileRead", Sessions: 4}}
}
func (dbActivity) Activity(run *timeline.Run) ([]timeline.Point, string) {
	return run.Series("dbsource", "active"), "dbsource:active"
}

// syntheticRun is an http target "api" (one endpoint, 40 one-second
// samples whose p99 is p99(t)) beside a database "db" whose active
// sessions are active(t); active nil: no database in the run.
func syntheticRun(p99, active func(t float64) float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1,
		Target:    timeline.Target{Kind: "http"},
		Workloads: []timeline.WorkloadInfo{{Name: "browse", Target: "api"}}}}
	run.Manifest.Targets = []timeline.NamedTarget{{Name: "api", Target: timeline.Target{Kind: "http"}}}
	if active != nil {
		run.Manifest.Targets = append(run.Manifest.Targets, timeline.NamedTarget{Name: "db", Target: timeline.Target{Kind: "db"}})
	}
	ep := "GET /journals"
	for i := 1; i <= 40; i++ {
		t := float64(i)
		run.Samples = append(run.Samples, timeline.Sample{Source: httpmetric.Source, Target: "api", T: t, Values: map[string]float64{
			httpmetric.RequestsPerS: 50, httpmetric.P99MS: p99(t),
			httpmetric.EndpointKey(ep, httpmetric.RequestsPerS): 50, httpmetric.EndpointKey(ep, httpmetric.P99MS): p99(t),
			httpmetric.EndpointKey(ep, httpmetric.StatusClass(2)): 50,
		}})
		if active != nil {
			run.Samples = append(run.Samples, timeline.Sample{Source: "dbsource", Target: "db", T: t, Values: map[string]float64{"active": active(t)}})
		}
	}
	return run
}

// rising is a p99 of 10 ms that climbs from 15 s to 2 s at 40 s.
func rising(t float64) float64 {
	if t < 15 {
		return 10 + float64(int(t)%3)
	}
	return 10 + (t-15)*80
}

func TestLatencyRiseSaysWhereTheTimeWent(t *testing.T) {
	t.Parallel()
	rulesFor := func(kind string) []diagnose.Rule {
		if kind == "db" {
			return []diagnose.Rule{dbActivity{}}
		}
		return Rules()
	}
	cases := []struct {
		name   string
		p99    func(float64) float64
		active func(float64) float64
		want   string // in the headline; "" for no finding
	}{
		// The database's sessions climb with the latency: its time.
		{"database", rising, func(t float64) float64 { return 0.2 + max(0, t-15)*0.3 }, "the time went to the database db"},
		// The database stays idle while the latency climbs: elsewhere.
		{"elsewhere", rising, func(t float64) float64 { return 0.1 }, "database stayed idle: the time goes elsewhere"},
		// The database is busy all along, not more with the latency:
		// its sessions did not rise, so not its time.
		{"busy but flat", rising, func(t float64) float64 { return 6 + float64(int(t)%2) }, "the time goes elsewhere"},
		// No database observed: the finding cannot tell.
		{"no database", rising, nil, "p99 rose from"},
		// A flat latency is no finding.
		{"flat", func(t float64) float64 { return 12 }, func(t float64) float64 { return 0.1 }, ""},
		// A rise of a few milliseconds is none either.
		{"small", func(t float64) float64 { return 10 + t }, func(t float64) float64 { return t / 10 }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []diagnose.Finding
			for _, f := range diagnose.DiagnoseTargets(syntheticRun(c.p99, c.active), rulesFor) {
				if f.Rule == "http-latency" {
					got = append(got, f)
				}
			}
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no finding, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one http-latency finding, got %+v", got)
			}
			f := got[0]
			if !strings.Contains(f.Headline, c.want) || f.Target != "api" || f.Workload != "browse" {
				t.Errorf("headline %q (target %q, workload %q), want %q", f.Headline, f.Target, f.Workload, c.want)
			}
			if c.name == "no database" && !strings.Contains(f.Remedy, "Add the service's database as a target") {
				t.Errorf("remedy %q", f.Remedy)
			}
			if c.name == "database" && !strings.Contains(fmt.Sprint(f.Evidence), "IO:DataFileRead") {
				t.Errorf("the database's waits are not in the evidence: %+v", f.Evidence)
			}
		})
	}
}

func TestPearson(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		xs, ys []float64
		want   float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, 1},
		{[]float64{1, 2, 3, 4}, []float64{8, 6, 4, 2}, -1},
		{[]float64{1, 2, 3}, []float64{5, 5, 5}, 0}, // flat: no correlation
		{[]float64{1, 2}, []float64{1, 2}, 0},       // too few
	} {
		if got := pearson(c.xs, c.ys); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("pearson(%v, %v) = %v, want %v", c.xs, c.ys, got, c.want)
		}
	}
}
