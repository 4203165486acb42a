package promexport

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/firedrill/firedrill/timeline"
)

// labelsOf is a series' labels, by name.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// In a run of several targets each target's sampled series, its samplers'
// health and its events carry a target label, so two targets of one kind
// are two series; the host's series carry none. A run of one system's
// series have no target label (TestExporterAccumulatesIntervals).
func TestExporterLabelsTargets(t *testing.T) {
	t.Parallel()
	e := New("v", testNames()...)
	e.Start(Labels{Scenario: "s", RunID: "r", Backend: "postgres"}, 10*time.Second)
	e.Tick(1, nil, []timeline.Sample{
		{Source: "locks", Target: "db", Values: map[string]float64{"blocked": 2}},
		{Source: "locks", Target: "shard2", Values: map[string]float64{"blocked": 5}},
		{Source: "host", Values: map[string]float64{"cpu.idle": 0.5}},
	})
	e.Mark(timeline.Mark{Event: "stall", Target: "shard2", Kind: "disk_pressure", Phase: timeline.PhaseStart})
	fams := gather(t, e)
	blocked := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			switch {
			case name == "firedrill_locks_blocked":
				blocked[l["target"]] = m.GetGauge().GetValue()
			case name == "firedrill_host_cpu_idle_ratio":
				if _, has := l["target"]; has {
					t.Errorf("the host's series %s has a target label", name)
				}
			case name == "firedrill_event_active":
				if l["target"] != "shard2" || l["event"] != "stall" || m.GetGauge().GetValue() != 1 {
					t.Errorf("event_active %v = %v", l, m.GetGauge().GetValue())
				}
			case name == "firedrill_sampler_up" && l["source"] == "locks":
				if l["target"] != "db" && l["target"] != "shard2" {
					t.Errorf("sampler_up of locks names target %q", l["target"])
				}
			}
		}
	}
	if len(blocked) != 2 || blocked["db"] != 2 || blocked["shard2"] != 5 {
		t.Errorf("blocked sessions by target: %v; families %v", blocked, keys(fams))
	}
}

func keys[V any](m map[string]V) []string { return sortedKeys(m) }
