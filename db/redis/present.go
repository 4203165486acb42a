package redis

import (
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/report/present"
)

var _ present.Presenter = Backend{}

// Presentation is how the report shows a Redis run: the workloads'
// throughput and latency, then the server's charts (charts.go); the
// compare page's load is the commands processed per second, and compare
// weighs the fsync stalls and latency events that explain a stall.
func (Backend) Presentation() present.Kind {
	return present.Kind{
		Product: product,
		Charts:  append([]present.Chart{{Drawn: present.DrawnThroughput}, {Drawn: present.DrawnLatency}}, redisCharts()...),
		Load:    redisLoad(),
		// Commands run on the main thread: one core is all it has
		// (io-threads only move the sockets' reads and writes).
		ServerCPU: &present.ServerCPU{Source: rm.Info, Key: rm.CPUCores, MaxCores: 1},
		Compare: &present.Compare{
			StallMS: 100, // Redis answers in microseconds: 100 ms is the server stopping
			Counters: []present.Counter{
				{Source: rm.Info, Key: rm.AOFDelayedFsync, Label: "AOF writes past a late fsync (aof_delayed_fsync)", Unit: "", Agg: present.Sum},
				{Source: rm.Latency, Key: rm.LatencyMax(rm.EventAOFWritePendingFsync), Label: "longest aof-write-pending-fsync (latency monitor)", Unit: "ms", Agg: present.Max},
				{Source: rm.Latency, Key: rm.LatencyMax(rm.EventFork), Label: "longest fork (latency monitor)", Unit: "ms", Agg: present.Max},
				{Source: rm.Latency, Key: rm.LatencyMax(rm.EventCommand), Label: "longest slow command (latency monitor)", Unit: "ms", Agg: present.Max},
				{Source: rm.Slowlog, Key: rm.SlowlogNewEntries, Label: "slow log entries", Unit: "", Agg: present.Sum},
				{Source: rm.Info, Key: rm.RejectedConnections, Label: "connections refused (maxclients)", Unit: "", Agg: present.Sum},
				{Source: rm.Info, Key: rm.EvictedKeys, Label: "keys evicted (maxmemory)", Unit: "", Agg: present.Sum},
				{Source: rm.Info, Key: rm.OpsPerS, Label: "commands per second", Unit: "/s", Agg: present.Mean},
			},
		},
	}
}
