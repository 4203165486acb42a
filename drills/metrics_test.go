package drills

import (
	"slices"
	"testing"

	"github.com/firedrill/firedrill/drills/measure"
	"github.com/firedrill/firedrill/timeline"
)

// Two kinds' metrics of one name add up; without their series the
// clients' error codes count; a family takes only its members.
func TestMeasuresMerge(t *testing.T) {
	t.Parallel()
	ms := NewMeasures(
		[]measure.Metric{{Name: "stops", Trailing: true, Sum: []measure.Series{{Source: "a", Key: "stops"}}, ErrorCodes: []string{"A1"}}},
		[]measure.Metric{
			{Name: "stops", Trailing: true, Sum: []measure.Series{{Source: "b", Key: "halts"}}, ErrorCodes: []string{"B2"}},
			{Name: "hit.<cache>", Members: []string{"x"}, HitRate: &measure.HitRate{Source: "c", HitsSuffix: ".hits", ReadsSuffix: ".reads"}},
		},
	)
	if names := ms.Names(); !slices.Contains(names, "stops") || !slices.Contains(names, "hit.<cache>") || !slices.Contains(names, "tps") {
		t.Errorf("Names() = %v", names)
	}
	run := &timeline.Run{
		Samples: []timeline.Sample{
			{Source: "a", T: 1, Values: map[string]float64{"stops": 2}},
			{Source: "b", T: 2, Values: map[string]float64{"halts": 3}},
			{Source: "c", T: 2, Values: map[string]float64{"x.hits": 9, "x.reads": 1}},
		},
		Intervals: []timeline.Interval{{Start: 0, End: 1, Errors: map[string]int64{"A1": 5, "B2": 7}}},
	}
	if v, err := ms.Measure(run, "stops", "", Span{0, 10}); err != nil || v != 5 {
		t.Errorf("stops = %v, %v; want 5 (both kinds' series)", v, err)
	}
	if v, err := ms.Measure(&timeline.Run{Intervals: run.Intervals}, "stops", "", Span{0, 10}); err != nil || v != 12 {
		t.Errorf("stops without series = %v, %v; want 12 (both kinds' error codes)", v, err)
	}
	if v, err := ms.Measure(run, "hit.x", "", Span{0, 10}); err != nil || v != 0.9 {
		t.Errorf("hit.x = %v, %v; want 0.9", v, err)
	}
	if _, err := ms.Measure(run, "hit.y", "", Span{0, 10}); err == nil {
		t.Error("hit.y: a family takes only its members")
	}
}
