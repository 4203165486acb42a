package engine

import (
	"math"

	"github.com/firedrill/firedrill/timeline"
)

// Simple accumulates count, min, max, sum and sum of squares of a series of
// values (microseconds), enough for pgbench's average and stddev.
type Simple struct {
	Count    int64
	Min, Max float64
	Sum      float64
	Sum2     float64
}

// Add records one value.
func (s *Simple) Add(v float64) {
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if s.Count == 0 || v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
	s.Sum2 += v * v
}

// Merge adds another accumulation into s.
func (s *Simple) Merge(o *Simple) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	if s.Count == 0 || o.Max > s.Max {
		s.Max = o.Max
	}
	s.Count += o.Count
	s.Sum += o.Sum
	s.Sum2 += o.Sum2
}

// Mean is the average value, 0 when empty.
func (s *Simple) Mean() float64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / float64(s.Count)
}

// StdDev is the population standard deviation, as pgbench computes it.
func (s *Simple) StdDev() float64 {
	if s.Count == 0 {
		return 0
	}
	m := s.Mean()
	v := s.Sum2/float64(s.Count) - m*m
	if v < 0 {
		return 0
	}
	return math.Sqrt(v)
}

// Stats counts transactions by outcome, as pgbench's StatsData does:
// all transactions = Skipped + Count (successful) + Failures().
type Stats struct {
	Count                 int64 // successful transactions
	Skipped               int64 // too late to start under --rate with --latency-limit
	Retried               int64 // transactions retried at least once
	Retries               int64 // all retries
	SerializationFailures int64 // failed after serialization errors
	DeadlockFailures      int64 // failed after deadlock errors
	OtherFailures         int64 // failed by other errors or a pool timeout (only with Config.ContinueOnError)
	Late                  int64 // successful but above --latency-limit
	Latency               Simple
	Lag                   Simple // schedule lag under --rate
}

// Failures is the number of transactions that failed for good.
func (s *Stats) Failures() int64 {
	return s.SerializationFailures + s.DeadlockFailures + s.OtherFailures
}

// Total is the number of transactions that were due: done, failed or skipped.
func (s *Stats) Total() int64 { return s.Count + s.Skipped + s.Failures() }

// Merge adds o into s.
func (s *Stats) Merge(o *Stats) {
	s.Count += o.Count
	s.Skipped += o.Skipped
	s.Retried += o.Retried
	s.Retries += o.Retries
	s.SerializationFailures += o.SerializationFailures
	s.DeadlockFailures += o.DeadlockFailures
	s.OtherFailures += o.OtherFailures
	s.Late += o.Late
	s.Latency.Merge(&o.Latency)
	s.Lag.Merge(&o.Lag)
}

// CommandStats is what one script command measured over the whole run
// (pgbench -r).
type CommandStats struct {
	Count    int64 // completions (with per-command reporting)
	SumUS    int64 // their total latency, µs
	Failures int64 // transactions that failed for good at this command
	Retries  int64 // retries caused by an error at this command
	// Latency is the percentiles of the command's latency, within 3.2 %
	// (see cmdHistogram); zero without per-command reporting.
	Latency timeline.Percentiles
}

// MeanUS is the command's average latency in µs, 0 if it never completed.
func (c *CommandStats) MeanUS() float64 {
	if c.Count == 0 {
		return 0
	}
	return float64(c.SumUS) / float64(c.Count)
}

// ScriptStats is what one script measured.
type ScriptStats struct {
	Stats
	Hist *timeline.Histogram
	// Commands is set in a Result's Totals only: per-command statistics
	// are kept once for the whole run (see cmdHistogram), not per
	// interval.
	Commands []CommandStats
}

// Interval is everything measured over a span of time: totals and per
// script, each with an HDR histogram.
type Interval struct {
	Start, End int64 // microseconds since the run's start
	Total      Stats
	Hist       *timeline.Histogram
	Scripts    []ScriptStats
	// Errors counts failed tries by error code (SQLSTATE, or a Code*
	// constant); nil until the first error.
	Errors map[string]int64
	// Refused, Unavailable and Lost count, by code, the failed tries of
	// Errors that were about the connection (see ConnFault): attempts to
	// open a session that the server refused (at its limit) or could not
	// take (down, starting), and sessions lost; nil until the first.
	Refused, Unavailable, Lost map[string]int64
	// PoolWait records how long transactions waited for a pooled
	// connection (µs); nil without a pool.
	PoolWait *timeline.Histogram
	// Fallbacks counts the transactions that fell back to
	// Config.Fallback's target, and FallbackFailed those whose fallback
	// failed too.
	Fallbacks, FallbackFailed int64
}

func newInterval(scripts int) *Interval {
	iv := &Interval{Hist: timeline.NewHistogram(), Scripts: make([]ScriptStats, scripts)}
	for i := range iv.Scripts {
		iv.Scripts[i].Hist = timeline.NewHistogram()
	}
	return iv
}

// Merge adds o into iv.
func (iv *Interval) Merge(o *Interval) {
	iv.Total.Merge(&o.Total)
	iv.Hist.Merge(o.Hist)
	iv.Errors = mergeCounts(iv.Errors, o.Errors)
	iv.Refused = mergeCounts(iv.Refused, o.Refused)
	iv.Unavailable = mergeCounts(iv.Unavailable, o.Unavailable)
	iv.Lost = mergeCounts(iv.Lost, o.Lost)
	iv.Fallbacks += o.Fallbacks
	iv.FallbackFailed += o.FallbackFailed
	if o.PoolWait != nil {
		if iv.PoolWait == nil {
			iv.PoolWait = timeline.NewHistogram()
		}
		iv.PoolWait.Merge(o.PoolWait)
	}
	for i := range iv.Scripts {
		s, os := &iv.Scripts[i], &o.Scripts[i]
		s.Stats.Merge(&os.Stats)
		s.Hist.Merge(os.Hist)
	}
}

// reset empties iv for reuse, keeping its histograms' memory.
func (iv *Interval) reset() {
	iv.Total = Stats{}
	iv.Hist.Reset()
	clear(iv.Errors)
	clear(iv.Refused)
	clear(iv.Unavailable)
	clear(iv.Lost)
	iv.Fallbacks, iv.FallbackFailed = 0, 0
	if iv.PoolWait != nil {
		iv.PoolWait.Reset()
	}
	for i := range iv.Scripts {
		s := &iv.Scripts[i]
		s.Stats = Stats{}
		s.Hist.Reset()
	}
}

// mergeCounts adds counts by code from into to, making to if needed.
func mergeCounts(to, from map[string]int64) map[string]int64 {
	for code, n := range from {
		if to == nil {
			to = make(map[string]int64)
		}
		to[code] += n
	}
	return to
}
