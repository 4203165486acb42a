package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// lockContention finds sessions queueing for heavyweight locks on a few
// rows or tables (hot rows), names the head of the blocking chains (the
// root blocker: what it is and what it is doing) and the statements that
// wait. It judges by the share of active time spent in Lock waits and the
// length of the queue, not by the mere presence of waits: a few sessions
// briefly waiting for a branch row, as pgbench's TPC-B-like does, are the
// normal background of an update-heavy workload.
type lockContention struct{}

var _ diagnose.Rule = lockContention{}

func (lockContention) ID() string { return "lock-contention" }

// Inputs names the sources the rule reads.
func (lockContention) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Activity, pgmetric.Locks}, Also: []string{pgmetric.Database, hostmetric.Host, pgmetric.ForeignKeys, pgmetric.Settings}}
}

// Thresholds, as shares of active time and numbers of sessions. A queue
// is three or more sessions waiting on average: with one or two, a lock
// is being handed over, not queued for.
const (
	contentionInfoShare     = 0.25 // Lock waits this much of active time: worth a note
	contentionWarnShare     = 0.5  // half of the time in the database is spent waiting for locks
	contentionCriticalShare = 0.8
	contentionQueue         = 3.0 // mean sessions waiting for locks that make a queue
	contentionLongWaitS     = 5.0 // a lock held this long is held by something not working
	// contentionDipS: contention that eases for up to this long and comes
	// back is one contention (fklock's inserts and payments drift between
	// five keys and ease for a few seconds at a time), not two.
	contentionDipS = 10.0
)

func isLockWait(event string) bool { return strings.HasPrefix(event, "Lock:") }

// contendedWindow finds the contention: the stretches in which Lock
// waits are at least half of active time (rolling over three samples),
// those less than contentionDipS apart joined into one, the one with the
// most such samples chosen; the whole load window when none.
func contendedWindow(run *timeline.Run) (from, to float64, found bool) {
	lf, lt := diagnose.LoadWindow(run)
	type pt struct{ t, lock, aas float64 }
	var pts []pt
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != activitySource || s.Error != "" || s.T < lf || s.T >= lt {
			continue
		}
		aas, ok := s.Values["aas"]
		if !ok {
			continue
		}
		lock := 0.0
		for k, v := range s.Values {
			if strings.HasPrefix(k, "wait.Lock:") {
				lock += v
			}
		}
		pts = append(pts, pt{s.T, lock, aas})
	}
	// The stretches of contended samples, then those a short dip splits
	// merged back into one: the window covers the contention, not only
	// its longest unbroken part.
	type stretch struct{ first, last, contended int }
	var stretches []stretch
	start := -1
	for i := range pts {
		lo, hi := max(0, i-1), min(len(pts)-1, i+1)
		lock, aas := 0.0, 0.0
		for j := lo; j <= hi; j++ {
			lock += pts[j].lock
			aas += pts[j].aas
		}
		contended := aas > 0 && lock/aas >= contentionWarnShare && lock/float64(hi-lo+1) >= 1
		switch {
		case contended && start < 0:
			start = i
		case !contended && start >= 0:
			stretches = append(stretches, stretch{start, i - 1, i - start})
			start = -1
		}
	}
	if start >= 0 {
		stretches = append(stretches, stretch{start, len(pts) - 1, len(pts) - start})
	}
	var merged []stretch
	for _, st := range stretches {
		if n := len(merged); n > 0 && pts[st.first].t-pts[merged[n-1].last].t <= contentionDipS {
			merged[n-1].last = st.last
			merged[n-1].contended += st.contended
			continue
		}
		merged = append(merged, st)
	}
	best := stretch{contended: 0}
	for _, st := range merged {
		if st.contended > best.contended {
			best = st
		}
	}
	if best.contended >= 3 {
		return pts[best.first].t, pts[best.last].t + 1e-9, true
	}
	return lf, lt, false
}

