package diagnose

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// Stats summarises the points of a series inside a window.
type Stats struct {
	N              int
	Mean, Min, Max float64
	MinT, MaxT     float64 // when the extremes happened
	First, Last    float64
	FirstT, LastT  float64
}

// Over summarises the points with from <= T < to.
func Over(points []timeline.Point, from, to float64) Stats {
	s := Stats{Min: math.Inf(1), Max: math.Inf(-1)}
	sum := 0.0
	for _, p := range points {
		if p.T < from || p.T >= to {
			continue
		}
		if s.N == 0 {
			s.First, s.FirstT = p.V, p.T
		}
		s.Last, s.LastT = p.V, p.T
		if p.V < s.Min {
			s.Min, s.MinT = p.V, p.T
		}
		if p.V > s.Max {
			s.Max, s.MaxT = p.V, p.T
		}
		sum += p.V
		s.N++
	}
	if s.N == 0 {
		return Stats{}
	}
	s.Mean = sum / float64(s.N)
	return s
}

// Median is the median value of the points with from <= T < to (0 if none).
func Median(points []timeline.Point, from, to float64) float64 {
	var vs []float64
	for _, p := range points {
		if p.T >= from && p.T < to {
			vs = append(vs, p.V)
		}
	}
	if len(vs) == 0 {
		return 0
	}
	sort.Float64s(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// PeakWindow is how many consecutive samples PeakOfMedians takes the
// median of: a batched statistics flush lands a few seconds' counts in
// one sample and leaves its neighbours short, which moves no median of 5.
const PeakWindow = 5

// PeakOfMedians is the highest rate a series held, robust to batched
// statistics flushes: the largest median of PeakWindow consecutive
// samples with from <= T < to (the median of them all when fewer), and
// the time of the middle sample of that window.
func PeakOfMedians(points []timeline.Point, from, to float64) (peak, at float64) {
	var in []timeline.Point
	for _, p := range points {
		if p.T >= from && p.T < to {
			in = append(in, p)
		}
	}
	if len(in) == 0 {
		return 0, 0
	}
	if len(in) < PeakWindow {
		return Median(in, math.Inf(-1), math.Inf(1)), in[len(in)/2].T
	}
	for i := 0; i+PeakWindow <= len(in); i++ {
		if m := Median(in[i:i+PeakWindow], math.Inf(-1), math.Inf(1)); i == 0 || m > peak {
			peak, at = m, in[i+PeakWindow/2].T
		}
	}
	return peak, at
}

// SumSeries adds up, per sample, every value of source whose key starts
// with prefix and ends with suffix (e.g. the sessions of all
// "wait.LWLock:MultiXact…" events). Samples with no such key count as 0.
func SumSeries(run *timeline.Run, source, prefix, suffix string) []timeline.Point {
	var out []timeline.Point
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != source || s.Error != "" {
			continue
		}
		sum := 0.0
		for k, v := range s.Values {
			if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
				sum += v
			}
		}
		out = append(out, timeline.Point{T: s.T, V: sum})
	}
	return out
}

// TPS is a workload's throughput series: successful transactions per
// second of each interval, at the interval's end.
func TPS(run *timeline.Run, workload string) []timeline.Point {
	var out []timeline.Point
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.End > iv.Start {
			out = append(out, timeline.Point{T: iv.End, V: iv.TPS()})
		}
	}
	return out
}

// Throughput is a workload's successful transactions per second over
// [from, to), from the intervals inside it (0 if none).
func Throughput(run *timeline.Run, workload string, from, to float64) float64 {
	var n int64
	span := 0.0
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.Start >= from-1e-6 && iv.End <= to+1e-6 {
			n += iv.Count
			span += iv.End - iv.Start
		}
	}
	if span == 0 {
		return 0
	}
	return float64(n) / span
}

// EventSpan is an event's window on the timeline.
type EventSpan struct {
	Name, Kind string
	Start, End float64 // End is the run's end if the event never ended
	Started    map[string]any
	Ended      map[string]any
	Outcome    string
	Error      string
}

// Events pairs each event's start and end marks.
func Events(run *timeline.Run) []EventSpan {
	var out []EventSpan
	index := map[string]int{}
	for _, m := range run.Marks {
		i, ok := index[m.Event]
		if !ok {
			index[m.Event] = len(out)
			out = append(out, EventSpan{Name: m.Event, Kind: m.Kind, Start: m.T, End: RunEnd(run)})
			i = len(out) - 1
		}
		e := &out[i]
		switch m.Phase {
		case timeline.PhaseStart:
			e.Start, e.Started = m.T, m.Detail
		case timeline.PhaseEnd:
			e.End, e.Ended, e.Outcome, e.Error = m.T, m.Detail, m.Outcome, m.Error
		}
	}
	return out
}

