package postgres

import (
	"fmt"
	"math"
	"slices"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

var _ backend.Thresholded = Backend{}

// DBMetrics are the database metrics a scenario's thresholds may name on
// a PostgreSQL target ("db.deadlocks", "shard2.db.rollbacks"), each over
// the whole run and measured on the target's own samples.
func (Backend) DBMetrics() []scenario.MetricSpec {
	return []scenario.MetricSpec{
		{Name: "deadlocks", Kind: scenario.Count, Doc: "deadlocks detected (pg_stat_database.deadlocks)", Measure: sumOf(pgmetric.Deadlocks)},
		{Name: "rollbacks", Kind: scenario.Count, Doc: "transactions rolled back (pg_stat_database.xact_rollback)", Measure: measureRollbacks},
		{Name: "temp_files", Kind: scenario.Count, Doc: "temporary files written (pg_stat_database.temp_files)", Measure: sumOf(pgmetric.TempFiles)},
		{
			Name: "slru_hit_rate_min", Kind: scenario.Ratio,
			Doc:    "lowest per-sample hit rate of one SLRU cache (" + pgmetric.SLRU + "), by its name before PostgreSQL 17",
			Params: slices.Sorted(slices.Values(pgmetric.SLRUCaches)),
			// PostgreSQL 17 renamed the caches.
			ParamAliases: pgmetric.SLRUNames17,
			Measure:      measureSLRUMin,
		},
	}
}

// sumOf measures a count pg_stat_database reports per interval: the sum
// of its samples.
func sumOf(key string) scenario.Measure {
	return func(run *timeline.Run, _ string) (float64, string, bool) {
		const database = pgmetric.Database
		pts := run.Series(database, key)
		if len(pts) == 0 {
			return 0, database + " was not sampled (no " + key + " values in the timeline)", false
		}
		sum := 0.0
		for _, p := range pts {
			sum += p.V
		}
		return sum, "", true
	}
}

// measureRollbacks counts the transactions rolled back over the run. The
// sampler reports a rate; each value covers the time since the previous
// successful sample.
func measureRollbacks(run *timeline.Run, _ string) (float64, string, bool) {
	const database = pgmetric.Database
	var sum, prevT float64
	n := 0
	for _, s := range run.SourceSamples(database) {
		if s.Error != "" {
			continue
		}
		if v, has := s.Values[pgmetric.XactRollbackPerS]; has && n > 0 {
			sum += v * (s.T - prevT)
		}
		prevT = s.T
		n++
	}
	if n < 2 {
		return 0, database + " was not sampled twice: no rollback count", false
	}
	return math.Round(sum), "", true
}

// measureSLRUMin is the lowest per-sample hit rate of one SLRU cache. A
// cache that was sampled but never read or hit has missed nothing: its
// rate is taken as 100 %, and why says so.
func measureSLRUMin(run *timeline.Run, cache string) (float64, string, bool) {
	const slru = pgmetric.SLRU
	lowest, seen, sampled := math.Inf(1), false, false
	for _, s := range run.SourceSamples(slru) {
		if v, has := s.Values[pgmetric.SLRUHitRate(cache)]; has {
			lowest, seen = min(lowest, v), true
		}
		if _, has := s.Values[pgmetric.SLRUReadsPerS(cache)]; has {
			sampled = true
		}
	}
	switch {
	case seen:
		return lowest, "", true
	case sampled:
		return 1, "the cache was never read or hit during the run: nothing missed", true
	}
	return 0, fmt.Sprintf("%s was not sampled for cache %s (no %s.* values in the timeline)", slru, cache, cache), false
}
