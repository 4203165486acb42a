package report

import (
	"testing"

	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Compare sets a service's goodput and its worst queue side by side,
// from the source "service" of each run.
func TestCompareServiceCounters(t *testing.T) {
	t.Parallel()
	mk := func(good, age float64) *timeline.Run {
		r := &timeline.Run{}
		for i := range 3 {
			r.Samples = append(r.Samples, timeline.Sample{Source: svcmetric.Source, T: float64(i + 1), Values: map[string]float64{
				svcmetric.Key("api", svcmetric.Goodput, ""):        good,
				svcmetric.Key("api", svcmetric.QueueOldestAge, ""): age * float64(i),
				svcmetric.Key("api", svcmetric.InSystem, ""):       1,
			}})
		}
		return r
	}
	c := Compare(mk(200, 30), mk(400, 6), nil, nil)
	got := map[string][2]float64{}
	for _, cc := range c.Counters {
		if cc.A != nil && cc.B != nil {
			got[cc.Label] = [2]float64{*cc.A, *cc.B}
		}
	}
	if g := got["api: goodput"]; g != [2]float64{200, 400} {
		t.Errorf("goodput: %v, want 200 → 400 (counters %+v)", g, c.Counters)
	}
	if g := got["api: oldest queued, worst"]; g != [2]float64{60, 12} {
		t.Errorf("oldest queued: %v, want 60 → 12", g)
	}
}