// contentionStretchS is the span over which a queue counts at its worst:
// a queue that held this long within the window is one, however the
// window's whole average dilutes it (the window grows as contention
// comes back, and what a live pass saw must not be averaged away).
const contentionStretchS = 10.0

// worstStretch is the lock waits' share of active time and the mean queue
// over the contentionStretchS within [from, to) whose queue was longest;
// zeros for a window shorter than that.
func worstStretch(run *timeline.Run, from, to float64) (share, queue float64) {
	if to-from < contentionStretchS {
		return 0, 0
	}
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != activitySource || s.T < from || s.T+contentionStretchS > to {
			continue
		}
		w := waitsIn(run, s.T, s.T+contentionStretchS, isLockWait)
		if q := w.MeanWaiting(); w.Samples > 0 && q > queue {
			share, queue = w.Share(), q
		}
	}
	return share, queue
}

// rootBlocker is a session at the head of blocking chains.
type rootBlocker struct {
	PID        int
	App, State string
	Query      string
	Samples    int     // samples in which it headed a chain
	MaxWaiters int     // most sessions waiting behind it in one sample
	FirstT     float64 // when it was first seen heading one
}

// hotSpot is what waiting sessions wait on: a statement, the relation,
// and the key values its WHERE clause had (when the text shows them).
type hotSpot struct {
	Statement string
	Relation  string
	Waits     int
	Keys      map[string]int // WHERE values → waits
}

// topKey is the most waited-for key value and its share of the spot's waits.
func (h hotSpot) topKey() (string, float64) {
	top := topKeys(h.Keys, 1)
	if len(top) == 0 || h.Waits == 0 {
		return "", 0
	}
	return top[0], float64(h.Keys[top[0]]) / float64(h.Waits)
}

// lockChains reads the locks sampler's pairs in a window: the root
// blockers and the hot spots, with the number of waits seen.
func lockChains(run *timeline.Run, from, to float64) (roots []*rootBlocker, spots []hotSpot, waits int) {
	byPID := map[int]*rootBlocker{}
	spotIndex := map[[2]string]*hotSpot{}
	for _, s := range run.SourceSamples(pgmetric.Locks) {
		if s.T < from || s.T >= to {
			continue
		}
		var pairs []pgmetric.BlockingPair
		if !diagnose.Detail(&s, &pairs) {
			continue
		}
		blocked := map[int]bool{}
		behind := map[int]map[int]bool{}
		seenWaiter := map[int]bool{}
		for _, p := range pairs {
			blocked[p.BlockedPID] = true
		}
		for _, p := range pairs {
			if !seenWaiter[p.BlockedPID] {
				seenWaiter[p.BlockedPID] = true
				waits++
				// The shape is cut after the literals are out, so that the
				// same statement with longer or shorter values groups once.
				stmt, keys := sqlcheck.SplitLiterals(diagnose.OneLine(p.BlockedQuery, 1000))
				stmt = diagnose.OneLine(stmt, 120)
				k := [2]string{stmt, p.Relation}
				h := spotIndex[k]
				if h == nil {
					h = &hotSpot{Statement: stmt, Relation: p.Relation, Keys: map[string]int{}}
					spotIndex[k] = h
				}
				h.Waits++
				if keys != "" {
					h.Keys[keys]++
				}
			}
			if blocked[p.BlockingPID] {
				continue
			}
			r := byPID[p.BlockingPID]
			if r == nil {
				r = &rootBlocker{PID: p.BlockingPID, FirstT: s.T}
				byPID[p.BlockingPID] = r
			}
			r.App, r.State, r.Query = p.BlockingApp, p.BlockingState, p.BlockingQuery
			if behind[p.BlockingPID] == nil {
				behind[p.BlockingPID] = map[int]bool{}
				r.Samples++
			}
			behind[p.BlockingPID][p.BlockedPID] = true
		}
		// Sessions waiting behind a waiter count for the chain's head.
		for pid := range behind {
			n := countBehind(pairs, pid)
			if n > byPID[pid].MaxWaiters {
				byPID[pid].MaxWaiters = n
			}
		}
	}
	for _, r := range byPID {
		roots = append(roots, r)
	}
	sort.Slice(roots, func(i, j int) bool {
		if roots[i].Samples != roots[j].Samples {
			return roots[i].Samples > roots[j].Samples
		}
		return roots[i].PID < roots[j].PID
	})
	for _, h := range spotIndex {
		spots = append(spots, *h)
	}
	sort.Slice(spots, func(i, j int) bool {
		if spots[i].Waits != spots[j].Waits {
			return spots[i].Waits > spots[j].Waits
		}
		return spots[i].Statement < spots[j].Statement
	})
	return roots, spots, waits
}

