// Package redismetric names everything Redis's samplers record: the
// timeline sources, their value keys and units, and the layouts of their
// details. It is the one owner of those names: db/redis/sampler writes them,
// and the rules, thresholds, drills' expectations and reports read them
// through this package instead of spelling strings.
//
// It is a leaf: it imports nothing of firedrill's and no database driver,
// so anything may import it.
package redismetric

import "strings"

// The Redis sources: timeline.Sample.Source of what the samplers record.
const (
	Info         = "redis_info"         // INFO persistence, stats, clients, memory
	Latency      = "redis_latency"      // LATENCY LATEST/HISTORY: the latency monitor's events; detail []LatencyEvent
	Slowlog      = "redis_slowlog"      // SLOWLOG: commands over slowlog-log-slower-than; detail []SlowlogEntry
	CommandStats = "redis_commandstats" // INFO commandstats, keys per command
)

// Sources lists every Redis source (Config, the settings snapshot, is in
// config.go), for checks that a name is known.
var Sources = []string{Info, Latency, Slowlog, CommandStats, Config}

// Series is how findings and reports name one sampled series: "source:key".
func Series(source, key string) string { return source + ":" + key }

// Value keys of Info.
const (
	AOFEnabled            = "aof_enabled"             // 1 with appendonly yes
	AOFDelayedFsync       = "aof_delayed_fsync"       // AOF writes made without waiting for a late fsync, in the interval
	AOFDelayedFsyncTotal  = "aof_delayed_fsync_total" // the same since the server started
	AOFPendingBioFsync    = "aof_pending_bio_fsync"   // fsyncs queued in the background thread now
	AOFLastWriteOK        = "aof_last_write_ok"       // 1 when the last AOF write succeeded (aof_last_write_status ok)
	AOFRewriteInProgress  = "aof_rewrite_in_progress" // 1 during an AOF rewrite
	RDBBgsaveInProgress   = "rdb_bgsave_in_progress"  // 1 during a background RDB save
	OpsPerS               = "ops_per_s"               // commands processed per second over the interval
	InstantaneousOpsPerS  = "instantaneous_ops_per_sec"
	InstantaneousInKbps   = "instantaneous_input_kbps"
	InstantaneousOutKbps  = "instantaneous_output_kbps"
	LatestForkUsec        = "latest_fork_usec"     // how long the last fork took
	Forks                 = "forks"                // forks in the interval
	EvictedKeys           = "evicted_keys"         // keys evicted for maxmemory in the interval
	ExpiredKeys           = "expired_keys"         // keys expired in the interval
	RejectedConnections   = "rejected_connections" // connections refused for maxclients in the interval
	RejectedConnsTotal    = "rejected_connections_total"
	ConnectedClients      = "connected_clients"       // client connections now (the sampler's included)
	BlockedClients        = "blocked_clients"         // clients in a blocking command (BLPOP …) now
	MaxClients            = "maxclients"              // the setting
	UsedMemoryBytes       = "used_memory_bytes"       // memory Redis allocated
	MaxMemoryBytes        = "maxmemory_bytes"         // the setting (0: no limit)
	MemFragmentationRatio = "mem_fragmentation_ratio" // RSS / used memory
	CPUCores              = "cpu_cores"               // the server's CPU over the interval (used_cpu_sys + used_cpu_user), in cores
)

// Value keys of Latency: per latency-monitor event (<event> is Redis's
// name: aof-write-pending-fsync, aof-fsync-always, fork, expire-cycle,
// command, fast-command …).
const (
	LatencyMaxSuffix   = ".max_ms" // <event>.max_ms: the longest occurrence recorded in the interval
	LatencyCountSuffix = ".count"  // <event>.count: seconds with an occurrence in the interval
)

// The latency monitor's events the rules read.
const (
	EventAOFWritePendingFsync = "aof-write-pending-fsync" // the main thread's AOF write, made while an fsync was in flight
	EventAOFFsyncAlways       = "aof-fsync-always"        // the fsync of appendfsync always
	EventAOFWriteActiveChild  = "aof-write-active-child"  // an AOF write while a child process saves
	EventFork                 = "fork"                    // fork() of BGSAVE or BGREWRITEAOF
	EventExpireCycle          = "expire-cycle"            // the active expiry cycle
	EventCommand              = "command"                 // a slow command
	EventFastCommand          = "fast-command"            // an O(1) or O(log N) command that was slow
)

