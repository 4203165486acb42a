package postgres

import (
	"slices"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/drills/measure"
)

var _ measure.Measured = Backend{}

// DrillMetrics are what drills may expect of a PostgreSQL run beyond the
// clients' numbers: the deadlocks the server detected (else the clients'
// 40P01 errors), and one SLRU cache's hit rate.
func (Backend) DrillMetrics() []measure.Metric {
	return []measure.Metric{
		{
			Name: "deadlocks", Trailing: true,
			Sum:        []measure.Series{{Source: pgmetric.Database, Key: pgmetric.Deadlocks}},
			ErrorCodes: []string{"40P01"},
		},
		{
			// slru_hit_rate.<cache>: the hit rate of one SLRU cache of
			// pg_stat_slru (MultiXactMember …), pooled over the window
			// (0..1), by the names before PostgreSQL 17 (the sampler maps
			// the new names).
			Name:    "slru_hit_rate.<cache>",
			Members: slices.Sorted(slices.Values(pgmetric.SLRUCaches)),
			HitRate: &measure.HitRate{Source: pgmetric.SLRU, HitsSuffix: pgmetric.SLRUHitsPerS(""), ReadsSuffix: pgmetric.SLRUReadsPerS("")},
		},
	}
}
