package diagnose

import (
	"fmt"
	"math"
	"slices"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"

	"github.com/firedrill/firedrill/timeline"
)

// Too few clients for the rate: an arrival-rate workload whose clients are
// all busy cannot start its transactions on time, whatever the database
// does, and its schedule lag grows without bound. firedrill times a
// transaction from when it was due, so its latency then grows with the
// lag: the numbers describe firedrill's queue of due transactions. Little's
// law tells it: the clients are busy (transactions done/s × the time each
// takes) nearly all the time, and that many clients can carry at most
// clients ÷ time-per-call calls a second, below the rate asked.

// Thresholds of the too-few-clients case.
const (
	// genClientsBusy is the share of the workload's clients busy
	// (Little's law) at which they are all taken.
	genClientsBusy = 0.8
)

// clientStretch is a stretch of a rate workload's intervals behind its
// schedule.
type clientStretch struct {
	from, to              float64
	done, rate            float64 // transactions finished (failed included) and asked, per second
	serviceS              float64 // mean time one transaction took once started
	clients               float64 // the clients it had
	firstLagS, lastLagS   float64
	maxLatencyMS, poolPct float64
}

// tooFewClients reports the rate workloads whose clients were all busy
// while their schedule lag grew, except those the generator's own finding
// (gen, nil when none) already names.
func (r generatorLimited) tooFewClients(run *timeline.Run, gen *Finding) []Finding {
	var out []Finding
	span := workloadSpan(run)
	for _, w := range run.Manifest.Workloads {
		// A workload through a service lags by the service's queue, which
		// the service's own rules read (as genBehind leaves it alone).
		if w.Rate <= 0 || w.Service != "" || gen != nil && gen.Workload == w.Name {
			continue
		}
		st, ok := clientBehind(run, w.Name, math.Max(genMinS, genMinShare*span))
		if !ok {
			continue
		}
		out = append(out, r.clientsFinding(run, w.Name, st))
	}
	return out
}

// clientBehind finds the workload's longest stretch of at least need
// seconds with its schedule lag high and growing, its rate not achieved,
// and its clients all busy; intervals that finished nothing (every client
// inside a slow call) continue a stretch.
func clientBehind(run *timeline.Run, workload string, need float64) (clientStretch, bool) {
	ivs := slices.Clone(run.WorkloadIntervals(workload))
	slices.SortFunc(ivs, func(a, b timeline.Interval) int { return cmpFloat(a.Start, b.Start) })
	var best clientStretch
	found := false
	var cur []timeline.Interval
	flush := func() {
		if len(cur) == 0 {
			return
		}
		st, ok := judgeClients(run, cur)
		cur = nil
		if ok && st.to-st.from >= need && (!found || st.to-st.from > best.to-best.from) {
			best, found = st, true
		}
	}
	for _, iv := range ivs {
		behind := iv.Rate > 0 && iv.LagMeanUS/1000 >= genLagMS
		idle := iv.Rate > 0 && iv.Count+iv.Failed == 0 && len(cur) > 0
		if behind || idle {
			cur = append(cur, iv)
			continue
		}
		flush()
	}
	flush()
	return best, found
}

