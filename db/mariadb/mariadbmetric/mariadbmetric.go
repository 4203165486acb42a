// Package mariadbmetric names everything MariaDB's samplers record: the
// timeline sources, their value keys and units, and the layouts of their
// details. It is the one owner of those names: db/mariadb/sampler writes them,
// and the rules, drills' expectations and reports read them through this
// package instead of spelling strings.
//
// It is a leaf: it imports nothing of firedrill's and no database driver,
// so anything may import it.
package mariadbmetric

// The MariaDB sources: timeline.Sample.Source of what the samplers record.
const (
	Processlist  = "mariadb_processlist"   // sessions by state, oldest transactions; detail []Session
	InnoDBLocks  = "mariadb_innodb_locks"  // InnoDB lock waits; detail []BlockingPair
	GlobalStatus = "mariadb_global_status" // SHOW GLOBAL STATUS counters as rates
	InnoDBStatus = "mariadb_innodb_status" // SHOW ENGINE INNODB STATUS: deadlocks, AUTO-INC waits; detail InnoDBStatusDetail
	Settings     = "mariadb_variables"     // the server's variables when they change; detail name → value
)

// Sources lists every MariaDB source, for checks that a name is known.
var Sources = []string{Processlist, InnoDBLocks, GlobalStatus, InnoDBStatus, Settings}

// Series is how findings and reports name one sampled series: "source:key".
func Series(source, key string) string { return source + ":" + key }

// Value keys of Processlist.
const (
	Connections         = "connections"          // client sessions, samplers left out
	ConnectionsTotal    = "connections_total"    // every session, samplers included: each takes a max_connections slot
	Active              = "active"               // sessions running a command (not Sleep)
	StatePrefix         = "state."               // state.<state>: active sessions per state
	IdleInTrx           = "idle_in_trx"          // sleeping sessions with an open transaction
	OldestTrxAgeS       = "oldest_trx_age_s"     // age of the oldest open transaction, s
	OldestIdleInTrxS    = "oldest_idle_in_trx_s" // longest time a session with an open transaction has slept, s
	LongestQueryS       = "longest_query_s"      // longest running statement, s
	StateQueryCacheLock = "Waiting for query cache lock"
	StateTableLock      = "Waiting for table level lock"
)

// State is Processlist's key of the active sessions in state (as
// information_schema.PROCESSLIST shows it: "Sending data", "Waiting for
// query cache lock", "Update" …; "(none)" when empty).
func State(state string) string { return StatePrefix + state }

// QueryCacheStates are the processlist states of sessions queued on, or
// holding, the query cache's global lock.
var QueryCacheStates = []string{
	StateQueryCacheLock,
	"Waiting on query cache mutex",
	"checking query cache for query",
	"Checking query cache for query",
	"invalidating query cache entries (table)",
	"invalidating query cache entries (table list)",
	"storing result in query cache",
}

// CommitStates are the processlist states of sessions committing: on
// MariaDB 10.11 a session waiting for InnoDB's redo-log flush at commit
// shows "Updating status" most of the time and "Commit" the rest
// (measured on the embedded server with every fsync slowed: both vanish
// with innodb_flush_log_at_trx_commit = 2), and "Commit" throughout with
// the binary log on; MySQL 8 shows "waiting for handler commit".
var CommitStates = []string{"Commit", "Updating status", "waiting for handler commit", "Waiting for handler commit"}

// Value keys of InnoDBLocks.
const (
	LocksBlocked       = "blocked"        // transactions waiting for an InnoDB lock
	LocksBlockingPairs = "blocking_pairs" // (waiting, blocking) transaction pairs
	LocksBlockers      = "blockers"       // distinct transactions others wait for
	LocksRootBlockers  = "root_blockers"  // blockers not waiting themselves
	LocksMaxWaitS      = "max_wait_s"     // longest current lock wait, s
	LockWaitsPrefix    = "lock_waits."    // lock_waits.<kind>
	Transactions       = "transactions"   // open InnoDB transactions (samplers left out)
)

