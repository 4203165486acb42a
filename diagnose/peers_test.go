package diagnose

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// activityRule is a stub kind's rule that also says how busy its server
// was: its samples' "active" values.
type activityRule struct{ stubRule }

func (activityRule) Activity(run *timeline.Run) ([]timeline.Point, string) {
	return run.Series("b-source", "active"), "b-source:active"
}

func (activityRule) Waits(*timeline.Run, float64, float64) []Wait { return nil }

// Within DiagnoseTargets a rule of one target sees the other targets as
// peers, each on its own view with its kind's ServerActivity; outside it
// (a rule called on a run directly, a run of one system) it sees none.
func TestPeersWithinDiagnoseTargets(t *testing.T) {
	t.Parallel()
	var seen []Peer
	rules := map[string][]Rule{
		"a-kind": {stubRule{id: "a-rule", check: func(run *timeline.Run) []Finding {
			seen = Peers(run)
			return nil
		}}},
		"b-kind": {activityRule{stubRule{id: "b-rule", check: func(*timeline.Run) []Finding { return nil }}}},
	}
	run := &timeline.Run{
		Manifest: timeline.Manifest{Target: timeline.Target{Kind: "a-kind"}, Targets: []timeline.NamedTarget{
			{Name: "api", Target: timeline.Target{Kind: "a-kind"}},
			{Name: "db", Target: timeline.Target{Kind: "b-kind"}},
		}},
		Samples: []timeline.Sample{
			{Source: "a-source", Target: "api", T: 1, Values: map[string]float64{"active": 9}},
			{Source: "b-source", Target: "db", T: 1, Values: map[string]float64{"active": 3}},
		},
	}
	DiagnoseTargets(run, func(kind string) []Rule { return rules[kind] })
	if len(seen) != 1 || seen[0].Name != "db" || seen[0].Kind != "b-kind" || seen[0].Activity == nil {
		t.Fatalf("peers of api: %+v", seen)
	}
	if pts, series := seen[0].Activity.Activity(seen[0].Run); len(pts) != 1 || pts[0].V != 3 || series != "b-source:active" {
		t.Errorf("db's activity on its view: %v %s", pts, series)
	}
	if got := Peers(run.ForTarget("api")); got != nil {
		t.Errorf("peers outside DiagnoseTargets: %+v", got)
	}
	seen = nil
	one := &timeline.Run{Manifest: timeline.Manifest{Target: timeline.Target{Kind: "a-kind"}}}
	DiagnoseTargets(one, func(kind string) []Rule { return rules[kind] })
	if seen != nil {
		t.Errorf("peers in a run of one system: %+v", seen)
	}
}