// judgeClients sums a stretch of intervals behind schedule and says
// whether its clients were the limit.
func judgeClients(run *timeline.Run, ivs []timeline.Interval) (clientStretch, bool) {
	st := clientStretch{from: ivs[0].Start, to: ivs[len(ivs)-1].End, firstLagS: -1}
	var n, rateSum, clientSum, serviceSum, poolSum float64
	for _, iv := range ivs {
		done := float64(iv.Count + iv.Failed)
		n += done
		rateSum += iv.Rate * (iv.End - iv.Start)
		clientSum += float64(iv.Clients) * (iv.End - iv.Start)
		if iv.Count > 0 {
			lagS := iv.LagMeanUS / 1e6
			if st.firstLagS < 0 {
				st.firstLagS = lagS
			}
			st.lastLagS = lagS
			// Latency counts from when the transaction was due: what is
			// left after the lag is the time it took once started.
			serviceSum += float64(iv.Count) * math.Max(0, float64(iv.LatencyPct.P50)/1e6-lagS)
			poolSum += float64(iv.Count) * float64(iv.PoolWaitPct.P50) / 1e6
		}
		st.maxLatencyMS = math.Max(st.maxLatencyMS, float64(iv.LatencyPct.Max)/1000)
	}
	dur := st.to - st.from
	var succeeded float64
	for _, iv := range ivs {
		succeeded += float64(iv.Count)
	}
	if dur <= 0 || succeeded == 0 {
		return st, false
	}
	st.done, st.rate, st.clients = n/dur, rateSum/dur, clientSum/dur
	st.serviceS = serviceSum / succeeded
	poolS := poolSum / succeeded
	if st.clients <= 0 || st.done >= genRateShare*st.rate || st.lastLagS <= st.firstLagS {
		return st, false
	}
	// Little's law: the clients' busy share, and the share of it spent
	// waiting for a pooled connection (the application's pool is then the
	// limit: connection-saturation's).
	busy := st.done * st.serviceS / st.clients
	st.poolPct = 100 * st.done * poolS / st.clients
	return st, busy >= genClientsBusy && st.poolPct < 100*genPoolShare
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// clientsFinding says that the workload's clients were too few for its rate.
func (r generatorLimited) clientsFinding(run *timeline.Run, workload string, st clientStretch) Finding {
	f := Finding{Rule: r.ID(), Severity: Warning, Start: st.from, End: st.to, Workload: workload}
	clients := math.Round(st.clients)
	clientWord, were := "clients", "were"
	if clients == 1 {
		clientWord, were = "client", "was"
	}
	carry := st.clients / math.Max(st.serviceS, 1e-9)
	need := math.Ceil(st.rate * st.serviceS / genClientsBusy)
	f.Headline = fmt.Sprintf("%s had too few clients for its rate — its latencies are firedrill's queue, not the database's: "+
		"its %s %s %s busy all the time on calls of %s each, which carry at most %s/s of the %s/s asked; "+
		"it did %s/s and its schedule lag grew from %s to %s over %s",
		workload, HumanNum(clients), clientWord, were, HumanMS(1000*st.serviceS), rateText(carry), rateText(st.rate),
		rateText(st.done), SecondsText(st.firstLagS), SecondsText(st.lastLagS), SecondsText(st.to-st.from))
	f.Evidence = append(f.Evidence,
		Evidence{Series: "workload:" + workload + ".lag_mean_us", T: st.to, Value: 1e6 * st.lastLagS,
			Text: fmt.Sprintf("%s: mean schedule lag %s → %s over the window: transactions start later and later than due", workload, SecondsText(st.firstLagS), SecondsText(st.lastLagS))},
		Evidence{Series: "workload:" + workload + ".tps", T: st.to, Value: st.done,
			Text: fmt.Sprintf("%s: %s tx/s done (failed included) against a rate of %s", workload, rateText(st.done), rateText(st.rate))},
		Evidence{Series: "workload:" + workload + ".p50_ms", T: st.to, Value: 1000 * st.serviceS,
			Text: fmt.Sprintf("each transaction took %s once started (median latency less the schedule lag); %s × %s = %.1f of %s %s busy (Little's law)",
				HumanMS(1000*st.serviceS), rateText(st.done), HumanMS(1000*st.serviceS), st.done*st.serviceS, HumanNum(clients), clientWord)},
		Evidence{Series: "workload:" + workload + ".max_latency", T: st.to, Value: st.maxLatencyMS,
			Text: fmt.Sprintf("latency from the due time up to %s: the lag counts in it", HumanMS(st.maxLatencyMS))})
	if cpu := Over(run.Series(hostmetric.Self, hostmetric.SelfCPU), st.from, st.to+1); cpu.N > 0 {
		text := fmt.Sprintf("firedrill's CPU: median %.2f cores, max %.2f", Median(run.Series(hostmetric.Self, hostmetric.SelfCPU), st.from, st.to+1), cpu.Max)
		if limit := cpuLimit(run, st.from, st.to); limit != "" {
			text += "; the cores it may use: " + limit
		}
		f.Evidence = append(f.Evidence, Evidence{Series: "firedrill:cpu", T: cpu.MaxT, Value: cpu.Max, Text: text})
	}
	f.Mechanism = "Under an arrival rate firedrill starts each transaction when it is due, on a free client of the " +
		"workload, and times it from the due time. When every client is inside a call, due transactions queue in " +
		"firedrill: the schedule lag grows as long as the rate exceeds clients ÷ time per call, and the latency " +
		"measured is mostly that queue. The database sees only as many calls at once as there are clients."
	f.Remedy = fmt.Sprintf("Give %s enough clients for its rate: at %s per call, %s/s needs about %s (rate × time per call, "+
		"with room to spare), or ask for a lower rate. If the calls themselves are slower than they should be, the "+
		"database's findings say why; more clients then add load to that.", workload, HumanMS(1000*st.serviceS), rateText(st.rate), HumanNum(need))
	f.References = []string{"https://en.wikipedia.org/wiki/Little%27s_law"}
	return f
}