// LatencyMax is Latency's key of the longest occurrence of event in the interval, ms.
func LatencyMax(event string) string { return event + LatencyMaxSuffix }

// LatencyCount is Latency's key of the seconds with an occurrence of event in the interval.
func LatencyCount(event string) string { return event + LatencyCountSuffix }

// Value keys of Slowlog.
const (
	SlowlogLength     = "length"      // entries in the slow log now
	SlowlogNewEntries = "new_entries" // entries added in the interval
	SlowlogNewMaxMS   = "new_max_ms"  // the slowest of them, ms
)

// Value keys of CommandStats: per command (<cmd> as INFO commandstats
// names it, e.g. "set", "client|kill").
const (
	CmdCallsSuffix       = ".calls_per_s"   // <cmd>.calls_per_s
	CmdUsecPerCallSuffix = ".usec_per_call" // <cmd>.usec_per_call: mean run time of the interval's calls
	CmdFailedSuffix      = ".failed_calls"  // <cmd>.failed_calls in the interval
	CmdRejectedSuffix    = ".rejected_calls"
	CallsPerS            = "calls_per_s" // every command's calls per second
)

// CmdCalls is CommandStats's key of cmd's calls per second.
func CmdCalls(cmd string) string { return cmd + CmdCallsSuffix }

// CmdUsecPerCall is CommandStats's key of cmd's mean run time in the interval, µs.
func CmdUsecPerCall(cmd string) string { return cmd + CmdUsecPerCallSuffix }

// CmdFailed is CommandStats's key of cmd's failed calls in the interval.
func CmdFailed(cmd string) string { return cmd + CmdFailedSuffix }

// CmdRejected is CommandStats's key of cmd's rejected calls in the interval.
func CmdRejected(cmd string) string { return cmd + CmdRejectedSuffix }

// LatencyEvent is one occurrence the latency monitor recorded (a second
// of LATENCY HISTORY), in Latency's detail.
type LatencyEvent struct {
	Event string  `json:"event"`
	Unix  int64   `json:"unix"` // the second it happened, Unix time
	MS    float64 `json:"ms"`   // the longest occurrence in that second
	// AgeS is how long before the reading that second began, by the
	// server's own clock (TIME): the run's clock does not start at the
	// manifest's Started (setup comes between), so an occurrence is
	// placed on the run's clock as the reading's time minus AgeS. 0 in
	// runs recorded before it was.
	AgeS float64 `json:"age_s,omitempty"`
}

// SlowlogEntry is one new slow log entry, in Slowlog's detail.
type SlowlogEntry struct {
	ID         int64    `json:"id"`
	Unix       int64    `json:"unix"`
	DurationUS int64    `json:"duration_us"`
	Args       []string `json:"args"` // the command and its first arguments, each shortened
	Client     string   `json:"client,omitempty"`
	ClientName string   `json:"client_name,omitempty"`
}

// Key is one value key of a source, with its unit and what it means.
type Key struct {
	Source string
	// Key is the value key; "<…>" marks a part that varies: <event> a
	// latency-monitor event, <cmd> a command.
	Key  string
	Unit string
	Doc  string
}

