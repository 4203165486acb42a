package drills

import (
	"github.com/firedrill/firedrill/drills/measure"
	"github.com/firedrill/firedrill/kinds"
)

// testMeasures are the drill metrics of every kind firedrill is built
// with, as the command line gathers them.
func testMeasures() Measures {
	var metrics [][]measure.Metric
	for _, b := range kinds.Registry().Backends() {
		if m, ok := b.(measure.Measured); ok {
			metrics = append(metrics, m.DrillMetrics())
		}
	}
	return NewMeasures(metrics...)
}
