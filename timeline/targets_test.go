package timeline

import (
	"slices"
	"testing"
)

// Each target's view holds its own workloads, samples and marks and the
// host's, and reads as a run of one system; a run of one is its own view.
func TestForTarget(t *testing.T) {
	run := &Run{
		Manifest: Manifest{
			Target:    Target{Kind: "a-kind", Address: "db:1"},
			Targets:   []NamedTarget{{Name: "db", Target: Target{Kind: "a-kind", Address: "db:1"}, Samplers: []SamplerInfo{{Name: "waits"}}}, {Name: "cache", Target: Target{Kind: "b-kind", Address: "cache:2"}, Settings: map[string]string{"x": "1"}, Samplers: []SamplerInfo{{Name: "info"}}}},
			Samplers:  []SamplerInfo{{Name: "host"}},
			Workloads: []WorkloadInfo{{Name: "orders", Target: "db"}, {Name: "reads", Target: "cache"}},
			Events:    []EventInfo{{Name: "stall", Target: "cache"}, {Name: "shell-1"}},
		},
		Summary:   &Summary{Workloads: []WorkloadSummary{{Name: "orders"}, {Name: "reads"}}},
		Intervals: []Interval{{Workload: "orders"}, {Workload: "reads"}, {Workload: "orders"}},
		Samples:   []Sample{{Source: "host"}, {Source: "waits", Target: "db"}, {Source: "info", Target: "cache"}},
		Marks:     []Mark{{Event: "stall", Target: "cache"}, {Event: "shell-1"}},
	}
	if got := run.Manifest.TargetNames(); !slices.Equal(got, []string{"db", "cache"}) {
		t.Fatalf("TargetNames %v", got)
	}
	v := run.ForTarget("cache")
	if v.Manifest.Target.Kind != "b-kind" || v.Manifest.Targets != nil || v.Manifest.Settings["x"] != "1" {
		t.Errorf("view's manifest: %+v", v.Manifest)
	}
	var samplers, sources, marks, intervals []string
	for _, s := range v.Manifest.Samplers {
		samplers = append(samplers, s.Name)
	}
	for _, s := range v.Samples {
		sources = append(sources, s.Source)
	}
	for _, m := range v.Marks {
		marks = append(marks, m.Event)
	}
	for _, iv := range v.Intervals {
		intervals = append(intervals, iv.Workload)
	}
	if !slices.Equal(samplers, []string{"host", "info"}) || !slices.Equal(sources, []string{"host", "info"}) ||
		!slices.Equal(marks, []string{"stall", "shell-1"}) || !slices.Equal(intervals, []string{"reads"}) ||
		len(v.Manifest.Workloads) != 1 || len(v.Summary.Workloads) != 1 || v.Summary.Workloads[0].Name != "reads" {
		t.Errorf("cache's view: samplers %v, samples %v, marks %v, intervals %v, workloads %+v", samplers, sources, marks, intervals, v.Manifest.Workloads)
	}
	// The run itself is untouched.
	if len(run.Manifest.Samplers) != 1 || len(run.Samples) != 3 || len(run.Summary.Workloads) != 2 {
		t.Errorf("ForTarget changed the run: %+v", run.Manifest.Samplers)
	}
	one := &Run{Manifest: Manifest{Target: Target{Kind: "a-kind"}}}
	if one.ForTarget("db") != one || one.Manifest.TargetNames() != nil {
		t.Error("a run of one system is not its own view")
	}
}
