package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// Pool saturation: transactions waiting for a connection of the
// application's pool (pool waits, pool timeouts). Little's law tells the
// two causes of an empty pool apart: each transaction holds a connection
// for pool ÷ throughput; when most of that time is spent executing
// queries, slow queries exhaust the pool and a bigger one only moves the
// queue into a busy database; when the queries are quick and the time
// goes elsewhere, the pool is simply too small for the arrival rate
// (rate × hold time > pool size). Each kind's connection-saturation rule
// reports these beside what its server says of its own limit.

// Thresholds of pool saturation.
const (
	poolWaitFloorUS     = 1000 // a median wait of 1 ms: the pool had no idle connection for most transactions
	poolMinIntervals    = 2
	poolSlowInDB        = 0.5  // share of the hold time spent executing: slow queries
	poolQueryRise       = 2.0  // query time this many times its baseline: it rose
	poolTimeoutCritical = 0.01 // transactions failing for want of a connection
)

// PoolServer is what a kind's samples tell of the database's side of a
// saturated pool; a zero PoolServer knows nothing of it.
type PoolServer struct {
	// Active is the mean number of a workload's sessions active in the
	// database over [from, to), and the series that says so; ok is false
	// without it.
	Active func(run *timeline.Run, workload string, from, to float64) (mean float64, series string, ok bool)
	// Busy is the number of sessions active in the database over [from, to).
	Busy func(run *timeline.Run, from, to float64) Stats
	// TopStatement is the statement with the most execution time over
	// [from, to); ok is false without one.
	TopStatement func(run *timeline.Run, from, to float64) (top PoolStatement, ok bool)
	// References are the kind's pages on its connections, after the pool
	// sizing one every pool finding cites.
	References []string
	// LimitSetting is the kind's setting that caps the server's
	// connections ("max_connections", "maxclients"), which the remedy
	// names with its value in the run; empty, the remedy names none.
	LimitSetting string
}

// PoolStatement is the statement a saturated pool spent its time on.
type PoolStatement struct {
	Series string  // the series it comes from
	Query  string  // its text
	MeanMS float64 // mean execution time
	Share  float64 // its share of the execution time in the window
}

