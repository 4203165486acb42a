package kinds_test

import (
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// TestDBMetricsConform checks the database metrics every kind registers
// for thresholds (backend.Thresholded): a table the loader can rely on
// (scenario.CheckMetricSpecs), a measure on each, and a measure that, on a
// run that sampled nothing, says it measured nothing instead of passing.
func TestDBMetricsConform(t *testing.T) {
	t.Parallel()
	for _, b := range kinds.Registry().Backends() {
		t.Run(b.Kind(), func(t *testing.T) {
			t.Parallel()
			metrics := backend.DBMetricsOf(b)
			for _, err := range scenario.CheckMetricSpecs(metrics) {
				t.Error(err)
			}
			empty := &timeline.Run{Manifest: timeline.Manifest{Status: timeline.StatusCompleted, Interval: 1}}
			for _, m := range metrics {
				if m.Measure == nil {
					t.Errorf("%s: no Measure", m.Name)
					continue
				}
				param := ""
				if len(m.Params) > 0 {
					param = m.Params[0]
				}
				if _, why, ok := m.Measure(empty, param); ok || why == "" {
					t.Errorf("%s on a run with no samples: measured %v, why %q; want unmeasured, with why", m.Name, ok, why)
				}
			}
		})
	}
}
