package servicerules

import (
	"fmt"
	"math"
	"sort"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// hotTarget reports one target (a shard) whose slow calls take the
// threads of a service shared with other targets: every thread ends up
// waiting on the hot shard, and requests for the others, which their
// shards would answer at once, queue behind them and time out (the
// messenger's hot chat, INCIDENTS.md §4 d). A bulkhead per target caps
// the threads one shard can hold; a breaker fails its calls fast.
type hotTarget struct{ wide }

var _ diagnose.Rule = hotTarget{}

func (hotTarget) ID() string { return "hot-target-threads" }

// Inputs names the sources the rule reads.
func (hotTarget) Inputs() diagnose.Inputs { return inputs }

// A tick is hot when every thread is taken (requests queue) and one
// target's calls hold at least hotShare of the thread time and
// hotBusyShare of the busy threads; hotTicks in a row make a warning.
const (
	hotShare     = 0.8
	hotBusyShare = 0.5
	hotTicks     = 3
)

func (r hotTarget) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		if f, ok := r.check(s); ok {
			out = append(out, f)
		}
	}
	return out
}

// holding is what one target's calls did in one tick.
type holding struct {
	threads float64 // threads held on average (Little's law on the time past the queue)
	served  float64 // requests answered /s
	p50     float64 // median response time (s), queue included
}

