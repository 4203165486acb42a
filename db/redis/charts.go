package redis

import (
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/report/present"
)

// redisCharts are a Redis run's database charts: what the server did, the
// AOF's fsync stalls (the aof incident), the latency monitor's events,
// clients and memory.
func redisCharts() []present.Chart {
	return []present.Chart{
		{
			ID: "redis-ops", Title: "Commands processed",
			Help: "Commands the server processed per second (INFO's total_commands_processed over each interval, bold) and the busiest commands' calls (INFO commandstats, thin). The samplers' own commands are left out of the per-command lines.",
			Axes: []present.Axis{{Label: "commands/s", Unit: "rate", Text: "commands/s", Min: present.Zero()}},
			What: "command counts",
			Series: []present.Series{
				{Source: rm.Info, Key: rm.OpsPerS, Label: "all commands", Color: "#1f77b4", Width: 2},
				{Source: rm.CommandStats, Suffix: rm.CmdCallsSuffix, Top: 5, Width: 1},
			},
		},
		{
			ID: "redis-aof", Title: "AOF fsync stalls",
			Help: "aof_delayed_fsync: AOF writes made without waiting any longer for an fsync still running after 2 s (each stops the whole server until the fsync ends); fsyncs queued in the background thread; and whether an AOF rewrite or an RDB save (fork) was running.",
			Axes: []present.Axis{{Label: "fsyncs", Unit: "count", Text: "per tick", Min: present.Zero()}},
			What: "AOF counters",
			Series: []present.Series{
				{Source: rm.Info, Key: rm.AOFDelayedFsync, Label: "delayed fsyncs (aof_delayed_fsync)", Color: "#d62728", Width: 2},
				{Source: rm.Info, Key: rm.AOFPendingBioFsync, Label: "pending fsyncs", Color: "#1f77b4", Width: 1},
				{Source: rm.Info, Key: rm.AOFRewriteInProgress, Label: "AOF rewrite running", Color: "#9467bd", Style: "dash", Width: 1, SkipIfZero: true},
				{Source: rm.Info, Key: rm.RDBBgsaveInProgress, Label: "RDB save running", Color: "#8c564b", Style: "dash", Width: 1, SkipIfZero: true},
				{Source: rm.Info, Key: rm.AOFEnabled, Label: "AOF on", Color: "#444444", Style: "dot", Width: 1, Ref: true},
			},
		},
		{
			ID: "redis-latency", Title: "Latency monitor events",
			Help: "The longest occurrence of each latency-monitor event in the interval (LATENCY HISTORY; aof-write-pending-fsync is the main thread waiting for the AOF's fsync), and the slowest new slow-log entry (dashed): a stall the slow log does not show happened outside command execution.",
			Axes: []present.Axis{{Label: "longest event", Unit: "ms", Min: present.Zero()}},
			Log:  true,
			What: "latency events (the latency monitor records events over latency-monitor-threshold only)",
			Series: []present.Series{
				{Source: rm.Latency, Suffix: rm.LatencyMaxSuffix, Top: 6, Width: 1.5, ZeroWhenAbsent: true},
				{Source: rm.Slowlog, Key: rm.SlowlogNewMaxMS, Label: "slow log", Color: "#555555", Style: "dash", Width: 1, ZeroWhenAbsent: true},
			},
		},
		{
			ID: "redis-clients", Title: "Clients",
			Help: "Client connections (the samplers' included) and clients waiting in a blocking command (left); connections refused for maxclients in the interval (right, red).",
			Axes: []present.Axis{{Label: "clients", Unit: "count", Text: "clients", Min: present.Zero()}, {Label: "refused", Unit: "count", Text: "per tick", Min: present.Zero(), Headroom: 2}},
			What: "client counts",
			Series: []present.Series{
				{Source: rm.Info, Key: rm.ConnectedClients, Label: "connected", Color: "#1f77b4", Width: 1.5},
				{Source: rm.Info, Key: rm.BlockedClients, Label: "blocked", Color: "#ff7f0e", Width: 1, SkipIfZero: true},
				{Source: rm.Info, Key: rm.RejectedConnections, Label: "refused (maxclients)", Axis: 1, Color: "#d62728", Width: 1, SkipIfZero: true},
			},
		},
		{
			ID: "redis-memory", Title: "Memory",
			Help: "Memory Redis allocated against maxmemory (left, dashed where set); keys evicted for maxmemory and keys expired in the interval (right).",
			Axes: []present.Axis{{Label: "memory", Unit: "bytes", Min: present.Zero()}, {Label: "keys", Unit: "count", Text: "keys per tick", Min: present.Zero()}},
			What: "memory use",
			Series: []present.Series{
				{Source: rm.Info, Key: rm.UsedMemoryBytes, Label: "used memory", Color: "#9467bd", Width: 1.5},
				{Source: rm.Info, Key: rm.MaxMemoryBytes, Label: "maxmemory", Color: "#d62728", Style: "dash", Width: 1, SkipIfZero: true, Ref: true},
				{Source: rm.Info, Key: rm.EvictedKeys, Label: "evicted keys", Axis: 1, Color: "#ff7f0e", Width: 1, SkipIfZero: true},
				{Source: rm.Info, Key: rm.ExpiredKeys, Label: "expired keys", Axis: 1, Color: "#2ca02c", Width: 1, SkipIfZero: true},
			},
		},
	}
}

// redisLoad is what the compare page overlays of two Redis runs.
func redisLoad() *present.Load {
	return &present.Load{
		Title:  "Commands processed per second",
		Help:   "Commands the server processed per second (INFO's total_commands_processed over each interval); each run from its own start.",
		Axis:   present.Axis{Label: "commands/s", Unit: "rate", Min: present.Zero()},
		Source: rm.Info, Key: rm.OpsPerS,
	}
}