// countBehind counts the sessions waiting, directly or through others,
// for pid.
func countBehind(pairs []pgmetric.BlockingPair, pid int) int {
	seen := map[int]bool{}
	frontier := []int{pid}
	for len(frontier) > 0 {
		cur := frontier[0]
		frontier = frontier[1:]
		for _, p := range pairs {
			if p.BlockingPID == cur && !seen[p.BlockedPID] && p.BlockedPID != pid {
				seen[p.BlockedPID] = true
				frontier = append(frontier, p.BlockedPID)
			}
		}
	}
	return len(seen)
}

func (lockContention) Check(run *timeline.Run) []diagnose.Finding {
	from, to, _ := contendedWindow(run)
	w := waitsIn(run, from, to, isLockWait)
	if w.Samples == 0 || w.Waiting == 0 {
		return nil
	}
	share, queue := w.Share(), w.MeanWaiting()
	if share < contentionInfoShare || queue < 0.5 {
		return nil
	}
	severity := diagnose.Info
	if worstShare, worstQueue := worstStretch(run, from, to); (share >= contentionWarnShare && queue >= contentionQueue) ||
		(worstShare >= contentionWarnShare && worstQueue >= contentionQueue) {
		severity = diagnose.Warning
	}
	maxWait := diagnose.Over(run.Series(pgmetric.Locks, pgmetric.LocksMaxWaitS), from, to)
	longWaits := maxWait.N > 0 && diagnose.Median(run.Series(pgmetric.Locks, pgmetric.LocksMaxWaitS), from, to) >= contentionLongWaitS
	lockTimeouts := errorsIn(run, from, to, "55P03", "57014")
	if severity == diagnose.Warning && share >= contentionCriticalShare && (longWaits || lockTimeouts > 0) {
		severity = diagnose.Critical
	}
	deadlocks := diagnose.SumPoints(run.Series(pgmetric.Database, pgmetric.Deadlocks), from, to+diagnose.Tick(run))
	if deadlocks > 0 && severity == diagnose.Critical {
		severity = diagnose.Warning // the deadlock rule reports the cycles
	}

	roots, spots, waits := lockChains(run, from, to)
	f := diagnose.Finding{Severity: severity, Start: from, End: to,
		References: []string{
			"https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-ROWS",
			"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
			"https://www.postgresql.org/docs/current/functions-info.html#FUNCTIONS-INFO-SESSION-TABLE",
		}}
	f.Workload = singleWorkload(run, spotsApps(run, from, to))

	// Lock waits per transaction of the workloads that lock or write rows:
	// a read-only workload's transactions wait for no row lock.
	readOnly := diagnose.ReadOnlyWorkloads(run)
	tps := diagnose.WritingTPS(run, from, to)
	perTx := 0.0
	if tps > 0 {
		perTx = queue / tps * 1000
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_activity:wait.Lock:*", T: w.PeakT, Value: share,
		Text: fmt.Sprintf("%s of active time waiting for heavyweight locks (%s sessions waiting on average of %s active; peak %s at %.0f s)",
			diagnose.HumanPct(share), diagnose.HumanNum(queue), diagnose.HumanNum(w.MeanActive()), diagnose.HumanNum(w.PeakWait), w.PeakT)})
	for _, e := range w.TopEvents() {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_activity:wait." + e, Value: w.ByEvent[e] / float64(w.Samples),
			Text: fmt.Sprintf("%s sessions on average in %s", diagnose.HumanNum(w.ByEvent[e]/float64(w.Samples)), e)})
		if len(f.Evidence) >= 3 {
			break
		}
	}
	if maxWait.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:max_wait_s", T: maxWait.MaxT, Value: maxWait.Max,
			Text: fmt.Sprintf("longest lock wait %s (median of the per-sample longest: %s)",
				diagnose.HumanMS(maxWait.Max*1000), diagnose.HumanMS(diagnose.Median(run.Series(pgmetric.Locks, pgmetric.LocksMaxWaitS), from, to)*1000))})
	}
	if perTx > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:*.tps", Value: perTx,
			Text: fmt.Sprintf("at %s %s, each waits %s for locks on average (Little's law: %s waiting sessions ÷ throughput)%s",
				diagnose.HumanNum(tps), writingWord(readOnly), diagnose.HumanMS(perTx), diagnose.HumanNum(queue), readOnlyNote(readOnly))})
	}

	// Where the waits concentrate.
	var spotText string
	if len(spots) > 0 && waits > 0 {
		top := spots[0]
		spotShare := float64(top.Waits) / float64(waits)
		what := "`" + top.Statement + "`"
		if top.Relation != "" {
			what += " on " + top.Relation
		}
		spotText = fmt.Sprintf("%s of sampled lock waits are in %s", diagnose.HumanPct(spotShare), what)
		if key, keyShare := top.topKey(); key != "" {
			if len(top.Keys) == 1 || keyShare >= 0.5 {
				spotText += fmt.Sprintf(", %s of them for the same row (%s)", diagnose.HumanPct(keyShare), key)
			} else {
				spotText += fmt.Sprintf(", spread over %d key values (hottest %s: %s)", len(top.Keys), key, diagnose.HumanPct(keyShare))
			}
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:detail", Value: spotShare, Text: spotText})
		// The relations the tuple waits name.
		rels := map[string]int{}
		for _, s := range spots {
			if s.Relation != "" {
				rels[s.Relation] += s.Waits
			}
		}
		if names := topKeys(rels, 3); len(names) > 0 && top.Relation == "" {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:detail",
				Text: "row waits name the relations " + strings.Join(names, ", ")})
		}
	}
	var rootText string
	if len(roots) > 0 {
		r := roots[0]
		heads := 0
		for _, x := range roots {
			heads += x.Samples
		}
		desc := fmt.Sprintf("pid %d (%s, %s: `%s`)", r.PID, appOrUnknown(r.App), stateOrUnknown(r.State), diagnose.OneLine(r.Query, 100))
		if heads > 0 && float64(r.Samples) >= 0.5*float64(heads) {
			rootText = "chain head " + desc
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:root_blockers", T: r.FirstT, Value: float64(r.PID),
				Text: fmt.Sprintf("one session heads the blocking chains in %d of %d observations: %s, up to %d sessions behind it",
					r.Samples, heads, desc, r.MaxWaiters)})
		} else {
			longest := r
			for _, x := range roots {
				if x.MaxWaiters > longest.MaxWaiters {
					longest = x
				}
			}
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:root_blockers", T: longest.FirstT, Value: float64(len(roots)),
				Text: fmt.Sprintf("the head of the chain changes all the time (%d different sessions in %d observations): each holder passes the row on; the longest chain, %d sessions, waited behind pid %d (%s, %s: `%s`)",
					len(roots), heads, longest.MaxWaiters, longest.PID, appOrUnknown(longest.App), stateOrUnknown(longest.State), diagnose.OneLine(longest.Query, 100))})
		}
		if byState := rootStates(roots); byState != "" {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:detail", Text: "what the chains' heads were doing: " + byState})
			if rootText == "" {
				rootText = "chain heads " + byState
			}
		}
	}
	if deadlocks > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.Deadlocks), Value: deadlocks,
			Text: fmt.Sprintf("%s deadlocks in this window: some of these waits end in a cycle (see the deadlock finding)", diagnose.HumanNum(deadlocks))})
	}
	if lat := workloadLatency(run, f.Workload, from, to); lat != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + f.Workload + ".latency", Text: lat})
	}

	head := mostCommonState(roots)
	switch severity {
	case diagnose.Info:
		f.Headline = fmt.Sprintf("Background lock waits: %s of active time (%s sessions on average) waiting for row locks — short hand-overs, not a queue",
			diagnose.HumanPct(share), diagnose.HumanNum(queue))
		if spotText != "" {
			f.Headline += "; " + spotText
		}
	default:
		f.Headline = fmt.Sprintf("Sessions queue for locks: %s of active time (%s of %s active sessions on average) waiting",
			diagnose.HumanPct(share), diagnose.HumanNum(queue), diagnose.HumanNum(w.MeanActive()))
		if perTx > 0 {
			f.Headline += fmt.Sprintf(", %s per transaction", diagnose.HumanMS(perTx))
		}
		if spotText != "" {
			f.Headline += "; " + spotText
		}
		if rootText != "" {
			f.Headline += "; " + rootText
		}
		if deadlocks > 0 {
			f.Headline += fmt.Sprintf("; %s of these waits ended in deadlocks (see the deadlock finding)", diagnose.HumanNum(deadlocks))
		}
	}
	f.Mechanism = "A row lock taken by UPDATE, DELETE or SELECT … FOR UPDATE is held until the transaction ends, so every other transaction that needs the same row waits in line (Lock:transactionid, then Lock:tuple for the ones behind): " +
		"the hotter the row, the longer the line, and throughput on that row is one transaction per lock hold time, whatever the number of clients."
	switch head {
	case "idle in transaction":
		f.Mechanism += " The heads of the chains were idle in transaction: the application holds the lock while doing something else, and everyone waits for it."
	case "commit":
		f.Mechanism += " The heads of the chains were committing: the lock is held through the commit's WAL flush, so slow commits lengthen every wait."
	}
	if deadlocks > 0 {
		f.Mechanism += " Unlike a deadlock, a queue drains by itself; the deadlocks in this window are reported separately."
	}
	fk, isFK := findFKConflict(run, spots, waits)
	if isFK {
		f.Evidence = append(f.Evidence, fk.evidence()...)
		f.Headline += "; " + fk.phrase()
		f.Mechanism += fkMechanism
	}
	idleHeld := false
	for _, b := range (idleBlocker{}).Check(run) {
		idleHeld = idleHeld || (b.End >= from && b.Start <= to)
	}
	f.Remedy = lockRemedy(lockCause(isFK, idleHeld, spots), fk)
	if severity == diagnose.Info && !isFK {
		f.Remedy = "Nothing needs to change at this load; if it grows, the same rows will become a queue: keep the transactions that update them short."
	}
	return []diagnose.Finding{f}
}

