package drills

import (
	"github.com/firedrill/firedrill/backend/all"
	"github.com/firedrill/firedrill/drills/measure"
)

// testMeasures are the drill metrics of every kind firedrill is built
// with, as the command line gathers them.
func testMeasures() Measures {
	var kinds [][]measure.Metric
	for _, b := range all.Registry().Backends() {
		if m, ok := b.(measure.Measured); ok {
			kinds = append(kinds, m.DrillMetrics())
		}
	}
	return NewMeasures(kinds...)
}