// The kinds of lock a transaction waits for, as LockWaits names them.
const (
	LockAutoInc   = "auto_inc"         // the table's AUTO-INC lock
	LockTable     = "table"            // another table lock (IS, IX, S, X)
	LockRecord    = "record"           // a record lock without its gap ("rec but not gap")
	LockNextKey   = "next_key"         // a record and the gap before it (REPEATABLE READ scans)
	LockGap       = "gap"              // only a gap ("gap before rec", the supremum)
	LockInsertInt = "insert_intention" // an insert waiting for a gap another transaction locked
)

// LockKinds lists them in the order reports show them.
var LockKinds = []string{LockAutoInc, LockTable, LockRecord, LockNextKey, LockGap, LockInsertInt}

// LockWaits is InnoDBLocks' key of the transactions waiting for a lock of
// kind (LockAutoInc …).
func LockWaits(kind string) string { return LockWaitsPrefix + kind }

// Value keys of GlobalStatus read outside the sampler (Keys lists all).
const (
	RowLockWaitsPerS     = "innodb_row_lock_waits_per_s"
	RowLockTimeMS        = "innodb_row_lock_time_ms"
	RowLockCurrentWaits  = "innodb_row_lock_current_waits"
	Deadlocks            = "innodb_deadlocks"
	DeadlocksTotal       = "innodb_deadlocks_total"
	QcacheHitsPerS       = "qcache_hits_per_s"
	QcacheInsertsPerS    = "qcache_inserts_per_s"
	QcacheNotCachedPerS  = "qcache_not_cached_per_s"
	QcacheInvalidPerS    = "qcache_invalidations_per_s"
	QcacheLowmemPerS     = "qcache_lowmem_prunes_per_s"
	QcacheQueries        = "qcache_queries_in_cache"
	ThreadsRunning       = "threads_running"
	ThreadsConnected     = "threads_connected"
	MaxUsedConnections   = "max_used_connections"
	MaxConnections       = "max_connections"
	ConnErrorsMaxConn    = "connection_errors_max_connections"
	AbortedConnects      = "aborted_connects"
	LogWaits             = "innodb_log_waits"
	LogWritesPerS        = "innodb_log_writes_per_s"
	OSLogFsyncsPerS      = "innodb_os_log_fsyncs_per_s"
	OSLogWrittenPerS     = "innodb_os_log_written_per_s"
	DataFsyncsPerS       = "innodb_data_fsyncs_per_s"
	QuestionsPerS        = "questions_per_s"
	ComPrefix            = "com."     // com.<command>_per_s
	HandlerPrefix        = "handler." // handler.<name>_per_s
	ComCommitPerS        = "com.commit_per_s"
	ComInsertPerS        = "com.insert_per_s"
	ComInsertSelectPerS  = "com.insert_select_per_s"
	ComSelectPerS        = "com.select_per_s"
	ComUpdatePerS        = "com.update_per_s"
	HandlerCommitPerS    = "handler.commit_per_s"
	HandlerWritePerS     = "handler.write_per_s"
	HandlerReadRndNPerS  = "handler.read_rnd_next_per_s"
	InnoDBBufferPoolRead = "innodb_buffer_pool_reads_per_s"
)

// Value keys of GlobalStatus for commits: the redo log's requests and
// pending syncs, and the binary log's group commit.
const (
	LogWriteRequestsPerS     = "innodb_log_write_requests_per_s"
	DataPendingFsyncs        = "innodb_data_pending_fsyncs"
	BinlogCommitsPerS        = "binlog_commits_per_s"
	BinlogGroupsPerS         = "binlog_group_commits_per_s"
	BinlogGroupByCountPerS   = "binlog_group_commit_trigger_count_per_s"
	BinlogGroupByTimeoutPerS = "binlog_group_commit_trigger_timeout_per_s"
)

// Com is GlobalStatus' key of one Com_<command> counter per second
// ("insert_select" → "com.insert_select_per_s").
func Com(command string) string { return ComPrefix + command + "_per_s" }

