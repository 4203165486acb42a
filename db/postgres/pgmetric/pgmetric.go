// Package pgmetric names everything PostgreSQL's samplers record: the
// timeline sources, their value keys and units, and the layouts of their
// details. It is the one owner of those names: the samplers write them,
// and the rules, thresholds, drills' expectations, compare and the report
// read them through this package instead of spelling strings, so a key
// cannot drift between the writer and its readers.
//
// It is a leaf: it imports nothing of firedrill's but timeline, and no
// database driver, so anything may import it.
package pgmetric

// The PostgreSQL sources: timeline.Sample.Source of what the samplers and
// the end-of-run evidence record.
const (
	Activity    = "pg_stat_activity"    // sessions, waits, oldest transactions; detail []ActivitySession
	XminHorizon = "xmin_horizon"        // what holds the xmin horizon back; detail XminHolder
	Locks       = "locks"               // heavyweight lock waits; detail []BlockingPair
	Database    = "pg_stat_database"    // the database's counters
	Databases   = "pg_database"         // wraparound ages; detail DatabaseAges
	SLRU        = "pg_stat_slru"        // the SLRU caches, keys per cache (SLRUCaches)
	UserTables  = "pg_stat_user_tables" // per-table counters, keys per table (TableKey)
	Statements  = "pg_stat_statements"  // statement totals; detail []Statement
	WAL         = "wal"                 // WAL, checkpoints and the background writer
	Explain     = "explain"             // plans captured at the end of a run; detail []ExplainedStatement
	Settings    = "pg_settings"         // the server's settings when they change; detail name → setting
	Functions   = "pg_proc"             // bodies of the functions the scripts call, read at the end of a run; detail []Function
	ForeignKeys = "foreign_keys"        // the database's foreign keys, read at the end of a run; detail []ForeignKey
)

// Sources lists every PostgreSQL source, for checks that a name is known.
var Sources = []string{Activity, XminHorizon, Locks, Database, Databases, SLRU, UserTables, Statements, WAL, Explain, Settings, Functions, ForeignKeys}

// Evidence lists the sources read once, after the load (Evidenced):
// their samples lie past the run's timeline, and say nothing of when.
var Evidence = []string{Explain, Functions, ForeignKeys}

// Series is how findings and reports name one sampled series: "source:key".
func Series(source, key string) string { return source + ":" + key }

// Value keys of Activity.
const (
	AAS                  = "aas"                     // sessions active now
	WaitPrefix           = "wait."                   // wait.<type>:<event>: active sessions per wait event
	WaitCPU              = WaitPrefix + "CPU"        // active sessions without a wait event
	StatePrefix          = "state."                  // state.<state>: client backends per state
	AppPrefix            = "app."                    // app.<name>.sessions, app.<name>.active
	Connections          = "connections"             // client backends
	ConnectionsTotal     = "connections_total"       // client backends including the samplers'
	AutovacuumWorkers    = "autovacuum_workers"      // autovacuum workers running
	OldestXactAgeS       = "oldest_xact_age_s"       // age of the oldest open transaction, s
	OldestIdleInXactS    = "oldest_idle_in_xact_s"   // longest idle in transaction, s
	OldestBackendXminAge = "oldest_backend_xmin_age" // largest age(backend_xmin), xids
)

// Wait is Activity's key of the active sessions waiting on event, given as
// "<wait_event_type>:<wait_event>" (e.g. "Lock:transactionid").
func Wait(event string) string { return WaitPrefix + event }

// State is Activity's key of the client backends in state (e.g. "idle in
// transaction").
func State(state string) string { return StatePrefix + state }

// AppSessions is Activity's key of the client backends of one
// application_name.
func AppSessions(app string) string { return AppPrefix + app + ".sessions" }

// AppActive is Activity's key of the active client backends of one
// application_name.
func AppActive(app string) string { return AppPrefix + app + ".active" }

// Value keys of XminHorizon, in xids.
const (
	HorizonAge         = "age"          // the oldest of the three below
	HorizonBackendAge  = "backend_age"  // a session's backend_xmin or backend_xid
	HorizonPreparedAge = "prepared_age" // a prepared transaction
	HorizonSlotAge     = "slot_age"     // a replication slot
)

// Value keys of Locks.
const (
	LocksBlocked       = "blocked"        // sessions waiting for a heavyweight lock
	LocksBlockingPairs = "blocking_pairs" // (waiting, waited-for) pairs
	LocksBlockers      = "blockers"       // distinct sessions others wait for
	LocksRootBlockers  = "root_blockers"  // blockers not waiting themselves
	LocksMaxWaitS      = "max_wait_s"     // longest current lock wait, s
	LockWaitsPrefix    = "lock_waits."    // lock_waits.<locktype>
)

