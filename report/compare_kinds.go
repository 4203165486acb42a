package report

import (
	"fmt"
	"math"

	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// CounterChange is one of the server's key series over each whole run.
type CounterChange struct {
	Name string `json:"name"` // "source:key"
	// Target names the target whose counter it is, in runs of several.
	Target string `json:"target,omitempty"`
	Label  string `json:"label"`
	Unit   string `json:"unit,omitempty"`
	Agg    string `json:"agg"` // sum, max or mean over the run
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

// stallsMetric compares how many of a block's intervals (the unit) had a
// transaction slower than the kind's stall threshold: a server that
// stops now and then shows in these counts before it moves a block's
// max much.
func stallsMetric(thresholdMS float64) compareMetric {
	return compareMetric{name: "stalls", unit: "intervals", stallMS: thresholdMS}
}

// intervalMaxMS is the interval's slowest transaction in ms, counting
// one still running at its end (a stall in progress); 0 when neither.
func intervalMaxMS(iv *timeline.Interval) float64 {
	us := iv.OldestUS
	if iv.Latency != nil {
		us = max(us, iv.Latency.Max())
	}
	return float64(us) / 1000
}

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
		if ivs[i].Latency == nil && ivs[i].OldestUS == 0 {
			continue
		}
		ms := intervalMaxMS(&ivs[i])
		maxMS = max(maxMS, ms)
		if ms > thresholdMS {
			over++
		}
	}
	return maxMS, over
}

// compareCounters takes each of the kind's counters over both runs.
func compareCounters(a, b *timeline.Run, specs []present.Counter) []CounterChange {
	var out []CounterChange
	for _, s := range specs {
		cc := CounterChange{Name: s.Source + ":" + s.Key, Label: s.Label, Unit: s.Unit, Agg: s.Agg,
			A: aggregate(a, s), B: aggregate(b, s)}
		if !sampled(a, s.Source) && !sampled(b, s.Source) {
			continue // neither run watched it
		}
		// A sampled source without the key had nothing to count (a
		// latency-monitor event that never happened): that is a 0.
		if cc.A == nil && sampled(a, s.Source) && s.Agg != present.Mean {
			cc.A = ptrTo(0)
		}
		if cc.B == nil && sampled(b, s.Source) && s.Agg != present.Mean {
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
func aggregate(r *timeline.Run, s present.Counter) *float64 {
	pts := r.Series(s.Source, s.Key)
	if len(pts) == 0 {
		return nil
	}
	v := 0.0
	switch s.Agg {
	case present.Max:
		v = math.Inf(-1)
		for _, p := range pts {
			v = max(v, p.V)
		}
	case present.Mean:
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