func appOrUnknown(app string) string {
	if app == "" {
		return "no application_name"
	}
	return app
}

func stateOrUnknown(state string) string {
	if state == "" {
		return "state unknown"
	}
	return state
}

// rootStates says what the chains' heads were doing: "active in COMMIT 80 %, idle in transaction 20 %".
func rootStates(roots []*rootBlocker) string {
	count := map[string]int{}
	total := 0
	for _, r := range roots {
		count[headActivity(r)] += r.Samples
		total += r.Samples
	}
	if total == 0 {
		return ""
	}
	var parts []string
	for _, k := range topKeys(count, 3) {
		parts = append(parts, fmt.Sprintf("%s %s", k, diagnose.HumanPct(float64(count[k])/float64(total))))
	}
	return strings.Join(parts, ", ")
}

func headActivity(r *rootBlocker) string {
	q := strings.ToUpper(strings.TrimSpace(r.Query))
	switch {
	case r.State == "idle in transaction" || r.State == "idle in transaction (aborted)":
		return "idle in transaction"
	case r.State == "active" && (strings.HasPrefix(q, "COMMIT") || strings.HasPrefix(q, "END")):
		return "commit"
	case r.State == "active":
		if verb, _, _ := strings.Cut(q, " "); verb != "" {
			return "running " + strings.TrimSuffix(verb, ";")
		}
	case r.State == "":
		return "unknown"
	}
	return r.State
}

