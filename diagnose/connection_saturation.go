package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// connectionSaturation finds transactions waiting for a connection: the
// application pool empty (pool waits, pool timeouts), or the server at
// max_connections ("too many clients", 53300). It tells the two causes of
// an empty pool apart with Little's law: each transaction holds a
// connection for pool ÷ throughput; when most of that time is spent
// executing queries, slow queries exhaust the pool and a bigger one only
// moves the queue into a busy database; when the queries are quick and
// the time goes elsewhere, the pool is simply too small for the arrival
// rate (rate × hold time > pool size).
type connectionSaturation struct{}

var _ Rule = connectionSaturation{}

func (connectionSaturation) ID() string { return "connection-saturation" }

// Inputs names the sources the rule reads.
func (connectionSaturation) Inputs() Inputs {
	return Inputs{Also: []string{pgmetric.Activity, pgmetric.Database, pgmetric.Statements, hostmetric.Host, mariadbmetric.GlobalStatus}}
}

// Thresholds.
const (
	poolWaitFloorUS     = 1000 // a median wait of 1 ms: the pool had no idle connection for most transactions
	poolMinIntervals    = 2
	poolSlowInDB        = 0.5 // share of the hold time spent executing: slow queries
	poolQueryRise       = 2.0 // query time this many times its baseline: it rose
	tooManyClientsCode  = "53300"
	poolTimeoutCritical = 0.01 // transactions failing for want of a connection
)

