package cli

import (
	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/drills/measure"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// presentation is how the report presents runs of each kind the
// registry has (charts, compare counters, product names).
func presentation(reg *backend.Registry) present.Kinds {
	return present.KindsOf(reg.Default(), reg.Backends())
}

// metricNames are the key tables of the registry's kinds, for the names
// of their sampled series on /metrics.
func metricNames(reg *backend.Registry) []promexport.Names {
	var out []promexport.Names
	for _, b := range reg.Backends() {
		if n, ok := b.(promexport.Named); ok {
			out = append(out, n.MetricNames())
		}
	}
	return out
}

// drillMeasures are the metrics drills may expect: the neutral ones and
// those of the registry's kinds.
func drillMeasures(reg *backend.Registry) drills.Measures {
	var kinds [][]measure.Metric
	for _, b := range reg.Backends() {
		if m, ok := b.(measure.Measured); ok {
			kinds = append(kinds, m.DrillMetrics())
		}
	}
	return drills.NewMeasures(kinds...)
}

// openRun opens a run directory for reading, with what a run recorded
// before its kind's backend filled it in taken from its kind (the
// server's name for people).
func openRun(reg *backend.Registry, dir string) (*timeline.Run, error) {
	run, err := timeline.Open(dir)
	if err != nil {
		return nil, err
	}
	presentation(reg).Fill(run)
	return run, nil
}