func mostCommonState(roots []*rootBlocker) string {
	count := map[string]int{}
	total := 0
	for _, r := range roots {
		count[headActivity(r)] += r.Samples
		total += r.Samples
	}
	if top := topKeys(count, 1); len(top) == 1 && float64(count[top[0]]) >= 0.5*float64(total) {
		return top[0]
	}
	return ""
}

// spotsApps lists the applications of sessions waiting for locks in the
// window.
func spotsApps(run *timeline.Run, from, to float64) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range run.SourceSamples(pgmetric.Locks) {
		if s.T < from || s.T >= to {
			continue
		}
		var pairs []pgmetric.BlockingPair
		if !diagnose.Detail(&s, &pairs) {
			continue
		}
		for _, p := range pairs {
			if !seen[p.BlockedApp] {
				seen[p.BlockedApp] = true
				out = append(out, p.BlockedApp)
			}
		}
	}
	return out
}

// workloadAppPrefix is how the runner names a workload's sessions
// (runner.AppName).
const workloadAppPrefix = "firedrill:"

// singleWorkload returns the workload whose sessions are the only ones
// in apps, if there is exactly one (or the run has one workload).
func singleWorkload(run *timeline.Run, apps []string) string {
	names := map[string]bool{}
	for _, a := range apps {
		if w, ok := strings.CutPrefix(a, workloadAppPrefix); ok {
			names[w] = true
		}
	}
	if len(names) == 1 {
		for w := range names {
			return w
		}
	}
	if len(run.Manifest.Workloads) == 1 {
		return run.Manifest.Workloads[0].Name
	}
	return ""
}

