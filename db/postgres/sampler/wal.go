package postgres

import (
	"context"
	"time"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// wal samples WAL generation and writing (pg_stat_wal; from PostgreSQL 18
// the writes and syncs are in pg_stat_io) and checkpoints
// (pg_stat_bgwriter; pg_stat_checkpointer from PostgreSQL 17).
//
// Source "wal". Values, each where the server has it:
//
//	wal_bytes_per_s           bytes/s  WAL generated (PG13: from the WAL insert position)
//	wal_records_per_s         1/s      WAL records (PG14+)
//	wal_fpi_per_s             1/s      full-page images in WAL (PG14+): high right after checkpoints
//	wal_buffers_full          count    times WAL buffers were full and a backend had to write, in the interval (PG14+)
//	wal_write_per_s           1/s      WAL write calls (PG14+)
//	wal_sync_per_s            1/s      WAL sync calls (PG14+)
//	wal_write_time_ms         ms       time in WAL writes in the interval (PG14+, needs track_wal_io_timing)
//	wal_sync_time_ms          ms       time in WAL syncs in the interval (PG14+, needs track_wal_io_timing)
//	checkpoints_timed         count    checkpoints started by checkpoint_timeout in the interval
//	checkpoints_req           count    checkpoints requested (max_wal_size, CHECKPOINT, shutdown) in the interval
//	buffers_checkpoint        buffers  written by checkpoints in the interval
//	checkpoint_write_time_ms  ms       checkpoints spent writing, in the interval
//	checkpoint_sync_time_ms   ms       checkpoints spent syncing, in the interval
//	buffers_clean             buffers  written by the background writer in the interval
//	maxwritten_clean          count    background writer rounds stopped at bgwriter_lru_maxpages, in the interval
//	buffers_backend           buffers  written by backends themselves in the interval (PG13–16)
//	buffers_backend_fsync     count    fsyncs backends had to do themselves in the interval (PG13–16)
//
// Detail: nil.
type wal struct {
	session  *session
	counters sampler.Counters
}

var (
	_ sampler.Sampler = (*wal)(nil)
	_ sampler.Noter   = (*wal)(nil)
)

// walName is the source name.
const walName = pgmetric.WAL

// walSQL reads one row of float8 counters named after walSeries' columns.
var walSQL = versioned{
	130000: Marker + `
SELECT CASE WHEN pg_is_in_recovery() THEN NULL
		ELSE pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 END AS wal_bytes,
	` + bgwriterColumns + `
FROM pg_stat_bgwriter b`,
	140000: Marker + `
SELECT ` + walColumns + `,
	w.wal_write::float8, w.wal_sync::float8, w.wal_write_time::float8, w.wal_sync_time::float8,
	` + bgwriterColumns + `
FROM pg_stat_wal w, pg_stat_bgwriter b`,
	170000: Marker + `
SELECT ` + walColumns + `,
	w.wal_write::float8, w.wal_sync::float8, w.wal_write_time::float8, w.wal_sync_time::float8,
	` + checkpointerColumns + `
FROM pg_stat_wal w, pg_stat_checkpointer c, pg_stat_bgwriter b`,
	180000: Marker + `
SELECT ` + walColumns + `,
	io.writes AS wal_write, io.fsyncs AS wal_sync, io.write_time AS wal_write_time, io.fsync_time AS wal_sync_time,
	` + checkpointerColumns + `
FROM pg_stat_wal w, pg_stat_checkpointer c, pg_stat_bgwriter b,
	(SELECT sum(writes)::float8 AS writes, sum(fsyncs)::float8 AS fsyncs,
		sum(write_time)::float8 AS write_time, sum(fsync_time)::float8 AS fsync_time
	FROM pg_stat_io WHERE object = 'wal' AND context = 'normal') io`,
}

// walColumns are pg_stat_wal's columns from PostgreSQL 14 on.
const walColumns = `w.wal_records::float8, w.wal_fpi::float8, w.wal_bytes::float8, w.wal_buffers_full::float8`

// bgwriterColumns are pg_stat_bgwriter's columns before PostgreSQL 17.
const bgwriterColumns = `b.checkpoints_timed::float8, b.checkpoints_req::float8,
	b.buffers_checkpoint::float8, b.checkpoint_write_time::float8, b.checkpoint_sync_time::float8,
	b.buffers_clean::float8, b.maxwritten_clean::float8,
	b.buffers_backend::float8, b.buffers_backend_fsync::float8`

// checkpointerColumns are pg_stat_checkpointer's and pg_stat_bgwriter's
// columns from PostgreSQL 17 on, named as before.
const checkpointerColumns = `c.num_timed::float8 AS checkpoints_timed, c.num_requested::float8 AS checkpoints_req,
	c.buffers_written::float8 AS buffers_checkpoint,
	c.write_time::float8 AS checkpoint_write_time, c.sync_time::float8 AS checkpoint_sync_time,
	b.buffers_clean::float8, b.maxwritten_clean::float8`

// walSeries maps walSQL's columns to values.
var walSeries = []series{
	{"wal_bytes", "wal_bytes_per_s", perSecond},
	{"wal_records", "wal_records_per_s", perSecond},
	{"wal_fpi", "wal_fpi_per_s", perSecond},
	{"wal_buffers_full", "wal_buffers_full", perInterval},
	{"wal_write", "wal_write_per_s", perSecond},
	{"wal_sync", "wal_sync_per_s", perSecond},
	{"wal_write_time", "wal_write_time_ms", perInterval},
	{"wal_sync_time", "wal_sync_time_ms", perInterval},
	{"checkpoints_timed", "checkpoints_timed", perInterval},
	{"checkpoints_req", "checkpoints_req", perInterval},
	{"buffers_checkpoint", "buffers_checkpoint", perInterval},
	{"checkpoint_write_time", "checkpoint_write_time_ms", perInterval},
	{"checkpoint_sync_time", "checkpoint_sync_time_ms", perInterval},
	{"buffers_clean", "buffers_clean", perInterval},
	{"maxwritten_clean", "maxwritten_clean", perInterval},
	{"buffers_backend", "buffers_backend", perInterval},
	{"buffers_backend_fsync", "buffers_backend_fsync", perInterval},
}

func (*wal) Name() string { return walName }

// Note says what this server version does not count.
func (smp *wal) Note() string {
	switch {
	case smp.session.version < 140000:
		return "PostgreSQL 13 has no pg_stat_wal: only wal_bytes_per_s (from the WAL insert position) and checkpoints"
	case smp.session.version >= 170000:
		return "PostgreSQL 17 moved backend writes and fsyncs to pg_stat_io: no buffers_backend, buffers_backend_fsync"
	}
	return ""
}

func (smp *wal) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(walName, walSQL)
	if err != nil {
		return nil, nil, err
	}
	rows, err := smp.session.queryFloats(ctx, "read "+walName, sql)
	if err != nil {
		return nil, nil, err
	}
	reading, err := singleRow(rows, "read "+walName)
	if err != nil {
		return nil, nil, err
	}
	iv := smp.counters.Next(time.Now(), reading)
	values := map[string]float64{}
	emitSeries(values, walSeries, "", reading, iv)
	return values, nil, nil
}