func (hotTarget) check(s svc) (diagnose.Finding, bool) {
	byTarget := map[string][]string{}
	for _, w := range s.Workloads {
		byTarget[w.Target] = append(byTarget[w.Target], w.Name)
	}
	if len(byTarget) < 2 {
		return diagnose.Finding{}, false
	}
	var targets []string
	for t := range byTarget {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	ticks := s.ticks()
	tick := diagnose.Tick(s.run)
	queued, age, busy := s.at(svcmetric.QueueLength, ""), s.at(svcmetric.QueueOldestAge, ""), s.at(svcmetric.BusyThreads, "")
	// Each target's holding per tick, from its workloads' intervals
	// ending at the tick.
	hold := map[string]map[float64]holding{}
	for _, target := range targets {
		hold[target] = map[float64]holding{}
		for _, w := range byTarget[target] {
			for _, iv := range s.run.WorkloadIntervals(w) {
				t, ok := nearestTick(ticks, iv.End, tick/2)
				if !ok || iv.End <= iv.Start {
					continue
				}
				// Under FIFO a thread takes the oldest request: what a
				// request waited in the queue is about the oldest age.
				wait := 0.0
				if !s.LIFO {
					wait = age[t]
				}
				p50 := float64(iv.LatencyPct.P50) / 1e6
				h := hold[target][t]
				served := float64(iv.Count) / (iv.End - iv.Start)
				h.threads += served * math.Max(0, p50-wait)
				h.served += served
				h.p50 = math.Max(h.p50, p50)
				hold[target][t] = h
			}
		}
	}
	hotAt := map[float64]string{}
	st, ok := longest(ticks, func(i int) bool {
		t := ticks[i]
		if queued[t] < 1 {
			return false
		}
		sum, top, topTarget := 0.0, 0.0, ""
		for _, target := range targets {
			h := hold[target][t].threads
			sum += h
			if h > top {
				top, topTarget = h, target
			}
		}
		// One target holds most of the thread time, and that time
		// accounts for at least half the busy threads (the estimate is
		// not the remainder of a service idle on every target).
		if sum <= 0 || top < hotShare*sum || top < hotBusyShare*busy[t] {
			return false
		}
		// The same target all along the stretch.
		if i > 0 && hotAt[ticks[i-1]] != "" && hotAt[ticks[i-1]] != topTarget {
			return false
		}
		hotAt[t] = topTarget
		return true
	})
	if !ok || st.ticks < hotTicks {
		return diagnose.Finding{}, false
	}
	hot := hotAt[st.to]
	var held, sum float64
	n := 0
	for _, t := range ticks {
		if t < st.from || t > st.to {
			continue
		}
		for _, target := range targets {
			sum += hold[target][t].threads
		}
		held += hold[hot][t].threads
		n++
	}
	share := held / sum
	meanBusy := mean(busy, ticks, st.from, st.to)
	meanQueued := mean(queued, ticks, st.from, st.to)
	threads := ""
	if s.MaxThreads > 0 {
		threads = fmt.Sprintf(" of %s", diagnose.HumanNum(float64(s.MaxThreads*max(1, s.Instances))))
	}
	ev := []diagnose.Evidence{
		{Series: "service:" + svcmetric.Key(s.Name, svcmetric.BusyThreads, ""), T: st.from, Value: meanBusy,
			Text: fmt.Sprintf("%s threads%s busy, %s requests queued for one, from %.0f s to %.0f s",
				diagnose.HumanNum(meanBusy), threads, diagnose.HumanNum(meanQueued), st.from-tick, st.to)},
		{Series: "workload:" + byTarget[hot][0] + ".latency", T: st.from, Value: share,
			Text: fmt.Sprintf("the calls to %s held about %s of the thread time (response time past the queue × answers/s)", hot, diagnose.HumanPct(share))},
	}
	var others []string
	for _, target := range targets {
		if target == hot {
			continue
		}
		others = append(others, target)
		before, during := p50Outside(s, byTarget[target], st.from-tick, st.to), 0.0
		for _, t := range ticks {
			if t >= st.from && t <= st.to {
				during = math.Max(during, hold[target][t].p50)
			}
		}
		text := fmt.Sprintf("requests to %s answered in %s at the median while it lasted", target, humanS(during))
		if before > 0 {
			text += fmt.Sprintf(", %s outside it", humanS(before))
		}
		ev = append(ev, diagnose.Evidence{Series: "workload:" + byTarget[target][0] + ".latency", T: st.from, Value: during, Text: text})
	}
	remedy := "Give each target its own share of the threads: a bulkhead per target (bulkhead.max_concurrent_calls"
	if s.MaxThreads > 0 {
		remedy += fmt.Sprintf(" well under the %d threads of an instance, e.g. %d", s.MaxThreads, max(1, s.MaxThreads/(2*len(targets))))
	}
	remedy += "), so the hot shard's calls are refused at once when it is full instead of taking every thread; a circuit breaker per target " +
		"(breaker.slow_call_duration under the callers' timeout) to fail the hot shard's calls fast while it is slow; and a local throttle on the hot key."
	if s.Bulkhead > 0 {
		remedy = fmt.Sprintf("The bulkhead of %d calls per target and instance still let %s take the threads: lower it below the threads of an instance ÷ the targets, and open a breaker on slow calls.", s.Bulkhead, hot)
	}
	return diagnose.Finding{
		Severity: diagnose.Warning,
		Start:    st.from - tick,
		End:      st.to,
		Workload: byTarget[hot][0],
		Target:   s.findingTarget(hot),
		Headline: fmt.Sprintf("Calls to %s held %s of the threads of service %s for %.0f s: requests to %s queued behind them",
			hot, diagnose.HumanPct(share), s.Name, st.span(tick), joinAnd(others)),
		Evidence: ev,
		Mechanism: "The service's threads are shared by every target. Calls to the hot shard are slow, so each holds its thread for long, " +
			"and at the surge's rate they soon hold them all; requests for the other shards, which would be answered at once, wait in the " +
			"same queue behind them and time out although their shards are idle.",
		Remedy: remedy,
	}, true
}

// nearestTick is the tick within tol of t.
func nearestTick(ticks []float64, t, tol float64) (float64, bool) {
	i := sort.SearchFloat64s(ticks, t)
	best, ok := 0.0, false
	for _, j := range []int{i - 1, i} {
		if j >= 0 && j < len(ticks) && math.Abs(ticks[j]-t) <= tol && (!ok || math.Abs(ticks[j]-t) < math.Abs(best-t)) {
			best, ok = ticks[j], true
		}
	}
	return best, ok
}

// p50Outside is the median response time (s) of the workloads' intervals
// ending before from or after to: the target's own pace when the threads
// were free (0 if none).
func p50Outside(s svc, workloads []string, from, to float64) float64 {
	var pts []timeline.Point
	for _, w := range workloads {
		for _, iv := range s.run.WorkloadIntervals(w) {
			if (iv.End < from || iv.End > to) && iv.Count > 0 {
				pts = append(pts, timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P50) / 1e6})
			}
		}
	}
	return diagnose.Median(pts, math.Inf(-1), math.Inf(1))
}

// joinAnd writes "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	out := ""
	for i, x := range xs[:len(xs)-1] {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out + " and " + xs[len(xs)-1]
}