// Keys lists every value key the Redis sources record; sampler/README.md
// and the samplers' doc comments list the same.
var Keys = []Key{
	{Info, AOFEnabled, "0..1", "1 when the AOF is on (appendonly yes)"},
	{Info, AOFDelayedFsync, "count", "AOF writes Redis made without waiting any longer for an fsync still running after 2 s (appendfsync everysec), in the interval: each blocks the server until the fsync ends"},
	{Info, AOFDelayedFsyncTotal, "count", "the same since the server started"},
	{Info, AOFPendingBioFsync, "count", "fsyncs waiting in the background thread now"},
	{Info, AOFLastWriteOK, "0..1", "1 when the last AOF write succeeded (aof_last_write_status:ok), 0 after a failed one"},
	{Info, AOFRewriteInProgress, "0..1", "1 while an AOF rewrite runs"},
	{Info, RDBBgsaveInProgress, "0..1", "1 while a background RDB save runs"},
	{Info, OpsPerS, "1/s", "commands processed over the interval (total_commands_processed)"},
	{Info, InstantaneousOpsPerS, "1/s", "Redis's own estimate of commands per second, over its last 1.6 s"},
	{Info, InstantaneousInKbps, "KB/s", "Redis's own estimate of network input"},
	{Info, InstantaneousOutKbps, "KB/s", "Redis's own estimate of network output"},
	{Info, LatestForkUsec, "µs", "how long the last fork (BGSAVE, BGREWRITEAOF) stopped the server"},
	{Info, Forks, "count", "forks in the interval (total_forks)"},
	{Info, EvictedKeys, "count", "keys evicted to stay under maxmemory, in the interval"},
	{Info, ExpiredKeys, "count", "keys expired in the interval"},
	{Info, RejectedConnections, "count", "connections refused because maxclients was reached, in the interval"},
	{Info, RejectedConnsTotal, "count", "the same since the server started"},
	{Info, ConnectedClients, "clients", "client connections now (the sampler's included)"},
	{Info, BlockedClients, "clients", "clients waiting in a blocking command (BLPOP, WAIT …) now"},
	{Info, MaxClients, "clients", "the maxclients setting"},
	{Info, UsedMemoryBytes, "bytes", "memory Redis allocated (used_memory)"},
	{Info, MaxMemoryBytes, "bytes", "the maxmemory setting (0: no limit)"},
	{Info, MemFragmentationRatio, "ratio", "resident memory over used memory (mem_fragmentation_ratio)"},
	{Info, CPUCores, "cores", "the server's CPU over the interval, all its threads (used_cpu_sys + used_cpu_user): 1 is the main thread's whole core"},
	{Latency, "<event>" + LatencyMaxSuffix, "ms", "the longest occurrence of a latency-monitor event recorded in the interval (LATENCY HISTORY), e.g. \"aof-write-pending-fsync.max_ms\""},
	{Latency, "<event>" + LatencyCountSuffix, "count", "seconds of the interval in which the event occurred (the monitor keeps one record per second)"},
	{Slowlog, SlowlogLength, "count", "entries in the slow log now (SLOWLOG LEN)"},
	{Slowlog, SlowlogNewEntries, "count", "entries added in the interval"},
	{Slowlog, SlowlogNewMaxMS, "ms", "the longest run time of the entries added in the interval; omitted without any"},
	{CommandStats, CallsPerS, "1/s", "calls of every command (the sampler's own left out)"},
	{CommandStats, "<cmd>" + CmdCallsSuffix, "1/s", "calls of one command, e.g. \"set.calls_per_s\" (the sampler's own left out)"},
	{CommandStats, "<cmd>" + CmdUsecPerCallSuffix, "µs", "mean run time of the interval's calls of the command; omitted without calls"},
	{CommandStats, "<cmd>" + CmdFailedSuffix, "count", "calls of the command that failed in the interval"},
	{CommandStats, "<cmd>" + CmdRejectedSuffix, "count", "calls of the command rejected before running (wrong arity, OOM, …) in the interval"},
}

// Unit is the unit of a source's value key ("" when unknown).
func Unit(source, key string) string {
	for _, k := range Keys {
		if k.Source == source && MatchKey(k.Key, key) {
			return k.Unit
		}
	}
	return ""
}

// MatchKey reports whether key is an instance of pattern, a Keys entry in
// which one "<…>" stands for any non-empty text.
func MatchKey(pattern, key string) bool {
	open := strings.IndexByte(pattern, '<')
	if open < 0 {
		return pattern == key
	}
	closeAt := strings.IndexByte(pattern[open:], '>')
	if closeAt < 0 {
		return pattern == key
	}
	prefix, suffix := pattern[:open], pattern[open+closeAt+1:]
	return len(key) > len(prefix)+len(suffix) && strings.HasPrefix(key, prefix) && strings.HasSuffix(key, suffix)
}
