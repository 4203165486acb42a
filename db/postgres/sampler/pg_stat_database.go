package postgres

import (
	"context"
	"time"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// database samples pg_stat_database for the database the samplers are
// connected to, with the connection limits to compare numbackends with.
//
// Source "pg_stat_database". Values:
//
//	xact_commit_per_s               1/s       transactions committed
//	xact_rollback_per_s             1/s       transactions rolled back
//	blks_hit_per_s                  blocks/s  shared buffer hits
//	blks_read_per_s                 blocks/s  blocks read from the OS (page cache or disk)
//	cache_hit_rate                  0..1      blks_hit/(blks_hit+blks_read) in the interval; omitted without access
//	tup_returned_per_s              rows/s    rows returned by scans
//	tup_fetched_per_s               rows/s    rows fetched by index scans
//	tup_inserted_per_s              rows/s    rows inserted
//	tup_updated_per_s               rows/s    rows updated
//	tup_deleted_per_s               rows/s    rows deleted
//	deadlocks                       count     deadlocks detected in the interval
//	deadlocks_total                 count     deadlocks since the statistics reset
//	conflicts                       count     queries cancelled by recovery conflicts in the interval (standbys)
//	temp_files                      count     temporary files created in the interval
//	temp_bytes                      bytes     written to temporary files in the interval
//	blk_read_time_ms                ms        time reading blocks in the interval (needs track_io_timing)
//	blk_write_time_ms               ms        time writing blocks in the interval (needs track_io_timing)
//	sessions_abandoned              count     sessions whose client disconnected without ending them, in the interval (PG14+)
//	sessions_fatal                  count     sessions ended by a fatal error in the interval (PG14+)
//	sessions_killed                 count     sessions terminated by an operator in the interval (PG14+)
//	numbackends                     sessions  backends connected to the database, as PostgreSQL counts them (the sampler's included)
//	max_connections                 sessions  the setting
//	superuser_reserved_connections  sessions  the setting
//
// Detail: nil.
type database struct {
	session  *session
	counters sampler.Counters
}

var _ sampler.Sampler = (*database)(nil)

// databaseName is the source name.
const databaseName = pgmetric.Database

// databaseSQL reads the current database's row; every column is float8 and
// named after its view column.
var databaseSQL = versioned{
	130000: Marker + `
SELECT ` + databaseColumns + `
FROM pg_stat_database WHERE datname = current_database()`,
	140000: Marker + `
SELECT ` + databaseColumns + `,
	sessions_abandoned::float8, sessions_fatal::float8, sessions_killed::float8
FROM pg_stat_database WHERE datname = current_database()`,
}

// databaseColumns are the columns every supported version has.
const databaseColumns = `numbackends::float8, xact_commit::float8, xact_rollback::float8,
	blks_read::float8, blks_hit::float8, tup_returned::float8, tup_fetched::float8,
	tup_inserted::float8, tup_updated::float8, tup_deleted::float8,
	conflicts::float8, temp_files::float8, temp_bytes::float8, deadlocks::float8,
	blk_read_time::float8, blk_write_time::float8,
	current_setting('max_connections')::float8 AS max_connections,
	current_setting('superuser_reserved_connections')::float8 AS superuser_reserved_connections`

// databaseSeries maps databaseSQL's columns to values.
var databaseSeries = []series{
	{"xact_commit", "xact_commit_per_s", perSecond},
	{"xact_rollback", "xact_rollback_per_s", perSecond},
	{"blks_hit", "blks_hit_per_s", perSecond},
	{"blks_read", "blks_read_per_s", perSecond},
	{"tup_returned", "tup_returned_per_s", perSecond},
	{"tup_fetched", "tup_fetched_per_s", perSecond},
	{"tup_inserted", "tup_inserted_per_s", perSecond},
	{"tup_updated", "tup_updated_per_s", perSecond},
	{"tup_deleted", "tup_deleted_per_s", perSecond},
	{"deadlocks", "deadlocks", perInterval},
	{"deadlocks", "deadlocks_total", gauge},
	{"conflicts", "conflicts", perInterval},
	{"temp_files", "temp_files", perInterval},
	{"temp_bytes", "temp_bytes", perInterval},
	{"blk_read_time", "blk_read_time_ms", perInterval},
	{"blk_write_time", "blk_write_time_ms", perInterval},
	{"sessions_abandoned", "sessions_abandoned", perInterval},
	{"sessions_fatal", "sessions_fatal", perInterval},
	{"sessions_killed", "sessions_killed", perInterval},
	{"numbackends", "numbackends", gauge},
	{"max_connections", "max_connections", gauge},
	{"superuser_reserved_connections", "superuser_reserved_connections", gauge},
}

func (*database) Name() string { return databaseName }

func (smp *database) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(databaseName, databaseSQL)
	if err != nil {
		return nil, nil, err
	}
	rows, err := smp.session.queryFloats(ctx, "read "+databaseName, sql)
	if err != nil {
		return nil, nil, err
	}
	reading, err := singleRow(rows, "read "+databaseName)
	if err != nil {
		return nil, nil, err
	}
	iv := smp.counters.Next(time.Now(), reading)
	values := map[string]float64{}
	emitSeries(values, databaseSeries, "", reading, iv)
	if rate, ok := hitRate(iv, "blks_hit", "blks_read"); ok {
		values[pgmetric.CacheHitRate] = rate
	}
	return values, nil, nil
}