// errorsIn counts the workloads' errors of the given SQLSTATEs in a window.
func errorsIn(run *timeline.Run, from, to float64, codes ...string) int64 {
	var n int64
	for _, iv := range run.Intervals {
		if iv.End <= from || iv.Start >= to {
			continue
		}
		for _, c := range codes {
			n += iv.Errors[c]
		}
	}
	return n
}

// workloadLatency describes a workload's latency in a window against the
// rest of the run: "p50 16 ms, p99 190 ms (outside the window: p50 2 ms)".
func workloadLatency(run *timeline.Run, workload string, from, to float64) string {
	if workload == "" {
		return ""
	}
	var in, out []timeline.Point
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.Count == 0 {
			continue
		}
		p := timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P50) / 1000}
		if iv.End > from && iv.Start < to {
			in = append(in, p)
		} else {
			out = append(out, p)
		}
	}
	if len(in) == 0 {
		return ""
	}
	s := fmt.Sprintf("%s latency: median of the intervals' p50 %s", workload, diagnose.HumanMS(diagnose.Median(in, math.Inf(-1), math.Inf(1))))
	if len(out) >= 3 {
		s += fmt.Sprintf(" (outside this window: %s)", diagnose.HumanMS(diagnose.Median(out, math.Inf(-1), math.Inf(1))))
	}
	return s
}

// readOnlyNote says which workloads a per-transaction figure left out.
func readOnlyNote(readOnly []string) string {
	if len(readOnly) == 0 {
		return ""
	}
	return "; read-only workloads left out: " + strings.Join(readOnly, ", ")
}