// RunEnd is the time of the run's last record. End-of-run evidence
// (plans, function bodies: a source read once, after the load) is not
// part of the timeline and does not count.
func RunEnd(run *timeline.Run) float64 {
	end := LoadEnd(run)
	readOnce := map[string]int{}
	for i := range run.Samples {
		readOnce[run.Samples[i].Source]++
	}
	load := end
	for _, s := range run.Samples {
		if readOnce[s.Source] == 1 && s.T > load {
			continue // evidence gathered after the load
		}
		end = max(end, s.T)
	}
	return end
}

// LoadEnd is when the load ended: the last interval's end or the
// summary's duration. A rule whose window is "the whole run" and that
// reads no sample ends it here, so that its window does not depend on
// which samplers ran.
func LoadEnd(run *timeline.Run) float64 {
	end := 0.0
	if run.Summary != nil {
		end = run.Summary.Duration
	}
	for _, iv := range run.Intervals {
		end = max(end, iv.End)
	}
	return end
}

// Detail decodes a sample's detail into v; false if it has none or it
// does not decode.
func Detail(s *timeline.Sample, v any) bool {
	return len(s.Detail) > 0 && json.Unmarshal(s.Detail, v) == nil
}

// SampleNear returns the sample of source closest to t within tolerance
// seconds (a sampler that failed that tick is skipped), or nil.
func SampleNear(run *timeline.Run, source string, t, tolerance float64) *timeline.Sample {
	var best *timeline.Sample
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != source || s.Error != "" || math.Abs(s.T-t) > tolerance {
			continue
		}
		if best == nil || math.Abs(s.T-t) < math.Abs(best.T-t) {
			best = s
		}
	}
	return best
}

// Tick is the run's sample interval in seconds (1 when the manifest does
// not say).
func Tick(run *timeline.Run) float64 {
	if run.Manifest.Interval > 0 {
		return run.Manifest.Interval
	}
	return 1
}

// WorkloadApp is the application_name of a workload's sessions, as the
// runner sets it: the key of its pg_stat_activity app.<name>.* series.
func WorkloadApp(workload string) string { return "firedrill:" + workload }

// TotalTPS is all workloads' successful transactions per second in the window.
func TotalTPS(run *timeline.Run, from, to float64) float64 {
	return tpsOf(run, from, to, func(string) bool { return true })
}

// WritingTPS is the successful transactions per second, in the window, of
// the workloads whose scripts write or lock rows (Writers): what a rule
// dividing commits, log flushes or lock waits by transactions must count,
// so that a read-only workload beside the writers does not dilute it.
func WritingTPS(run *timeline.Run, from, to float64) float64 {
	writers := Writers(run)
	return tpsOf(run, from, to, func(w string) bool { return writers[w] })
}

// tpsOf is the successful transactions per second of the workloads
// include takes.
func tpsOf(run *timeline.Run, from, to float64, include func(workload string) bool) float64 {
	sum := 0.0
	for _, w := range run.Manifest.Workloads {
		if include(w.Name) {
			sum += Throughput(run, w.Name, from, to)
		}
	}
	if sum == 0 { // intervals not aligned with the window: all of them
		var n int64
		span := map[string]float64{}
		for _, iv := range run.Intervals {
			if iv.End > from && iv.Start < to && include(iv.Workload) {
				n += iv.Count
				span[iv.Workload] += iv.End - iv.Start
			}
		}
		longest := 0.0
		for _, s := range span {
			longest = max(longest, s)
		}
		if longest > 0 {
			sum = float64(n) / longest
		}
	}
	return sum
}

// EventsOfKind are the run's events of a kind overlapping [from, to].
func EventsOfKind(run *timeline.Run, kind string, from, to float64) []EventSpan {
	var out []EventSpan
	for _, e := range Events(run) {
		if e.Kind == kind && e.End >= from && e.Start <= to {
			out = append(out, e)
		}
	}
	return out
}

// PointNear is the point of pts closest to t within tol.
func PointNear(pts []timeline.Point, t, tol float64) (timeline.Point, bool) {
	best, ok := timeline.Point{}, false
	for _, p := range pts {
		if math.Abs(p.T-t) <= tol && (!ok || math.Abs(p.T-t) < math.Abs(best.T-t)) {
			best, ok = p, true
		}
	}
	return best, ok
}

// EventNear names an event that ended shortly before t: "create-index
// (sql) at 25 s".
func EventNear(run *timeline.Run, t float64) string {
	for _, e := range Events(run) {
		if e.End <= t+Tick(run) && e.End >= t-10 {
			return fmt.Sprintf("%s (%s) at %.0f–%.0f s", e.Name, e.Kind, e.Start, e.End)
		}
	}
	return ""
}