func (connectionSaturation) Check(run *timeline.Run) []Finding {
	var out []Finding
	for _, w := range run.Manifest.Workloads {
		if f, ok := poolFinding(run, w); ok {
			out = append(out, f)
		}
	}
	// Workloads of an old run without the manifest's list.
	if len(run.Manifest.Workloads) == 0 {
		seen := map[string]bool{}
		for _, iv := range run.Intervals {
			if !seen[iv.Workload] && iv.PoolWait != nil {
				seen[iv.Workload] = true
				if f, ok := poolFinding(run, timeline.WorkloadInfo{Name: iv.Workload}); ok {
					out = append(out, f)
				}
			}
		}
	}
	if f, ok := serverLimitFinding(run); ok {
		out = append(out, f)
	}
	if f, ok := mariadbServerLimitFinding(run); ok {
		out = append(out, f)
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

// eventNear names an event that ended shortly before t: "create-index
// (sql) at 25 s".
func eventNear(run *timeline.Run, t float64) string {
	for _, e := range Events(run) {
		if e.End <= t+Tick(run) && e.End >= t-10 {
			return fmt.Sprintf("%s (%s) at %.0f–%.0f s", e.Name, e.Kind, e.Start, e.End)
		}
	}
	return ""
}

// activeOf is the mean number of a workload's sessions active in the
// database over a window (its application_name's), or all of them when
// the run has one workload; ok is false without the series.
func activeOf(run *timeline.Run, workload string, from, to float64) (float64, bool) {
	pts := run.Series(activitySource, "app."+workloadAppPrefix+workload+".active")
	if len(pts) == 0 && len(run.Manifest.Workloads) <= 1 {
		pts = run.Series(activitySource, pgmetric.AAS)
	}
	st := Over(pts, from, to)
	if st.N == 0 {
		// The series omits a workload with no session at a tick: absent
		// values in a window where the sampler ran are zeros.
		if Over(run.Series(activitySource, pgmetric.AAS), from, to).N > 0 {
			return 0, true
		}
		return 0, false
	}
	n := Over(run.Series(activitySource, pgmetric.AAS), from, to).N
	return st.Mean * float64(st.N) / float64(max(n, st.N)), true
}

// topStatementIn is the statement with the most execution time in a window.
func topStatementIn(run *timeline.Run, from, to float64) (pgmetric.Statement, float64) {
	sum := map[string]*pgmetric.Statement{}
	total := 0.0
	for _, s := range run.SourceSamples(pgmetric.Statements) {
		if s.T < from || s.T > to || s.Error != "" {
			continue
		}
		var top []pgmetric.Statement
		if !Detail(&s, &top) {
			continue
		}
		for _, d := range top {
			x := sum[d.ID()]
			if x == nil {
				x = &pgmetric.Statement{QueryID: d.QueryID, Query: d.Query}
				sum[d.ID()] = x
			}
			x.Calls += d.Calls
			x.TotalMS += d.TotalMS
			total += d.TotalMS
		}
	}
	var best pgmetric.Statement
	for _, d := range sum {
		if d.TotalMS > best.TotalMS {
			best = *d
		}
	}
	if best.Calls > 0 {
		best.MeanMS = best.TotalMS / best.Calls
	}
	share := 0.0
	if total > 0 {
		share = best.TotalMS / total
	}
	return best, share
}

func poolFinding(run *timeline.Run, w timeline.WorkloadInfo) (f Finding, found bool) {
	ivs := run.WorkloadIntervals(w.Name)
	ps, ok := poolWindow(ivs)
	if !ok {
		return Finding{}, false
	}
	pool := w.Pool
	span := math.Max(ps.to-ps.from, 1e-9)
	tps := float64(ps.count) / span
	f = Finding{Severity: Warning, Start: ps.from, End: ps.to, Workload: w.Name,
		References: []string{
			"https://github.com/brettwooldridge/HikariCP/wiki/About-Pool-Sizing",
			"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-MAX-CONNECTIONS",
			"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
		}}
	attempts := ps.count + ps.fail
	if ps.timeouts > 0 && attempts > 0 && float64(ps.timeouts)/float64(attempts) >= poolTimeoutCritical {
		f.Severity = Critical
	}
	clients := max(ps.clients, w.Clients)
	f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".pool_wait", T: ps.from, Value: ps.waitP50,
		Text: fmt.Sprintf("pool wait: median of the intervals' p50 %s, worst p99 %s, in %d of %d intervals from %.0f s (transaction latency p50 %s)",
			humanMS(ps.waitP50), humanMS(ps.waitP99), len(ps.saturated), len(ivs), ps.from, humanMS(ps.latP50))})
	if ps.timeouts > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".errors." + timeline.PoolTimeoutCode, T: ps.to, Value: float64(ps.timeouts),
			Text: fmt.Sprintf("%s transactions gave up waiting for a connection (pool timeout), %s of those attempted", humanNum(float64(ps.timeouts)), humanPct(float64(ps.timeouts)/math.Max(1, float64(attempts))))})
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
	active, haveActive := activeOf(run, w.Name, ps.from, ps.to)
	inDB := 0.0
	if haveActive && pool > 0 {
		inDB = math.Min(1, active/float64(pool))
	}
	dbMS := inDB * holdMS
	if holdMS > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".tps", Value: tps,
			Text: fmt.Sprintf("%s transactions/s through a pool of %d: each holds a connection %s (Little's law: %d ÷ %s/s)",
				humanNum(tps), pool, humanMS(holdMS), pool, humanNum(tps))})
	}
	if haveActive {
		f.Evidence = append(f.Evidence, Evidence{Series: activitySource + ":app." + workloadAppPrefix + w.Name + ".active", Value: active,
			Text: fmt.Sprintf("%s of the pool's %d connections active in the database on average: %s of each transaction's hold time is spent executing queries (%s)",
				humanNum(active), pool, humanPct(inDB), humanMS(dbMS))})
	}
	top, topShare := topStatementIn(run, ps.from, ps.to)
	if top.Calls > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: pgmetric.Series(pgmetric.Statements, top.ID()), Value: top.MeanMS,
			Text: fmt.Sprintf("top statement `%s`: mean %s, %s of execution time in this window", oneLine(top.Query, 120), humanMS(top.MeanMS), humanPct(topShare))})
	}
	cpus := hostCPUs(run)
	aas := Over(run.Series(activitySource, pgmetric.AAS), ps.from, ps.to)
	busy := aas.N > 0 && aas.Mean >= cpus
	// Did query time rise before the pool ran dry?
	rise, baseMS := 0.0, 0.0
	if before := priorIntervals(ivs, ps.from); len(before) >= 3 {
		bFrom, bTo := before[0].Start, before[len(before)-1].End
		bTPS := float64(sumCount(before)) / math.Max(bTo-bFrom, 1e-9)
		if bActive, ok := activeOf(run, w.Name, bFrom, bTo); ok && bTPS > 0 && bActive > 0 {
			baseMS = bActive / bTPS * 1000
			if baseMS > 0 {
				rise = dbMS / baseMS
			}
		}
	}
	if rise > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: activitySource + ":app." + workloadAppPrefix + w.Name + ".active", T: ps.from, Value: rise,
			Text: fmt.Sprintf("database time per transaction %s before the pool ran dry, %s after (×%s)", humanMS(baseMS), humanMS(dbMS), humanNum(rise))})
	}

	defer func() {
		if !ps.resolved {
			return
		}
		f.Severity = Info
		prefix := fmt.Sprintf("Until %.0f s, then the pool kept up", ps.to)
		if ev := eventNear(run, ps.to); ev != "" {
			prefix = fmt.Sprintf("Resolved at %.0f s after %s", ps.to, ev)
			f.Evidence = append(f.Evidence, Evidence{Series: "event:" + strings.Fields(ev)[0], T: ps.to, Text: "the pool waits stopped after event " + ev})
		}
		f.Headline = prefix + ": " + f.Headline
	}()
	switch {
	case haveActive && inDB >= poolSlowInDB:
		f.Headline = fmt.Sprintf("Pool of %d exhausted by slow queries: %s waited a median %s for a connection (p99 %s) because each transaction holds one %s, %s of it executing in the database",
			pool, clientsText(clients, ps.rate, w.Name), humanMS(ps.waitP50), humanMS(ps.waitP99), humanMS(holdMS), humanPct(inDB))
		if top.Calls > 0 {
			f.Headline += fmt.Sprintf(" (top: `%s`, mean %s)", oneLine(top.Query, 60), humanMS(top.MeanMS))
		}
		if busy {
			f.Headline += fmt.Sprintf("; the database is busy (%s active sessions on %s CPUs): a bigger pool is not a fix", humanNum(aas.Mean), humanNum(cpus))
		} else {
			f.Headline += ": a bigger pool is not a fix"
		}
		f.Mechanism = "A connection is lent for the whole transaction, so the pool serves at most pool ÷ query time transactions per second; when queries get slow, that ceiling falls below the arrival rate, the pool runs dry and callers queue for a connection (then time out). " +
			"The pool is the symptom: with more connections the same slow queries would run more at once on the same CPUs and disks, each getting slower, and the queue would move inside the database."
		if rise >= poolQueryRise {
			f.Mechanism += fmt.Sprintf(" Here query time rose first (×%s), and the pool waits followed.", humanNum(rise))
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
			pool, clientsText(clients, ps.rate, w.Name), humanMS(ps.waitP50), humanMS(ps.waitP99))
		if haveActive {
			f.Headline += fmt.Sprintf(" (%s in the database per transaction of %s held)", humanMS(dbMS), humanMS(holdMS))
		}
		if needed > 0 {
			f.Headline += fmt.Sprintf("; Little's law: %s/s × %s = %s connections needed", humanNum(arrival), humanMS(holdMS), humanNum(needed))
			f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".rate", Value: needed,
				Text: fmt.Sprintf("arrivals %s/s × hold %s = %s connections busy on average to keep up; the pool has %d, so the queue grows without bound",
					humanNum(arrival), humanMS(holdMS), humanNum(needed), pool)})
		} else if clients > pool {
			f.Headline += fmt.Sprintf("; %d clients share %d connections", clients, pool)
		}
		f.Mechanism = "Each transaction keeps its connection for the time shown, most of it outside the database (application work, network, think time inside the transaction), so the database is not the bottleneck: the pool is. " +
			"By Little's law a pool must hold arrival rate × hold time connections on average, plus headroom for bursts; below that, requests queue for a connection and wait times grow until they time out."
		if busy {
			f.Mechanism += fmt.Sprintf(" Note the database is busy too (%s active sessions on %s CPUs).", humanNum(aas.Mean), humanNum(cpus))
		}
		size := "larger"
		if needed > 0 {
			size = fmt.Sprintf("at least %.0f (with headroom: %.0f)", math.Ceil(needed), math.Ceil(needed*1.5))
		}
		f.Remedy = fmt.Sprintf("Grow the pool to %s, within max_connections (%s) minus other clients; better, shorten the time a connection is held outside queries: do the application work before BEGIN or after COMMIT, not inside the transaction.",
			size, settingText(run, "max_connections", "?"))
	}
	return f, true
}

