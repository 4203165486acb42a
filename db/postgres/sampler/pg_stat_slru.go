package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// slru samples pg_stat_slru: the small LRU caches of transaction status,
// subtransactions and multixacts, whose misses (reads) stall every backend
// that needs them — the signature of subtransaction and multixact incidents.
//
// Source "pg_stat_slru". Values, per cache <N> (the names PostgreSQL 13–16
// give: MultiXactMember, MultiXactOffset, Subtrans, Xact, CommitTs, Notify,
// Serial, other; PostgreSQL 17's names — multixact_member, subtransaction,
// transaction … — are reported under the older names, so rules read one
// vocabulary):
//
//	<N>.hit_rate            0..1      blks_hit/(blks_hit+blks_read) in the interval; omitted without access
//	<N>.blks_hit_per_s      blocks/s  page found in the cache
//	<N>.blks_read_per_s     blocks/s  page read from disk (a miss)
//	<N>.blks_written_per_s  blocks/s  page written out
//	<N>.blks_zeroed_per_s   blocks/s  page zeroed (new page)
//	<N>.blks_exists_per_s   blocks/s  page existence checks
//	<N>.flushes             count     flushes of dirty data in the interval (checkpoints)
//	<N>.truncates           count     truncations in the interval
//
// Detail: nil.
type slru struct {
	session  *session
	counters sampler.Counters
}

var _ sampler.Sampler = (*slru)(nil)

// slruName is the source name.
const slruName = pgmetric.SLRU

// slruSQL reads every cache's counters.
var slruSQL = versioned{
	130000: Marker + `
SELECT name, blks_zeroed::float8, blks_hit::float8, blks_read::float8, blks_written::float8,
	blks_exists::float8, flushes::float8, truncates::float8
FROM pg_stat_slru`,
}

// slruColumns are slruSQL's counter columns, in order.
var slruColumns = []string{"blks_zeroed", "blks_hit", "blks_read", "blks_written", "blks_exists", "flushes", "truncates"}

// slruSeries maps slruSQL's columns to values (keys are prefixed "<N>.").
var slruSeries = []series{
	{"blks_hit", "blks_hit_per_s", perSecond},
	{"blks_read", "blks_read_per_s", perSecond},
	{"blks_written", "blks_written_per_s", perSecond},
	{"blks_zeroed", "blks_zeroed_per_s", perSecond},
	{"blks_exists", "blks_exists_per_s", perSecond},
	{"flushes", "flushes", perInterval},
	{"truncates", "truncates", perInterval},
}

// slruNames maps PostgreSQL 17's cache names to the earlier ones.
var slruNames = pgmetric.SLRUNames17

func (*slru) Name() string { return slruName }

func (smp *slru) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(slruName, slruSQL)
	if err != nil {
		return nil, nil, err
	}
	reading := map[string]float64{}
	var names []string
	err = smp.session.query(ctx, "read "+slruName, sql, nil, func(rows pgx.Rows) error {
		var name string
		counts := make([]float64, len(slruColumns))
		targets := []any{&name}
		for i := range counts {
			targets = append(targets, &counts[i])
		}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if old, ok := slruNames[name]; ok {
			name = old
		}
		names = append(names, name)
		for i, column := range slruColumns {
			reading[name+"."+column] = counts[i]
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	iv := smp.counters.Next(time.Now(), reading)
	values := map[string]float64{}
	for _, name := range names {
		emitSeries(values, slruSeries, name+".", reading, iv)
		if rate, ok := hitRate(iv, name+".blks_hit", name+".blks_read"); ok {
			values[pgmetric.SLRUHitRate(name)] = rate
		}
	}
	return values, nil, nil
}