// Handler is GlobalStatus' key of one Handler_<name> counter per second.
func Handler(name string) string { return HandlerPrefix + name + "_per_s" }

// Value keys of InnoDBStatus.
const (
	StatusDeadlockNew    = "deadlock_new"         // 1 when the latest detected deadlock changed since the previous reading
	StatusAutoIncWaiting = "autoinc_waiting"      // transactions listed "lock mode AUTO-INC waiting"
	StatusLockWaiting    = "lock_waiting"         // transactions listed in LOCK WAIT
	StatusHistoryLength  = "history_list_length"  // undo log records not yet purged
	StatusCheckpointAge  = "checkpoint_age_bytes" // LSN minus the last checkpoint
	StatusLogUnflushed   = "log_unflushed_bytes"  // LSN minus "flushed up to"
)

// Key is one value key of a source, with its unit and what it means.
type Key struct {
	Source string
	// Key is the value key; "<…>" marks a part that varies: <state> a
	// process list state, <kind> a kind of lock (LockKinds), <command> a
	// Com_ counter, <name> a Handler_ counter.
	Key  string
	Unit string
	Doc  string
}

// Keys lists every value key the MariaDB sources record. The samplers'
// conformance test holds it, sampler/README.md and the samplers' doc
// comments to the same list.
var Keys = []Key{
	{Processlist, "connections", "sessions", "client sessions"},
	{Processlist, "active", "sessions", "sessions running a command (not Sleep)"},
	{Processlist, "state.<state>", "sessions", "active sessions per state, e.g. \"state.Waiting for query cache lock\", \"state.Sending data\" (\"(none)\" when empty)"},
	{Processlist, "idle_in_trx", "sessions", "sleeping sessions with an open InnoDB transaction"},
	{Processlist, "oldest_trx_age_s", "s", "age of the oldest open InnoDB transaction (0 when none)"},
	{Processlist, "oldest_idle_in_trx_s", "s", "longest sleep of a session with an open transaction (0 when none)"},
	{Processlist, "longest_query_s", "s", "longest running statement (0 when none)"},
	{InnoDBLocks, "blocked", "sessions", "transactions waiting for an InnoDB lock"},
	{InnoDBLocks, "blocking_pairs", "pairs", "(waiting transaction, transaction it waits for) pairs"},
	{InnoDBLocks, "blockers", "sessions", "distinct transactions that others wait for"},
	{InnoDBLocks, "root_blockers", "sessions", "blockers that do not wait for a lock themselves: the heads of the chains"},
	{InnoDBLocks, "max_wait_s", "s", "longest current lock wait (0 when none)"},
	{InnoDBLocks, "lock_waits.<kind>", "sessions", "waiting transactions per kind of lock: auto_inc (the table's AUTO-INC lock), table (another table lock), record (a row, or a row and the gap before it), gap (a gap only, or the supremum)"},
	{InnoDBLocks, "transactions", "count", "open InnoDB transactions"},
	{GlobalStatus, "innodb_row_lock_waits_per_s", "1/s", "row lock waits begun (Innodb_row_lock_waits)"},
	{GlobalStatus, "innodb_row_lock_time_ms", "ms", "time spent waiting for row locks, in the interval (Innodb_row_lock_time)"},
	{GlobalStatus, "innodb_row_lock_current_waits", "sessions", "row lock waits now (Innodb_row_lock_current_waits)"},
	{GlobalStatus, "innodb_deadlocks", "count", "deadlocks detected in the interval (Innodb_deadlocks)"},
	{GlobalStatus, "innodb_deadlocks_total", "count", "deadlocks since the server started"},
	{GlobalStatus, "qcache_hits_per_s", "1/s", "queries answered from the query cache"},
	{GlobalStatus, "qcache_inserts_per_s", "1/s", "results stored in the query cache"},
	{GlobalStatus, "qcache_not_cached_per_s", "1/s", "queries the query cache could not keep"},
	{GlobalStatus, "qcache_lowmem_prunes_per_s", "1/s", "results dropped to make room"},
	{GlobalStatus, "qcache_invalidations_per_s", "1/s", "results dropped because a table they read changed: inserts minus growth minus prunes"},
	{GlobalStatus, "qcache_queries_in_cache", "count", "results in the query cache now"},
	{GlobalStatus, "threads_running", "sessions", "threads executing a statement now (the samplers' included)"},
	{GlobalStatus, "threads_connected", "sessions", "open connections now, every session included: each takes a max_connections slot"},
	{GlobalStatus, "max_used_connections", "sessions", "most connections open at once since the server started"},
	{GlobalStatus, "max_connections", "sessions", "the setting"},
	{GlobalStatus, "connection_errors_max_connections", "count", "connections refused for max_connections in the interval"},
	{GlobalStatus, "aborted_connects", "count", "failed connection attempts in the interval"},
	{GlobalStatus, "innodb_log_waits", "count", "times a transaction waited for room in the log buffer, in the interval"},
	{GlobalStatus, "innodb_log_writes_per_s", "1/s", "writes to the redo log"},
	{GlobalStatus, "innodb_os_log_fsyncs_per_s", "1/s", "fsyncs of the redo log (absent on MariaDB 10.11: innodb_data_fsyncs_per_s counts them)"},
	{GlobalStatus, "innodb_os_log_written_per_s", "bytes/s", "written to the redo log"},
	{GlobalStatus, "innodb_data_fsyncs_per_s", "1/s", "fsyncs of InnoDB's files (redo log included)"},
	{GlobalStatus, "innodb_log_write_requests_per_s", "1/s", "log records written to the log buffer (Innodb_log_write_requests)"},
	{GlobalStatus, "innodb_data_pending_fsyncs", "count", "InnoDB fsyncs in flight now (Innodb_data_pending_fsyncs; MariaDB 10.11 leaves the redo log's out: 0 throughout a run whose every fsync was slowed)"},
	{GlobalStatus, "binlog_commits_per_s", "1/s", "transactions written to the binary log (Binlog_commits; 0 with log_bin off)"},
	{GlobalStatus, "binlog_group_commits_per_s", "1/s", "binary log group commits, each one write and, with sync_binlog = 1, one sync (Binlog_group_commits)"},
	{GlobalStatus, "binlog_group_commit_trigger_count_per_s", "1/s", "group commits that left because binlog_commit_wait_count transactions had joined"},
	{GlobalStatus, "binlog_group_commit_trigger_timeout_per_s", "1/s", "group commits that left because binlog_commit_wait_usec ran out"},
	{GlobalStatus, "innodb_buffer_pool_reads_per_s", "1/s", "pages read from disk: not in the buffer pool"},
	{GlobalStatus, "questions_per_s", "1/s", "statements sent by clients"},
	{GlobalStatus, "com.<command>_per_s", "1/s", "statements per Com_<command> counter, e.g. \"com.insert_select_per_s\" (select, insert, insert_select, update, delete, commit, rollback always; the others when they moved)"},
	{GlobalStatus, "handler.<name>_per_s", "1/s", "storage engine row operations per Handler_<name> counter, e.g. \"handler.read_rnd_next_per_s\", \"handler.write_per_s\""},
	{InnoDBStatus, "deadlock_new", "count", "1 when the latest detected deadlock is not the one of the previous reading (a deadlock or more in the interval), else 0"},
	{InnoDBStatus, "autoinc_waiting", "count", "transactions the monitor lists waiting for \"lock mode AUTO-INC\""},
	{InnoDBStatus, "lock_waiting", "count", "transactions the monitor lists waiting for any lock (it lists a limited number)"},
	{InnoDBStatus, "history_list_length", "count", "undo log records not yet purged"},
	{InnoDBStatus, "checkpoint_age_bytes", "bytes", "log sequence number minus the last checkpoint"},
	{InnoDBStatus, "log_unflushed_bytes", "bytes", "log sequence number minus what is flushed to disk"},
}