// PoolFindings reports, per workload, a pool that ran dry, with what srv
// tells of the database's side.
func PoolFindings(run *timeline.Run, srv PoolServer) []Finding {
	var out []Finding
	for _, w := range run.Manifest.Workloads {
		if f, ok := poolFinding(run, w, srv); ok {
			out = append(out, f)
		}
	}
	// Workloads of an old run without the manifest's list.
	if len(run.Manifest.Workloads) == 0 {
		seen := map[string]bool{}
		for _, iv := range run.Intervals {
			if !seen[iv.Workload] && iv.PoolWait != nil {
				seen[iv.Workload] = true
				if f, ok := poolFinding(run, timeline.WorkloadInfo{Name: iv.Workload}, srv); ok {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// poolStats is a workload's pool over a window.
type poolStats struct {
	saturated             []timeline.Interval
	from, to              float64
	waitP50, waitP99      float64 // ms: median of the intervals' p50, largest p99
	latP50                float64 // ms
	timeouts, count, fail int64
	rate                  float64 // scheduled arrivals/s (open model), 0 closed
	clients               int
	resolved              bool // the waits stopped for good before the end
}

func poolWindow(ivs []timeline.Interval) (poolStats, bool) {
	var s poolStats
	var waits, lats []timeline.Point
	// Episodes: runs of saturated intervals, gaps of up to two merged.
	saturated := func(iv timeline.Interval) bool {
		return iv.PoolWaitPct.P50 >= poolWaitFloorUS || iv.Errors[timeline.PoolTimeoutCode] > 0
	}
	type episode struct{ first, last, n int }
	var eps []episode
	for i, iv := range ivs {
		if !saturated(iv) {
			continue
		}
		if len(eps) > 0 && i-eps[len(eps)-1].last <= 3 {
			eps[len(eps)-1].last = i
			eps[len(eps)-1].n++
			continue
		}
		eps = append(eps, episode{i, i, 1})
	}
	best := -1
	for i, e := range eps {
		if e.n >= poolMinIntervals && (best < 0 || e.n > eps[best].n) {
			best = i
		}
	}
	if best < 0 {
		return s, false
	}
	ep := eps[best]
	for _, iv := range ivs[ep.first : ep.last+1] {
		if saturated(iv) {
			s.saturated = append(s.saturated, iv)
		}
	}
	s.from, s.to = ivs[ep.first].Start, ivs[ep.last].End
	for _, iv := range ivs[ep.first : ep.last+1] {
		s.timeouts += iv.Errors[timeline.PoolTimeoutCode]
		s.count += iv.Count
		s.fail += iv.Failed
		s.rate = max(s.rate, iv.Rate)
		s.clients = max(s.clients, iv.Clients)
		waits = append(waits, timeline.Point{T: iv.End, V: float64(iv.PoolWaitPct.P50) / 1000})
		s.waitP99 = math.Max(s.waitP99, float64(iv.PoolWaitPct.P99)/1000)
		if iv.Count > 0 {
			lats = append(lats, timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P50) / 1000})
		}
	}
	s.waitP50 = Median(waits, math.Inf(-1), math.Inf(1))
	s.latP50 = Median(lats, math.Inf(-1), math.Inf(1))
	// A few waits in a long run are no saturation.
	if float64(len(s.saturated)) < 0.1*float64(len(ivs)) && s.timeouts == 0 {
		return s, false
	}
	// Waits that stopped for good well before the end: resolved.
	after := ivs[ep.last+1:]
	if len(after) >= max(5, len(ivs)/4) {
		n := 0
		for _, iv := range after {
			if saturated(iv) {
				n++
			}
		}
		s.resolved = float64(n) <= 0.2*float64(len(after))
	}
	return s, true
}

func poolFinding(run *timeline.Run, w timeline.WorkloadInfo, srv PoolServer) (f Finding, found bool) {
	ivs := run.WorkloadIntervals(w.Name)
	ps, ok := poolWindow(ivs)
	if !ok {
		return Finding{}, false
	}
	pool := w.Pool
	span := math.Max(ps.to-ps.from, 1e-9)
	tps := float64(ps.count) / span
	f = Finding{Severity: Warning, Start: ps.from, End: ps.to, Workload: w.Name,
		References: append([]string{"https://github.com/brettwooldridge/HikariCP/wiki/About-Pool-Sizing"}, srv.References...)}
	attempts := ps.count + ps.fail
	if ps.timeouts > 0 && attempts > 0 && float64(ps.timeouts)/float64(attempts) >= poolTimeoutCritical {
		f.Severity = Critical
	}
	clients := max(ps.clients, w.Clients)
	f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".pool_wait", T: ps.from, Value: ps.waitP50,
		Text: fmt.Sprintf("pool wait: median of the intervals' p50 %s, worst p99 %s, in %d of %d intervals from %.0f s (transaction latency p50 %s)",
			HumanMS(ps.waitP50), HumanMS(ps.waitP99), len(ps.saturated), len(ivs), ps.from, HumanMS(ps.latP50))})
	if ps.timeouts > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".errors." + timeline.PoolTimeoutCode, T: ps.to, Value: float64(ps.timeouts),
			Text: fmt.Sprintf("%s transactions gave up waiting for a connection (pool timeout), %s of those attempted", HumanNum(float64(ps.timeouts)), HumanPct(float64(ps.timeouts)/math.Max(1, float64(attempts))))})
	}

	// Little's law: while the pool is empty, every connection is lent, so
	// each transaction holds one for pool ÷ throughput.
	// The median of the saturated intervals' throughput, so that an
	// interval in which the cause went away does not skew it.
	var rates []timeline.Point
	for _, iv := range ps.saturated {
		if iv.End > iv.Start {
			rates = append(rates, timeline.Point{T: iv.End, V: iv.TPS()})
		}
	}
	if m := Median(rates, math.Inf(-1), math.Inf(1)); m > 0 {
		tps = m
	}
	holdMS := 0.0
	if pool > 0 && tps > 0 {
		holdMS = float64(pool) / tps * 1000
	}
	// Active sessions ÷ throughput is the time in the database per
	// transaction; over the hold time (pool ÷ throughput) it is the share
	// of the pool's connections busy executing.
	active, activeSeries, haveActive := srv.active(run, w.Name, ps.from, ps.to)
	inDB := 0.0
	if haveActive && pool > 0 {
		inDB = math.Min(1, active/float64(pool))
	}
	dbMS := inDB * holdMS
	if holdMS > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".tps", Value: tps,
			Text: fmt.Sprintf("%s transactions/s through a pool of %d: each holds a connection %s (Little's law: %d ÷ %s/s)",
				HumanNum(tps), pool, HumanMS(holdMS), pool, HumanNum(tps))})
	}
	if haveActive {
		f.Evidence = append(f.Evidence, Evidence{Series: activeSeries, Value: active,
			Text: fmt.Sprintf("%s of the pool's %d connections active in the database on average: %s of each transaction's hold time is spent executing queries (%s)",
				HumanNum(active), pool, HumanPct(inDB), HumanMS(dbMS))})
	}
	top, haveTop := srv.topStatement(run, ps.from, ps.to)
	if haveTop {
		f.Evidence = append(f.Evidence, Evidence{Series: top.Series, Value: top.MeanMS,
			Text: fmt.Sprintf("top statement `%s`: mean %s, %s of execution time in this window", OneLine(top.Query, 120), HumanMS(top.MeanMS), HumanPct(top.Share))})
	}
	cpus := HostCPUs(run)
	aas := srv.busy(run, ps.from, ps.to)
	busy := aas.N > 0 && aas.Mean >= cpus
	// Did query time rise before the pool ran dry?
	rise, baseMS := 0.0, 0.0
	if before := priorIntervals(ivs, ps.from); len(before) >= 3 {
		bFrom, bTo := before[0].Start, before[len(before)-1].End
		bTPS := float64(sumCount(before)) / math.Max(bTo-bFrom, 1e-9)
		if bActive, _, ok := srv.active(run, w.Name, bFrom, bTo); ok && bTPS > 0 && bActive > 0 {
			baseMS = bActive / bTPS * 1000
			if baseMS > 0 {
				rise = dbMS / baseMS
			}
		}
	}
	if rise > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: activeSeries, T: ps.from, Value: rise,
			Text: fmt.Sprintf("database time per transaction %s before the pool ran dry, %s after (×%s)", HumanMS(baseMS), HumanMS(dbMS), HumanNum(rise))})
	}

	defer func() {
		if !ps.resolved {
			return
		}
		f.Severity, f.Resolved = Info, ps.to
		prefix := fmt.Sprintf("Until %.0f s, then the pool kept up", ps.to)
		if ev := EventNear(run, ps.to); ev != "" {
			prefix = fmt.Sprintf("Resolved at %.0f s after %s", ps.to, ev)
			f.Evidence = append(f.Evidence, Evidence{Series: "event:" + strings.Fields(ev)[0], T: ps.to, Text: "the pool waits stopped after event " + ev})
		}
		f.Headline = prefix + ": " + f.Headline
	}()
	switch {
	case haveActive && inDB >= poolSlowInDB:
		f.Headline = fmt.Sprintf("Pool of %d exhausted by slow queries: %s waited a median %s for a connection (p99 %s) because each transaction holds one %s, %s of it executing in the database",
			pool, clientsText(clients, ps.rate, w.Name), HumanMS(ps.waitP50), HumanMS(ps.waitP99), HumanMS(holdMS), HumanPct(inDB))
		if haveTop {
			f.Headline += fmt.Sprintf(" (top: `%s`, mean %s)", OneLine(top.Query, 60), HumanMS(top.MeanMS))
		}
		if busy {
			f.Headline += fmt.Sprintf("; the database is busy (%s active sessions on %s CPUs): a bigger pool is not a fix", HumanNum(aas.Mean), HumanNum(cpus))
		} else {
			f.Headline += ": a bigger pool is not a fix"
		}
		f.Mechanism = "A connection is lent for the whole transaction, so the pool serves at most pool ÷ query time transactions per second; when queries get slow, that ceiling falls below the arrival rate, the pool runs dry and callers queue for a connection (then time out). " +
			"The pool is the symptom: with more connections the same slow queries would run more at once on the same CPUs and disks, each getting slower, and the queue would move inside the database."
		if rise >= poolQueryRise {
			f.Mechanism += fmt.Sprintf(" Here query time rose first (×%s), and the pool waits followed.", HumanNum(rise))
		}
		f.Remedy = "Make the queries fast first: the top statement above (see the missing-index finding if it scans a table; EXPLAIN it), then size the pool for the fast query time. " +
			"Keep the pool near what the database can run at once (roughly cores × 2 to 4 for CPU-bound work) and set a pool timeout so callers fail fast instead of piling up."
	default:
		needed := 0.0
		arrival := ps.rate
		if arrival > 0 && holdMS > 0 {
			needed = arrival * holdMS / 1000
		}
		f.Headline = fmt.Sprintf("Pool of %d too small for the load: %s waited a median %s for a connection (p99 %s) while queries are quick",
			pool, clientsText(clients, ps.rate, w.Name), HumanMS(ps.waitP50), HumanMS(ps.waitP99))
		if haveActive {
			f.Headline += fmt.Sprintf(" (%s in the database per transaction of %s held)", HumanMS(dbMS), HumanMS(holdMS))
		}
		if needed > 0 {
			f.Headline += fmt.Sprintf("; Little's law: %s/s × %s = %s connections needed", HumanNum(arrival), HumanMS(holdMS), HumanNum(needed))
			f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".rate", Value: needed,
				Text: fmt.Sprintf("arrivals %s/s × hold %s = %s connections busy on average to keep up; the pool has %d, so the queue grows without bound",
					HumanNum(arrival), HumanMS(holdMS), HumanNum(needed), pool)})
		} else if clients > pool {
			f.Headline += fmt.Sprintf("; %d clients share %d connections", clients, pool)
		}
		f.Mechanism = "Each transaction keeps its connection for the time shown, most of it outside the database (application work, network, think time inside the transaction), so the database is not the bottleneck: the pool is. " +
			"By Little's law a pool must hold arrival rate × hold time connections on average, plus headroom for bursts; below that, requests queue for a connection and wait times grow until they time out."
		if busy {
			f.Mechanism += fmt.Sprintf(" Note the database is busy too (%s active sessions on %s CPUs).", HumanNum(aas.Mean), HumanNum(cpus))
		}
		size := "larger"
		if needed > 0 {
			size = fmt.Sprintf("at least %.0f (with headroom: %.0f)", math.Ceil(needed), math.Ceil(needed*1.5))
		}
		within := ""
		if srv.LimitSetting != "" {
			within = ", within " + srv.LimitSetting
			if v := Setting(run, srv.LimitSetting, ""); v != "" {
				within += " (" + v + ")"
			}
			within += " minus other clients"
		}
		f.Remedy = fmt.Sprintf("Grow the pool to %s%s; better, shorten the time a connection is held outside queries: do the application work before BEGIN or after COMMIT, not inside the transaction.",
			size, within)
	}
	return f, true
}