// LockWaits is Locks' key of the sessions waiting for a lock of locktype
// (as pg_locks.locktype: "transactionid", "relation" …).
func LockWaits(locktype string) string { return LockWaitsPrefix + locktype }

// Value keys of Database (the ones read outside the sampler; Keys lists all).
const (
	XactCommitPerS               = "xact_commit_per_s"
	XactRollbackPerS             = "xact_rollback_per_s"
	CacheHitRate                 = "cache_hit_rate"
	Deadlocks                    = "deadlocks"       // in the interval
	DeadlocksTotal               = "deadlocks_total" // since the statistics reset
	TempFiles                    = "temp_files"
	TempBytes                    = "temp_bytes"
	NumBackends                  = "numbackends"
	MaxConnections               = "max_connections"
	SuperuserReservedConnections = "superuser_reserved_connections"
)

// Value keys of WAL read outside the sampler.
const (
	WALSyncPerS       = "wal_sync_per_s"
	WALSyncTimeMS     = "wal_sync_time_ms"
	WALBytesPerS      = "wal_bytes_per_s"
	WALFPIPerS        = "wal_fpi_per_s"
	CheckpointsReq    = "checkpoints_req"
	CheckpointsTimed  = "checkpoints_timed"
	BuffersCheckpoint = "buffers_checkpoint"
)

// Value keys of Explain.
const (
	ExplainStatements = "statements" // statements whose plan was asked for
	ExplainPlans      = "plans"      // plans obtained
	ExplainSeqScans   = "seq_scans"  // sequential scans in those plans
)

// Value keys of Functions.
const (
	FunctionsRead = "functions" // functions whose bodies were read
)

// Value keys of ForeignKeys.
const (
	ForeignKeysRead = "foreign_keys" // foreign keys read
)

// The SLRU caches, by the names PostgreSQL 13–16 give them (the sampler
// maps PostgreSQL 17's lower-case names to these).
const (
	MultiXactMember = "MultiXactMember"
	MultiXactOffset = "MultiXactOffset"
	Subtrans        = "Subtrans"
	Xact            = "Xact"
	CommitTs        = "CommitTs"
	Notify          = "Notify"
	Serial          = "Serial"
	SLRUOther       = "other"
)

// SLRUCaches lists every SLRU cache name, in PostgreSQL's order.
var SLRUCaches = []string{MultiXactMember, MultiXactOffset, Subtrans, Xact, CommitTs, Notify, Serial, SLRUOther}

// SLRUKey is SLRU's key of one cache's field (e.g. "hit_rate",
// "blks_read_per_s").
func SLRUKey(cache, field string) string { return cache + "." + field }

// SLRUFieldHitRate is the field of SLRUHitRate's keys.
const SLRUFieldHitRate = "hit_rate"

// SLRUHitRate is SLRU's key of a cache's hit rate in the interval (0..1).
func SLRUHitRate(cache string) string { return SLRUKey(cache, SLRUFieldHitRate) }

// SLRUHitsPerS is SLRU's key of a cache's pages found per second.
func SLRUHitsPerS(cache string) string { return SLRUKey(cache, "blks_hit_per_s") }

// SLRUReadsPerS is SLRU's key of a cache's pages read (misses) per second.
func SLRUReadsPerS(cache string) string { return SLRUKey(cache, "blks_read_per_s") }

// Fields of UserTables' per-table keys.
const (
	TableSeqScan         = "seq_scan"
	TableIdxScan         = "idx_scan"
	TableSeqTupRead      = "seq_tup_read"
	TableNLiveTup        = "n_live_tup"
	TableNDeadTup        = "n_dead_tup"
	TableAutovacuumCount = "autovacuum_count"
)

// TableKey is UserTables' key of a table's field; table is
// "<schema>.<table>".
func TableKey(table, field string) string { return table + "." + field }

// SLRUNames17 maps PostgreSQL 17's SLRU cache names to the earlier ones
// that keys and thresholds use.
var SLRUNames17 = map[string]string{
	"commit_timestamp": CommitTs,
	"multixact_member": MultiXactMember,
	"multixact_offset": MultiXactOffset,
	"notify":           Notify,
	"serializable":     Serial,
	"subtransaction":   Subtrans,
	"transaction":      Xact,
}