func clientsText(clients int, rate float64, workload string) string {
	if rate > 0 {
		return fmt.Sprintf("transactions of %s (%s/s)", workload, humanNum(rate))
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

// refusedByLimit counts an interval's connection attempts the server
// refused while up (at its connection limit), by code: the target's
// classification (Interval.Refused), or in a run recorded before it,
// PostgreSQL's 53300.
func refusedByLimit(iv *timeline.Interval) map[string]int64 {
	if iv.Refused != nil || iv.Unavailable != nil || iv.Lost != nil {
		return iv.Refused
	}
	if n := iv.Errors[tooManyClientsCode]; n > 0 {
		return map[string]int64{tooManyClientsCode: n}
	}
	return nil
}

// refusedWorkload is what one workload's clients met at the limit.
type refusedWorkload struct {
	name           string
	refused        int64            // attempts refused
	codes          map[string]int64 // by code
	clients        int              // clients wanted, most in an interval
	waitingPeak    int              // clients without a session, most at an interval's end
	waitingLast    int              // and at the last interval's end
	refusedClients int              // clients refused at least once (summary)
	first, last    float64
}

// serverLimitFinding reports connections at max_connections (less the
// superuser's reserve) and connection attempts the server refused
// (53300 too many clients): how many of the clients got no session.
func serverLimitFinding(run *timeline.Run) (Finding, bool) {
	var errs int64
	errFrom, errTo := math.Inf(1), math.Inf(-1)
	byWorkload := map[string]*refusedWorkload{}
	for i := range run.Intervals {
		iv := &run.Intervals[i]
		codes := refusedByLimit(iv)
		w := byWorkload[iv.Workload]
		if w == nil {
			w = &refusedWorkload{name: iv.Workload, codes: map[string]int64{}}
			byWorkload[iv.Workload] = w
		}
		w.clients = max(w.clients, iv.Clients)
		w.waitingPeak = max(w.waitingPeak, iv.Unconnected)
		w.waitingLast = iv.Unconnected
		for code, n := range codes {
			if n <= 0 {
				continue
			}
			if w.refused == 0 {
				w.first = iv.Start
			}
			w.refused += n
			w.codes[code] += n
			w.last = iv.End
			errs += n
			errFrom, errTo = min(errFrom, iv.Start), max(errTo, iv.End)
		}
	}
	maxConn := Over(run.Series(pgmetric.Database, pgmetric.MaxConnections), 0, math.Inf(1))
	reserved := Over(run.Series(pgmetric.Database, pgmetric.SuperuserReservedConnections), 0, math.Inf(1))
	conns := run.Series(activitySource, pgmetric.ConnectionsTotal)
	maxText := settingText(run, "max_connections", "")
	if maxConn.N > 0 {
		maxText = humanNum(maxConn.Last)
	}
	reservedText := settingText(run, "superuser_reserved_connections", "")
	if reserved.N > 0 {
		reservedText = humanNum(reserved.Last)
	}
	limit := 0.0
	if maxConn.N > 0 {
		limit = maxConn.Last - reserved.Last
	}
	var atLimit []timeline.Point
	if limit > 0 {
		for _, p := range conns {
			if p.V >= limit {
				atLimit = append(atLimit, p)
			}
		}
	}
	if errs == 0 && len(atLimit) == 0 {
		return Finding{}, false
	}
	f := Finding{Severity: Warning,
		References: []string{
			"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-MAX-CONNECTIONS",
			"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-SUPERUSER-RESERVED-CONNECTIONS",
			"https://github.com/brettwooldridge/HikariCP/wiki/About-Pool-Sizing",
		}}
	if errs > 0 {
		f.Severity = Critical
		f.Start, f.End = errFrom, errTo
	}
	limitText := "max_connections " + cmpOr(maxText, "?")
	if reservedText != "" && reservedText != "0" {
		limitText += fmt.Sprintf(" (%s of them reserved for superusers)", reservedText)
	}
	if len(atLimit) > 0 {
		if errs == 0 {
			f.Start, f.End = math.Max(0, atLimit[0].T-Tick(run)), atLimit[len(atLimit)-1].T
		}
		peak := Over(conns, 0, math.Inf(1))
		f.Evidence = append(f.Evidence, Evidence{Series: pgmetric.Series(activitySource, pgmetric.ConnectionsTotal), T: peak.MaxT, Value: peak.Max,
			Text: fmt.Sprintf("%s connections at %.0f s, at the limit of %s (max_connections %s − %s reserved for superusers), in %d samples",
				humanNum(peak.Max), peak.MaxT, humanNum(limit), humanNum(maxConn.Last), humanNum(reserved.Last), len(atLimit))})
	}
	var refused []*refusedWorkload
	for _, w := range byWorkload {
		if w.refused > 0 {
			if ws := workloadSummary(run, w.name); ws != nil {
				w.refusedClients = ws.RefusedClients
			}
			refused = append(refused, w)
		}
	}
	sort.Slice(refused, func(i, j int) bool { return refused[i].name < refused[j].name })
	var who []string
	for _, w := range refused {
		var codes []string
		for code := range w.codes {
			codes = append(codes, code)
		}
		sort.Slice(codes, func(i, j int) bool {
			return w.codes[codes[i]] > w.codes[codes[j]] || w.codes[codes[i]] == w.codes[codes[j]] && codes[i] < codes[j]
		})
		for _, code := range codes {
			f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.name + ".refused." + code, T: w.last, Value: float64(w.codes[code]),
				Text: fmt.Sprintf("%s connection attempts of %s refused from %.0f s to %.0f s: %s", humanNum(float64(w.codes[code])), w.name, w.first, w.last, refusalText(run, w.name, code))})
		}
		if n := w.clientsRefused(); n > 0 {
			text := fmt.Sprintf("%d of %s's %d clients could not get a connection", n, w.name, w.clients)
			if w.waitingPeak > 0 {
				text += fmt.Sprintf("; up to %d at once were waiting to retry (backing off 10 ms → 1 s), %d at the end", w.waitingPeak, w.waitingLast)
			}
			f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.name + ".unconnected", T: w.last, Value: float64(n), Text: text})
			who = append(who, fmt.Sprintf("%d of the %d clients of %s", n, w.clients, w.name))
		}
	}
	if len(refused) == 1 {
		f.Workload = refused[0].name
	}
	codeText := ""
	if len(refused) > 0 {
		var top string
		var topN int64
		codes := map[string]int64{}
		for _, w := range refused {
			for code, n := range w.codes {
				codes[code] += n
			}
		}
		for code, n := range codes {
			if n > topN || n == topN && code < top {
				top, topN = code, n
			}
		}
		codeText = refusalText(run, refused[0].name, top)
	}
	switch {
	case errs > 0 && len(who) > 0:
		f.Headline = fmt.Sprintf("The server refused %s connections (%s): %s got no connection at %s",
			humanNum(float64(errs)), codeText, strings.Join(who, ", "), limitText)
	case errs > 0:
		f.Headline = fmt.Sprintf("The server refused %s connections (%s): connections reached %s", humanNum(float64(errs)), codeText, limitText)
	default:
		f.Headline = fmt.Sprintf("Connections reached the server's limit (%s usable of max_connections %s): the next client will be refused", humanNum(limit), humanNum(maxConn.Last))
	}
	f.Mechanism = "Every connection is a server process with its own memory, so PostgreSQL caps them at max_connections (minus superuser_reserved_connections kept for administrators); past the cap new connections fail at once with 53300. " +
		"Many clients each opening their own connections, or pools sized without regard to the other pools, reach it long before the server runs out of CPU. " +
		"A refused client gets nothing done: here, as an application's pool would, it retried with growing pauses, so the run measured the clients that got in while the others waited."
	f.Remedy = "Put the clients behind a pool (in the application, or PgBouncer in transaction mode) whose total size across all application instances stays below max_connections − superuser_reserved_connections"
	if limit > 0 {
		f.Remedy += fmt.Sprintf(" (here %s, less the other sessions: monitoring, migrations)", humanNum(limit))
	}
	f.Remedy += "; raise max_connections only with the memory for it (each backend: work_mem and more) and a restart."
	return f, true
}

// clientsRefused is how many of the workload's clients were refused a
// connection: counted by the engine, or at least the most that waited at
// once.
func (w *refusedWorkload) clientsRefused() int {
	return max(w.refusedClients, w.waitingPeak)
}

// refusalText names a refusal's code with what it means: the server's
// message from the summary ("53300 sorry, too many clients already").
func refusalText(run *timeline.Run, workload, code string) string {
	if es := workloadError(run, workload, code); es != nil {
		msg := firstLineOf(es.Message)
		if i := strings.LastIndex(msg, "FATAL: "); i >= 0 {
			msg = msg[i+len("FATAL: "):]
		}
		msg = strings.TrimSpace(strings.TrimSuffix(msg, "(SQLSTATE "+code+")"))
		return code + " " + msg
	}
	if code == tooManyClientsCode {
		return code + " too many clients"
	}
	return code
}

// workloadSummary is a workload's totals, nil without a summary.
func workloadSummary(run *timeline.Run, name string) *timeline.WorkloadSummary {
	if run.Summary == nil {
		return nil
	}
	for i := range run.Summary.Workloads {
		if run.Summary.Workloads[i].Name == name {
			return &run.Summary.Workloads[i]
		}
	}
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