// OneCause folds into server, a finding of the server's own connection
// limit, the pool findings whose workload the server refused connections
// (Interval.Refused) while its pool ran dry: a pool that cannot open
// connections runs dry for that cause, and one cause gets one finding.
// Their waits become evidence of server; the other pool findings (a pool
// too small or held by slow queries beside a full server) are returned
// as they are.
func OneCause(run *timeline.Run, server Finding, pools []Finding) (Finding, []Finding) {
	var rest []Finding
	for _, p := range pools {
		if !refusedWithin(run, p.Workload, p.Start, p.End) {
			rest = append(rest, p)
			continue
		}
		if len(p.Evidence) > 0 {
			ev := p.Evidence[0]
			ev.Text = "the pool ran dry while the server refused its connections: " + ev.Text
			server.Evidence = append(server.Evidence, ev)
		}
		server.Start, server.End = math.Min(server.Start, p.Start), math.Max(server.End, p.End)
	}
	return server, rest
}

// refusedWithin reports whether the server refused a connection of
// workload's clients in [from, to].
func refusedWithin(run *timeline.Run, workload string, from, to float64) bool {
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.End < from || iv.Start > to {
			continue
		}
		for _, n := range iv.Refused {
			if n > 0 {
				return true
			}
		}
	}
	return false
}

