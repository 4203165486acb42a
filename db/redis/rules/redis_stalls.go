package redisrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"sort"
	"strings"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// What the Redis rules share: the client stalls (intervals in which a
// transaction took far longer than a Redis command should), the moments
// the server recorded something that stops its event loop, and how the
// two line up.

// redisStallMS is the client latency from which an interval counts as a
// stall: Redis answers in well under a millisecond, so 100 ms is the
// whole server stopping, not a slow command or a busy CPU (INCIDENTS.md
// measured 13–40 ms from CPU contention alone on this machine).
const redisStallMS = 100

// redisAlignS is how far apart a client stall and a server moment may be
// and still be one story: the samplers read once a second, the latency
// monitor keeps whole seconds.
const redisAlignS = 2.0

// clientStall is one interval of one workload with a transaction over
// redisStallMS.
type clientStall struct {
	Workload   string
	Start, End float64
	MaxMS      float64
}

// clientStalls lists the intervals with a transaction over floorMS, in
// time order, and the run's median p50 (ms) for comparison.
func clientStalls(run *timeline.Run, floorMS float64) (stalls []clientStall, medianP50MS float64) {
	var p50s []float64
	for _, iv := range run.Intervals {
		if iv.Count == 0 {
			continue
		}
		p50s = append(p50s, float64(iv.LatencyPct.P50)/1000)
		if maxMS := float64(iv.LatencyPct.Max) / 1000; maxMS >= floorMS {
			stalls = append(stalls, clientStall{Workload: iv.Workload, Start: iv.Start, End: iv.End, MaxMS: maxMS})
		}
	}
	sort.Slice(stalls, func(i, j int) bool { return stalls[i].Start < stalls[j].Start })
	sort.Float64s(p50s)
	if len(p50s) > 0 {
		medianP50MS = p50s[len(p50s)/2]
	}
	return stalls, medianP50MS
}

// worstStall is the stall with the longest transaction.
func worstStall(stalls []clientStall) clientStall {
	var worst clientStall
	for _, s := range stalls {
		if s.MaxMS > worst.MaxMS {
			worst = s
		}
	}
	return worst
}

// serverMoment is a time at which the server recorded a stop of its own.
type serverMoment struct {
	T     float64
	Value float64 // the count (a counter's increment) or ms (a latency event)
}

// counterMoments are the samples of source in which a per-interval count
// rose: the increment happened since the previous sample.
func counterMoments(run *timeline.Run, source, key string) []serverMoment {
	var out []serverMoment
	for _, p := range run.Series(source, key) {
		if p.V > 0 {
			out = append(out, serverMoment{T: p.T, Value: p.V})
		}
	}
	return out
}

// latencyMoments are the occurrences of a latency-monitor event, at their
// second on the run's clock, from the Latency source's details.
func latencyMoments(run *timeline.Run, event string) []serverMoment {
	type occurrence struct {
		rm.LatencyEvent
		readT float64 // the reading that reported it, on the run's clock
	}
	var all []occurrence
	// For runs recorded without AgeS: where the run's clock starts on
	// the server's. An occurrence precedes its reading, so the start is
	// no earlier than any occurrence's second minus its reading's time,
	// nor than the manifest's Started (setup comes after it).
	zero := float64(run.Manifest.Started.UnixNano()) / 1e9
	for _, s := range run.SourceSamples(rm.Latency) {
		var occurrences []rm.LatencyEvent
		if !diagnose.Detail(&s, &occurrences) {
			continue
		}
		for _, o := range occurrences {
			all = append(all, occurrence{o, s.T})
			if o.AgeS == 0 {
				zero = max(zero, float64(o.Unix)-s.T)
			}
		}
	}
	seen := map[int64]bool{}
	var out []serverMoment
	for _, o := range all {
		if o.Event != event || seen[o.Unix] {
			continue
		}
		seen[o.Unix] = true
		t := float64(o.Unix) - zero
		if o.AgeS > 0 {
			t = o.readT - o.AgeS
		}
		// Never after the reading that reported it, nor before the run.
		out = append(out, serverMoment{T: max(0, min(t, o.readT)), Value: o.MS})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

// near reports whether a moment falls within redisAlignS of the stall.
func (s clientStall) near(moments []serverMoment) bool {
	for _, m := range moments {
		if m.T >= s.Start-redisAlignS && m.T <= s.End+redisAlignS {
			return true
		}
	}
	return false
}

// stallsNear are the stalls that line up with one of the moments.
func stallsNear(stalls []clientStall, moments []serverMoment) []clientStall {
	var out []clientStall
	for _, s := range stalls {
		if s.near(moments) {
			out = append(out, s)
		}
	}
	return out
}

// stallPeriod is the median time between successive stalls (0 with
// fewer than three), merging those of several workloads at one moment.
func stallPeriod(stalls []clientStall) float64 {
	var starts []float64
	for _, s := range stalls {
		if len(starts) == 0 || s.Start-starts[len(starts)-1] > 1.5*(s.End-s.Start) {
			starts = append(starts, s.Start)
		}
	}
	if len(starts) < 3 {
		return 0
	}
	gaps := make([]float64, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i]-starts[i-1])
	}
	sort.Float64s(gaps)
	return gaps[len(gaps)/2]
}

// momentTimes lists up to n moments' times, for evidence.
func momentTimes(moments []serverMoment, n int) string {
	var parts []string
	for i, m := range moments {
		if i == n {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(moments)))
			break
		}
		parts = append(parts, fmt.Sprintf("%.0f s", m.T))
	}
	return strings.Join(parts, ", ")
}

// sumMoments adds up the moments' values.
func sumMoments(moments []serverMoment) float64 {
	sum := 0.0
	for _, m := range moments {
		sum += m.Value
	}
	return sum
}

// maxMoment is the moment with the largest value.
func maxMoment(moments []serverMoment) serverMoment {
	var best serverMoment
	for _, m := range moments {
		if m.Value > best.Value {
			best = m
		}
	}
	return best
}

// redisSetting is a setting of the run's Redis as recorded at its start
// (an empty value shown as ""), or def when it was not recorded.
func redisSetting(run *timeline.Run, name, def string) string {
	v, ok := run.Manifest.Settings[name]
	switch {
	case !ok:
		return def
	case strings.TrimSpace(v) == "":
		return `""`
	}
	return v
}

// humanUS prints a duration given in µs, in µs below a tenth of a
// millisecond (a Redis command's usual cost).
func humanUS(us float64) string {
	if us < 100 {
		return fmt.Sprintf("%.1f µs", us)
	}
	return diagnose.HumanMS(us / 1000)
}
