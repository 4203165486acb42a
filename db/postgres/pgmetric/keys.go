package pgmetric

import "strings"

// Key is one value key of a source, with its unit and what it means: the
// table readers (the report's axes, a threshold's message, the samplers'
// conformance test) look units up in.
type Key struct {
	Source string
	// Key is the value key; "<…>" marks a part that varies: <type>:<event>
	// a wait event, <state> a session state, <name> an application_name,
	// <locktype> a lock type, <N> an SLRU cache, <T> a table as
	// <schema>.<table>.
	Key  string
	Unit string // "sessions", "xids", "0..1", "blocks/s" …
	Doc  string
}

// Keys lists every value key the PostgreSQL sources record. The samplers'
// conformance test holds it, sampler/README.md and the samplers' doc
// comments to the same list.
var Keys = []Key{
	{Activity, "aas", "sessions", "active now (state active or fastpath function call), client backends and autovacuum workers"},
	{Activity, "wait.<type>:<event>", "sessions", "active sessions (as aas) per wait_event_type:wait_event, e.g. \"wait.Lock:transactionid\""},
	{Activity, "wait.CPU", "sessions", "active sessions (as aas) with no wait event: on CPU, or in a wait PostgreSQL does not report"},
	{Activity, "state.<state>", "sessions", "client backends per state, e.g. \"state.idle in transaction\""},
	{Activity, "app.<name>.sessions", "sessions", "client backends per application_name (\"(none)\" when empty; beyond 50 names, the rest as \"(other)\")"},
	{Activity, "app.<name>.active", "sessions", "active client backends per application_name"},
	{Activity, "connections", "sessions", "client backends"},
	{Activity, "connections_total", "sessions", "client backends including the samplers': each takes a max_connections slot"},
	{Activity, "autovacuum_workers", "sessions", "autovacuum workers running"},
	{Activity, "oldest_xact_age_s", "s", "age of the oldest open transaction of a client backend (0 when none)"},
	{Activity, "oldest_idle_in_xact_s", "s", "longest time a client backend has been idle in transaction (0 when none)"},
	{Activity, "oldest_backend_xmin_age", "xids", "largest age(backend_xmin) of any backend (0 when none)"},
	{XminHorizon, "age", "xids", "the oldest of backend_age, prepared_age and slot_age"},
	{XminHorizon, "backend_age", "xids", "oldest backend_xmin or backend_xid of a session (autovacuum workers and samplers left out)"},
	{XminHorizon, "prepared_age", "xids", "oldest prepared transaction (pg_prepared_xacts)"},
	{XminHorizon, "slot_age", "xids", "oldest xmin or catalog_xmin of a replication slot"},
	{Locks, "blocked", "sessions", "sessions waiting for a heavyweight lock (wait_event_type Lock)"},
	{Locks, "blocking_pairs", "pairs", "(waiting session, session it waits for) pairs from pg_blocking_pids"},
	{Locks, "blockers", "sessions", "distinct sessions that others wait for (0 stands for prepared transactions)"},
	{Locks, "root_blockers", "sessions", "blockers that do not wait for a lock themselves: the heads of the chains"},
	{Locks, "max_wait_s", "s", "longest current lock wait (0 when none)"},
	{Locks, "lock_waits.<locktype>", "sessions", "waiting sessions per lock type, e.g. \"lock_waits.transactionid\", \"lock_waits.relation\""},
	{Database, "xact_commit_per_s", "1/s", "transactions committed"},
	{Database, "xact_rollback_per_s", "1/s", "transactions rolled back"},
	{Database, "blks_hit_per_s", "blocks/s", "shared buffer hits"},
	{Database, "blks_read_per_s", "blocks/s", "blocks read from the OS (page cache or disk)"},
	{Database, "cache_hit_rate", "0..1", "blks_hit/(blks_hit+blks_read) in the interval; omitted without access"},
	{Database, "tup_returned_per_s", "rows/s", "rows returned by scans"},
	{Database, "tup_fetched_per_s", "rows/s", "rows fetched by index scans"},
	{Database, "tup_inserted_per_s", "rows/s", "rows inserted"},
	{Database, "tup_updated_per_s", "rows/s", "rows updated"},
	{Database, "tup_deleted_per_s", "rows/s", "rows deleted"},
	{Database, "deadlocks", "count", "deadlocks detected in the interval"},
	{Database, "deadlocks_total", "count", "deadlocks since the statistics reset"},
	{Database, "conflicts", "count", "queries cancelled by recovery conflicts in the interval (standbys)"},
	{Database, "temp_files", "count", "temporary files created in the interval"},
	{Database, "temp_bytes", "bytes", "written to temporary files in the interval"},
	{Database, "blk_read_time_ms", "ms", "time reading blocks in the interval (needs track_io_timing)"},
	{Database, "blk_write_time_ms", "ms", "time writing blocks in the interval (needs track_io_timing)"},
	{Database, "sessions_abandoned", "count", "sessions whose client disconnected without ending them, in the interval (PG14+)"},
	{Database, "sessions_fatal", "count", "sessions ended by a fatal error in the interval (PG14+)"},
	{Database, "sessions_killed", "count", "sessions terminated by an operator in the interval (PG14+)"},
	{Database, "numbackends", "sessions", "backends connected to the database, as PostgreSQL counts them (the sampler's included)"},
	{Database, "max_connections", "sessions", "the setting"},
	{Database, "superuser_reserved_connections", "sessions", "the setting"},
	{Databases, "datfrozenxid_age", "xids", "largest age(datfrozenxid) over all databases"},
	{Databases, "mxid_age", "mxids", "largest mxid_age(datminmxid) over all databases"},
	{Databases, "size_bytes", "bytes", "pg_database_size of the current database"},
	{SLRU, "<N>.hit_rate", "0..1", "blks_hit/(blks_hit+blks_read) in the interval; omitted without access"},
	{SLRU, "<N>.blks_hit_per_s", "blocks/s", "page found in the cache"},
	{SLRU, "<N>.blks_read_per_s", "blocks/s", "page read from disk (a miss)"},
	{SLRU, "<N>.blks_written_per_s", "blocks/s", "page written out"},
	{SLRU, "<N>.blks_zeroed_per_s", "blocks/s", "page zeroed (new page)"},
	{SLRU, "<N>.blks_exists_per_s", "blocks/s", "page existence checks"},
	{SLRU, "<N>.flushes", "count", "flushes of dirty data in the interval (checkpoints)"},
	{SLRU, "<N>.truncates", "count", "truncations in the interval"},
	{UserTables, "<T>.seq_scan", "count", "sequential scans in the interval"},
	{UserTables, "<T>.idx_scan", "count", "index scans in the interval"},
	{UserTables, "<T>.seq_tup_read", "rows", "rows read by sequential scans in the interval"},
	{UserTables, "<T>.idx_tup_fetch", "rows", "rows fetched by index scans in the interval"},
	{UserTables, "<T>.n_tup_ins", "rows", "rows inserted in the interval"},
	{UserTables, "<T>.n_tup_upd", "rows", "rows updated in the interval (HOT included)"},
	{UserTables, "<T>.n_tup_hot_upd", "rows", "rows HOT-updated in the interval"},
	{UserTables, "<T>.n_tup_del", "rows", "rows deleted in the interval"},
	{UserTables, "<T>.vacuum_count", "count", "manual vacuums in the interval"},
	{UserTables, "<T>.autovacuum_count", "count", "autovacuums in the interval"},
	{UserTables, "<T>.autoanalyze_count", "count", "autoanalyzes in the interval"},
	{UserTables, "<T>.n_live_tup", "rows", "estimated live rows now"},
	{UserTables, "<T>.n_dead_tup", "rows", "estimated dead rows now"},
	{UserTables, "<T>.n_mod_since_analyze", "rows", "rows changed since the last analyze"},
	{UserTables, "<T>.last_autovacuum_age_s", "s", "time since the last autovacuum ended; omitted if never"},
	{Statements, "calls_per_s", "1/s", "statement executions"},
	{Statements, "exec_ms_per_s", "ms/s", "execution time: 1000 means one backend busy on average"},
	{Statements, "rows_per_s", "1/s", "rows returned or affected"},
	{Statements, "statements", "count", "distinct statements executed in the interval"},
	{WAL, "wal_bytes_per_s", "bytes/s", "WAL generated (PG13: from the WAL insert position)"},
	{WAL, "wal_records_per_s", "1/s", "WAL records (PG14+)"},
	{WAL, "wal_fpi_per_s", "1/s", "full-page images in WAL (PG14+): high right after checkpoints"},
	{WAL, "wal_buffers_full", "count", "times WAL buffers were full and a backend had to write, in the interval (PG14+)"},
	{WAL, "wal_write_per_s", "1/s", "WAL write calls (PG14+)"},
	{WAL, "wal_sync_per_s", "1/s", "WAL sync calls (PG14+)"},
	{WAL, "wal_write_time_ms", "ms", "time in WAL writes in the interval (PG14+, needs track_wal_io_timing)"},
	{WAL, "wal_sync_time_ms", "ms", "time in WAL syncs in the interval (PG14+, needs track_wal_io_timing)"},
	{WAL, "checkpoints_timed", "count", "checkpoints started by checkpoint_timeout in the interval"},
	{WAL, "checkpoints_req", "count", "checkpoints requested (max_wal_size, CHECKPOINT, shutdown) in the interval"},
	{WAL, "buffers_checkpoint", "buffers", "written by checkpoints in the interval"},
	{WAL, "checkpoint_write_time_ms", "ms", "checkpoints spent writing, in the interval"},
	{WAL, "checkpoint_sync_time_ms", "ms", "checkpoints spent syncing, in the interval"},
	{WAL, "buffers_clean", "buffers", "written by the background writer in the interval"},
	{WAL, "maxwritten_clean", "count", "background writer rounds stopped at bgwriter_lru_maxpages, in the interval"},
	{WAL, "buffers_backend", "buffers", "written by backends themselves in the interval (PG13\u201316)"},
	{WAL, "buffers_backend_fsync", "count", "fsyncs backends had to do themselves in the interval (PG13\u201316)"},
	{Explain, ExplainStatements, "count", "statements whose plan was asked for"},
	{Explain, ExplainPlans, "count", "plans obtained"},
	{Explain, ExplainSeqScans, "count", "sequential scans in those plans"},
	{ForeignKeys, ForeignKeysRead, "count", "foreign keys of the user's tables (each insert or key update of the referencing table locks the referenced row FOR KEY SHARE)"},
	{Functions, FunctionsRead, "count", "SQL and PL/pgSQL functions the scripts call, directly or through each other, whose bodies were read"},
}

// Unit is the unit of source's key, matching Keys' <…> placeholders; ""
// when the key is unknown.
func Unit(source, key string) string {
	for _, k := range Keys {
		if k.Source == source && MatchKey(k.Key, key) {
			return k.Unit
		}
	}
	return ""
}

// MatchKey reports whether key is an instance of pattern, a Keys entry in
// which each "<…>" stands for any non-empty text.
func MatchKey(pattern, key string) bool {
	for {
		open := strings.IndexByte(pattern, '<')
		if open < 0 {
			return pattern == key
		}
		if len(key) < open || key[:open] != pattern[:open] {
			return false
		}
		closeAt := strings.IndexByte(pattern[open:], '>')
		if closeAt < 0 {
			return pattern == key
		}
		rest := pattern[open+closeAt+1:]
		key = key[open:]
		// The placeholder takes at least one byte; try every split.
		for i := 1; i <= len(key); i++ {
			if MatchKey(rest, key[i:]) {
				return true
			}
		}
		return false
	}
}

// PlaceholderLabels names, for exporters, what the abbreviated
// placeholders of Keys stand for: <N> an SLRU cache, <T> a table.
func PlaceholderLabels() map[string]string { return map[string]string{"N": "cache", "T": "table"} }
