package report

import (
	"fmt"
	"math"

	mm "github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// kindCompare is what Compare weighs for one kind of target beyond the
// workloads' throughput and latency percentiles: the worst latency (a
// server that stops for a moment shows there, not in p99), and the
// server's own counters that tell why. PostgreSQL has no entry: its
// comparison is the percentiles, the findings and the settings.
type kindCompare struct {
	// StallMS is the latency (ms) past which a transaction counts as
	// stalled rather than slow.
	StallMS float64
	// Counters are the kind's key series, each summed or maximised over
	// the whole run.
	Counters []counterSpec
}

// counterSpec is one sampled series Compare sets side by side.
type counterSpec struct {
	Source, Key string
	Label       string
	Unit        string
	Agg         string // aggSum (a count per interval), aggMax, aggMean (a rate or level)
}

// How a counter is taken over a run.
const (
	aggSum  = "sum"
	aggMax  = "max"
	aggMean = "mean"
)

// compareKinds are the kinds Compare knows more of, keyed by
// timeline.Target.Kind; a kind's entry reads its metric leaf's names.
var compareKinds = map[string]kindCompare{
	"redis": {
		StallMS: 100, // Redis answers in microseconds: 100 ms is the server stopping
		Counters: []counterSpec{
			{rm.Info, rm.AOFDelayedFsync, "AOF writes past a late fsync (aof_delayed_fsync)", "", aggSum},
			{rm.Latency, rm.LatencyMax(rm.EventAOFWritePendingFsync), "longest aof-write-pending-fsync (latency monitor)", "ms", aggMax},
			{rm.Latency, rm.LatencyMax(rm.EventFork), "longest fork (latency monitor)", "ms", aggMax},
			{rm.Latency, rm.LatencyMax(rm.EventCommand), "longest slow command (latency monitor)", "ms", aggMax},
			{rm.Slowlog, rm.SlowlogNewEntries, "slow log entries", "", aggSum},
			{rm.Info, rm.RejectedConnections, "connections refused (maxclients)", "", aggSum},
			{rm.Info, rm.EvictedKeys, "keys evicted (maxmemory)", "", aggSum},
			{rm.Info, rm.OpsPerS, "commands per second", "/s", aggMean},
		},
	},
	"mariadb": {
		StallMS: 1000, // a second: a lock wait or a queue on a global lock, not a slow plan
		Counters: []counterSpec{
			{mm.GlobalStatus, mm.Deadlocks, "deadlocks (Innodb_deadlocks)", "", aggSum},
			{mm.GlobalStatus, mm.RowLockTimeMS, "time waiting for row locks", "ms", aggSum},
			{mm.InnoDBLocks, mm.LocksBlocked, "most transactions waiting for a lock at once", "", aggMax},
			{mm.InnoDBLocks, mm.LockWaits(mm.LockAutoInc), "most waiting for a table's AUTO-INC lock at once", "", aggMax},
			{mm.Processlist, mm.State(mm.StateQueryCacheLock), "most sessions waiting for the query cache lock at once", "", aggMax},
			{mm.GlobalStatus, mm.QcacheInvalidPerS, "query-cache invalidations per second", "/s", aggMean},
			{mm.GlobalStatus, mm.ThreadsRunning, "most threads running at once", "", aggMax},
			{mm.GlobalStatus, mm.ConnErrorsMaxConn, "connections refused (max_connections)", "", aggSum},
			{mm.GlobalStatus, mm.QuestionsPerS, "statements per second", "/s", aggMean},
		},
	},
}

// CounterChange is one of the server's key series over each whole run.
type CounterChange struct {
	Name  string `json:"name"` // "source:key"
	Label string `json:"label"`
	Unit  string `json:"unit,omitempty"`
	Agg   string `json:"agg"` // sum, max or mean over the run
	// A and B are absent where the run did not record the series.
	A *float64 `json:"a"`
	B *float64 `json:"b"`
}

// StallComparison is a workload's worst latency in each run: what a
// server that stops for a moment costs, which percentiles of blocks can
// hide.
type StallComparison struct {
	// ThresholdMS is the latency past which a transaction stalled.
	ThresholdMS float64 `json:"threshold_ms"`
	// MaxA and MaxB are the slowest transaction of the measured
	// intervals, ms.
	MaxA float64 `json:"max_a_ms"`
	MaxB float64 `json:"max_b_ms"`
	// IntervalsA and IntervalsB count the measured intervals with a
	// transaction over the threshold, of TotalA and TotalB.
	IntervalsA int `json:"stalled_intervals_a"`
	IntervalsB int `json:"stalled_intervals_b"`
	TotalA     int `json:"intervals_a"`
	TotalB     int `json:"intervals_b"`
}

// maxMetric compares the blocks' slowest transaction.
var maxMetric = compareMetric{name: "max", unit: "ms", quantile: 100}

// stalls measures a workload's worst latency in both runs' measured
// intervals.
func stalls(ivsA, ivsB []timeline.Interval, thresholdMS float64) *StallComparison {
	sc := &StallComparison{ThresholdMS: thresholdMS, TotalA: len(ivsA), TotalB: len(ivsB)}
	sc.MaxA, sc.IntervalsA = worst(ivsA, thresholdMS)
	sc.MaxB, sc.IntervalsB = worst(ivsB, thresholdMS)
	return sc
}

func worst(ivs []timeline.Interval, thresholdMS float64) (maxMS float64, over int) {
	for i := range ivs {
		if ivs[i].Latency == nil {
			continue
		}
		ms := float64(ivs[i].Latency.Max()) / 1000
		maxMS = max(maxMS, ms)
		if ms > thresholdMS {
			over++
		}
	}
	return maxMS, over
}

// compareCounters takes each of the kind's counters over both runs.
func compareCounters(a, b *timeline.Run, specs []counterSpec) []CounterChange {
	var out []CounterChange
	for _, s := range specs {
		cc := CounterChange{Name: s.Source + ":" + s.Key, Label: s.Label, Unit: s.Unit, Agg: s.Agg,
			A: aggregate(a, s), B: aggregate(b, s)}
		if !sampled(a, s.Source) && !sampled(b, s.Source) {
			continue // neither run watched it
		}
		// A sampled source without the key had nothing to count (a
		// latency-monitor event that never happened): that is a 0.
		if cc.A == nil && sampled(a, s.Source) && s.Agg != aggMean {
			cc.A = ptrTo(0)
		}
		if cc.B == nil && sampled(b, s.Source) && s.Agg != aggMean {
			cc.B = ptrTo(0)
		}
		out = append(out, cc)
	}
	return out
}

func zeroOrAbsent(v *float64) bool { return v == nil || *v == 0 }

func ptrTo(v float64) *float64 { return &v }

// sampled says whether the run has any good sample of source.
func sampled(r *timeline.Run, source string) bool {
	for i := range r.Samples {
		if r.Samples[i].Source == source && (r.Samples[i].Error == "" || len(r.Samples[i].Values) > 0) {
			return true
		}
	}
	return false
}

// aggregate takes one counter over a run; nil when the run lacks it.
func aggregate(r *timeline.Run, s counterSpec) *float64 {
	pts := r.Series(s.Source, s.Key)
	if len(pts) == 0 {
		return nil
	}
	v := 0.0
	switch s.Agg {
	case aggMax:
		v = math.Inf(-1)
		for _, p := range pts {
			v = max(v, p.V)
		}
	case aggMean:
		for _, p := range pts {
			v += p.V
		}
		v /= float64(len(pts))
	default:
		for _, p := range pts {
			v += p.V
		}
	}
	return &v
}

// formatCounter writes a counter's value, "-" where the run lacks it.
func formatCounter(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	s := formatNumber(*v)
	if *v == math.Trunc(*v) && math.Abs(*v) < 1e6 {
		s = fmt.Sprintf("%.0f", *v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}
