package engine

import (
	"maps"
	"time"

	"github.com/firedrill/firedrill/timeline"
)

// Timeline converts the interval just ended into a timeline record of
// workload, for run directories and the live exporter; offset is the
// workload's start in the run. It copies what it keeps: p.Interval is
// reused after the OnProgress call.
func (p *Progress) Timeline(workload string, offset time.Duration) *timeline.Interval {
	iv := p.Interval
	t := &iv.Total
	out := &timeline.Interval{
		Workload:   workload,
		Start:      (offset + time.Duration(iv.Start)*time.Microsecond).Seconds(),
		End:        (offset + time.Duration(iv.End)*time.Microsecond).Seconds(),
		Clients:    p.Clients,
		Rate:       p.Rate,
		Count:      t.Count,
		Failed:     t.Failures(),
		Skipped:    t.Skipped,
		Late:       t.Late,
		Retried:    t.Retried,
		Retries:    t.Retries,
		Latency:    iv.Hist.Clone(),
		LatencyPct: iv.Hist.Percentiles(),
	}
	if t.Lag.Count > 0 {
		out.LagMaxUS = int64(t.Lag.Max)
		out.LagMeanUS = t.Lag.Mean()
	}
	out.Errors = copyCounts(iv.Errors)
	out.Refused = copyCounts(iv.Refused)
	out.Unavailable = copyCounts(iv.Unavailable)
	out.Lost = copyCounts(iv.Lost)
	out.Unconnected = p.Unconnected
	out.Fallbacks, out.FallbackFailed = iv.Fallbacks, iv.FallbackFailed
	out.OldestUS = int64(p.OldestInFlight / time.Microsecond)
	if iv.PoolWait != nil {
		out.PoolWait = iv.PoolWait.Clone()
		out.PoolWaitPct = iv.PoolWait.Percentiles()
	}
	return out
}

// copyCounts copies counts by code; nil when there are none.
func copyCounts(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