func clientsText(clients int, rate float64, workload string) string {
	if rate > 0 {
		return fmt.Sprintf("transactions of %s (%s/s)", workload, HumanNum(rate))
	}
	if clients > 0 {
		return fmt.Sprintf("%d clients of %s", clients, workload)
	}
	return "transactions of " + workload
}

func priorIntervals(ivs []timeline.Interval, before float64) []timeline.Interval {
	var out []timeline.Interval
	for _, iv := range ivs {
		if iv.End <= before && iv.Count > 0 {
			out = append(out, iv)
		}
	}
	return out
}

func sumCount(ivs []timeline.Interval) int64 {
	var n int64
	for _, iv := range ivs {
		n += iv.Count
	}
	return n
}

func (srv PoolServer) active(run *timeline.Run, workload string, from, to float64) (float64, string, bool) {
	if srv.Active == nil {
		return 0, "", false
	}
	return srv.Active(run, workload, from, to)
}

func (srv PoolServer) busy(run *timeline.Run, from, to float64) Stats {
	if srv.Busy == nil {
		return Stats{}
	}
	return srv.Busy(run, from, to)
}

func (srv PoolServer) topStatement(run *timeline.Run, from, to float64) (PoolStatement, bool) {
	if srv.TopStatement == nil {
		return PoolStatement{}, false
	}
	return srv.TopStatement(run, from, to)
}
