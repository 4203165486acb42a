package postgres

import (
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/internal/promexport"
)

var _ promexport.Named = Backend{}

// MetricNames are PostgreSQL's key tables, for the names and units of its
// sampled series on /metrics.
func (Backend) MetricNames() promexport.Names { return metricNames() }

func metricNames() promexport.Names {
	n := promexport.Names{Labels: pgmetric.PlaceholderLabels()}
	for _, k := range pgmetric.Keys {
		n.Keys = append(n.Keys, promexport.Key(k))
	}
	return n
}
