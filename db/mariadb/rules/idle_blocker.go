package mariadbrules

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// idleBlocker finds the transaction at the head of InnoDB's lock waits
// that is not working: a session that locked rows and then sat idle in
// its transaction (no statement running), or a transaction open far
// longer than its waiters can wait. Every writer of those rows waits for
// it up to innodb_lock_wait_timeout and then fails with 1205; the rule
// names the one session that must end, counts the timeouts it caused,
// and spans the waits, not the run. hot-row-lock-waits reports the queue.
//
// Threshold: the same transaction (thread and InnoDB transaction id) at
// the head of the waits in two consecutive lock samples, idle or open at
// least longHeadS, with a direct waiter that has waited at least
// idleBlockerMinWaitS on it. A hot row's holders change many times a
// second and are idle only between two statements of a short
// transaction.
type idleBlocker struct{}

var _ diagnose.Rule = idleBlocker{}

// ID is PostgreSQL's rule's: one id for the same incident on either
// database, so drills' expectations name one thing.
func (idleBlocker) ID() string { return "idle-in-transaction-blocker" }

// Inputs names the sources the rule reads.
func (idleBlocker) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{mariadbmetric.InnoDBLocks}, Also: []string{mariadbmetric.Processlist, mariadbmetric.Settings}}
}

const (
	idleBlockerSamples  = 2   // consecutive lock samples showing the same head
	idleBlockerMinWaitS = 1.0 // InnoDB counts waits in whole seconds; a wait of 1 s is not a hand-over
	longHeadS           = 10.0
	lockWaitTimeoutCode = "HY000/1205" // ER_LOCK_WAIT_TIMEOUT as the client records it
)

// innodbHead is a transaction seen at the head of lock waits.
type innodbHead struct {
	ThreadID      int64
	Trx           string
	First, Last   float64 // lock samples in which it qualified
	FirstWaitS    float64 // its longest direct wait when first seen: the waits began that much earlier
	Samples       int
	Idle          bool    // no statement running in any qualifying sample
	Query         string  // the statement it was running, when not idle
	LastQuery     string  // its last statement while idle, from performance_schema ("" when off)
	MaxBehind     int     // transactions waiting on it, directly or not
	MaxBehindT    float64 // when
	MaxWaitS      float64 // longest wait of a direct waiter
	TrxAgeS       float64 // its transaction's age as the process list last saw it
	TrxAgeT       float64 // when
	User          string
	Where         map[string]int // "table (index) key …" of the locks its waiters wanted
	WaitedQueries statementCount
	run, bestRun  int
}

func (r idleBlocker) Check(run *timeline.Run) []diagnose.Finding {
	heads := map[string]*innodbHead{}
	var order []string
	for _, s := range run.SourceSamples(mariadbmetric.InnoDBLocks) {
		if s.Error != "" {
			continue
		}
		var pairs []mariadbmetric.BlockingPair
		diagnose.Detail(&s, &pairs)
		waiting := map[string]bool{}
		for _, p := range pairs {
			waiting[p.BlockedTrx] = true
		}
		sessions := sessionsNear(run, s.T)
		seen := map[string]bool{}
		for _, p := range pairs {
			if waiting[p.BlockingTrx] || p.WaitS < idleBlockerMinWaitS {
				continue
			}
			sess, known := sessions[p.BlockingID]
			idle := strings.TrimSpace(p.BlockingQuery) == "" && (!known || sess.Command == "Sleep")
			long := known && sess.TrxAgeS >= longHeadS
			if !idle && !long {
				continue
			}
			key := strconv.FormatInt(p.BlockingID, 10) + "/" + p.BlockingTrx
			h, ok := heads[key]
			if !ok {
				h = &innodbHead{ThreadID: p.BlockingID, Trx: p.BlockingTrx, First: s.T, FirstWaitS: p.WaitS, Idle: true,
					Where: map[string]int{}, WaitedQueries: statementCount{}}
				heads[key] = h
				order = append(order, key)
			}
			if !seen[key] {
				seen[key] = true
				if !idle {
					h.Idle, h.Query = false, p.BlockingQuery
				} else if p.BlockingLastQuery != "" {
					h.LastQuery = p.BlockingLastQuery
				}
				if known {
					h.User = sess.User
					if sess.TrxAgeS > 0 {
						h.TrxAgeS, h.TrxAgeT = sess.TrxAgeS, s.T
					}
				}
			}
			h.Where[lockPlace(p)]++
			h.WaitedQueries.add(p.BlockedQuery)
			h.MaxWaitS = math.Max(h.MaxWaitS, p.WaitS)
		}
		for key, h := range heads {
			if !seen[key] {
				h.run = 0
				continue
			}
			h.run++
			h.Samples++
			h.Last = s.T
			if n := waitersBehind(pairs, h.Trx); n > h.MaxBehind {
				h.MaxBehind, h.MaxBehindT = n, s.T
			}
			h.bestRun = max(h.bestRun, h.run)
		}
	}
	var out []diagnose.Finding
	for _, key := range order {
		if h := heads[key]; h.bestRun >= idleBlockerSamples {
			out = append(out, r.finding(run, h))
		}
	}
	return out
}

// sessionsNear is the process list's sessions (its detail: the oldest
// transactions and the longest statements) in the sample that read the
// transactions nearest to t, by thread id.
func sessionsNear(run *timeline.Run, t float64) map[int64]mariadbmetric.Session {
	out := map[int64]mariadbmetric.Session{}
	best := math.Inf(1)
	var chosen []mariadbmetric.Session
	for _, s := range run.SourceSamples(mariadbmetric.Processlist) {
		if _, withTrx := s.Values[mariadbmetric.OldestTrxAgeS]; !withTrx || s.Error != "" {
			continue
		}
		if d := math.Abs(s.T - t); d < best && d <= 1.5*diagnose.Tick(run) {
			var ss []mariadbmetric.Session
			if diagnose.Detail(&s, &ss) {
				best, chosen = d, ss
			}
		}
	}
	for _, s := range chosen {
		out[s.ID] = s
	}
	return out
}

// lockPlace names the lock a waiter wanted: "counter (PRIMARY) key 1".
func lockPlace(p mariadbmetric.BlockingPair) string {
	where := strings.ReplaceAll(p.Table, "`", "")
	if p.Index != "" {
		where += " (" + p.Index + ")"
	}
	if p.LockData != "" {
		where += " key " + p.LockData
	}
	return where
}

// waitersBehind counts the transactions waiting, directly or through
// others, for trx.
func waitersBehind(pairs []mariadbmetric.BlockingPair, trx string) int {
	seen := map[string]bool{}
	frontier := []string{trx}
	for len(frontier) > 0 {
		cur := frontier[0]
		frontier = frontier[1:]
		for _, p := range pairs {
			if p.BlockingTrx == cur && !seen[p.BlockedTrx] && p.BlockedTrx != trx {
				seen[p.BlockedTrx] = true
				frontier = append(frontier, p.BlockedTrx)
			}
		}
	}
	return len(seen)
}

// lockWaitTimeoutS is innodb_lock_wait_timeout in seconds (50 by default).
func lockWaitTimeoutS(run *timeline.Run) float64 {
	if v, err := strconv.ParseFloat(diagnose.Setting(run, "innodb_lock_wait_timeout", "50"), 64); err == nil && v > 0 {
		return v
	}
	return 50
}

// timeouts counts the workloads' lock wait timeouts (1205) in intervals
// that end in [from, to): the total, the largest in one interval and
// when, and per workload.
func timeouts(run *timeline.Run, from, to float64) (total int64, peak timeline.Point, byWorkload map[string]int64) {
	byWorkload = map[string]int64{}
	perEnd := map[float64]int64{}
	for _, iv := range run.Intervals {
		n := iv.Errors[lockWaitTimeoutCode]
		if n == 0 || iv.End <= from || iv.End > to {
			continue
		}
		total += n
		byWorkload[iv.Workload] += n
		perEnd[math.Round(iv.End)] += n
	}
	for t, n := range perEnd {
		if float64(n) > peak.V || (float64(n) == peak.V && t < peak.T) {
			peak = timeline.Point{T: t, V: float64(n)}
		}
	}
	return total, peak, byWorkload
}

// programOf is the program_name of the event session with thread id,
// from its mark (the events record their connection id).
func programOf(run *timeline.Run, id int64) string {
	for _, m := range run.Marks {
		if m.Phase != timeline.PhaseStart || m.Detail == nil {
			continue
		}
		if c, ok := m.Detail["connection_id"].(float64); ok && int64(c) == id {
			p, _ := m.Detail["program_name"].(string)
			return p
		}
	}
	return ""
}

func (r idleBlocker) finding(run *timeline.Run, h *innodbHead) diagnose.Finding {
	start := math.Max(0, h.First-h.FirstWaitS)
	end := h.Last
	f := diagnose.Finding{Severity: diagnose.Warning, Start: start, End: end,
		References: []string{
			"https://mariadb.com/kb/en/information-schema-innodb_lock_waits-table/",
			"https://mariadb.com/kb/en/innodb-system-variables/#innodb_lock_wait_timeout",
			"https://mariadb.com/kb/en/server-system-variables/#idle_transaction_timeout",
			"https://mariadb.com/kb/en/kill/",
		}}
	who := fmt.Sprintf("connection %d", h.ThreadID)
	var details []string
	if h.User != "" {
		details = append(details, "user "+h.User)
	}
	if program := programOf(run, h.ThreadID); program != "" {
		details = append(details, "program "+program)
	}
	if len(details) > 0 {
		who += " (" + strings.Join(details, ", ") + ")"
	}
	what := "sat idle in its transaction, no statement running,"
	if h.Idle && h.LastQuery != "" {
		what = fmt.Sprintf("sat idle in its transaction after `%s`,", diagnose.OneLine(h.LastQuery, 80))
	}
	if !h.Idle {
		what = fmt.Sprintf("kept its transaction open (running `%s`)", diagnose.OneLine(h.Query, 80))
	}
	held := end - start
	if h.TrxAgeS > 0 {
		held = math.Max(held, h.TrxAgeS+(end-h.TrxAgeT))
	}
	place := topPlace(h.Where)
	f.Headline = fmt.Sprintf("A transaction that is not working heads InnoDB's lock waits: %s %s holding the lock on %s for %s, with up to %d transactions waiting behind it",
		who, what, place, formatSeconds(held), h.MaxBehind)
	last, lastFrom := "no statement running when sampled", "its last statement is not kept without performance_schema"
	switch {
	case !h.Idle:
		last = "running `" + diagnose.OneLine(h.Query, 120) + "`"
	case h.LastQuery != "":
		last += ", its last one `" + diagnose.OneLine(h.LastQuery, 120) + "`"
		lastFrom = "from performance_schema's statement events"
	}
	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, mariadbmetric.LocksRootBlockers), T: h.First, Value: float64(h.ThreadID),
			Text: fmt.Sprintf("%s (InnoDB transaction %s) headed the lock waits in %d lock samples from %.0f s to %.0f s, %s (%s; the lock its waiters want is on %s)",
				who, h.Trx, h.Samples, h.First, h.Last, last, lastFrom, place)},
		diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, mariadbmetric.LocksMaxWaitS), T: h.Last, Value: h.MaxWaitS,
			Text: fmt.Sprintf("transactions waited on it for up to %s (innodb_lock_wait_timeout = %s)", formatSeconds(h.MaxWaitS), formatSeconds(lockWaitTimeoutS(run)))},
		diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, mariadbmetric.LocksBlocked), T: h.MaxBehindT, Value: float64(h.MaxBehind),
			Text: fmt.Sprintf("%d transactions waiting behind it at %.0f s, directly or through each other", h.MaxBehind, h.MaxBehindT)})
	if h.TrxAgeS > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.OldestTrxAgeS), T: h.TrxAgeT, Value: h.TrxAgeS,
			Text: fmt.Sprintf("its transaction was %s old at %.0f s (INNODB_TRX.trx_started)", formatSeconds(h.TrxAgeS), h.TrxAgeT)})
	}
	if q, _ := h.WaitedQueries.top(); q != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocked_query"),
			Text: "the waiters were running `" + diagnose.OneLine(q, 120) + "`"})
	}
	// The timeouts it caused: waits that began while it held the lock end
	// at most innodb_lock_wait_timeout later.
	lwt := lockWaitTimeoutS(run)
	n, peak, byWorkload := timeouts(run, start, end+lwt+diagnose.Tick(run))
	all, _, _ := timeouts(run, math.Inf(-1), math.Inf(1))
	if n > 0 {
		var ws []string
		for w, k := range byWorkload {
			ws = append(ws, fmt.Sprintf("%s %d", w, k))
		}
		sort.Strings(ws)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors." + lockWaitTimeoutCode, T: peak.T, Value: float64(n),
			Text: fmt.Sprintf("%d lock wait timeouts (1205) from %.0f s to %.0f s (%s of the run's %d), %d in the second before %.0f s at the most; by workload: %s",
				n, start, end+lwt, diagnose.HumanPct(float64(n)/float64(max(all, 1))), all, int64(peak.V), peak.T, strings.Join(ws, ", "))})
		f.Headline += fmt.Sprintf("; %d of them gave up after innodb_lock_wait_timeout (error 1205)", n)
		f.Severity = diagnose.Critical
	}
	f.Mechanism = "InnoDB keeps a row lock until the transaction that took it commits or rolls back, not until its statement ends. " +
		"A session that locked rows (UPDATE, SELECT … FOR UPDATE) and then stopped talking to the server without COMMIT — the application " +
		"waiting on a remote call or a user, a code path that forgot to commit, a pool that handed back a connection mid-transaction — keeps " +
		"them locked, and every writer of those rows waits for a session that is doing nothing, until innodb_lock_wait_timeout ends its wait " +
		"with error 1205 (which rolls back only the statement, not the waiter's transaction). The queue drains only when the holder ends."
	f.Remedy = fmt.Sprintf("End it now: `KILL %d;` (its transaction rolls back and the waiters proceed). Then make the server end such "+
		"sessions by itself: `SET GLOBAL idle_transaction_timeout = 10` (or idle_write_transaction_timeout, for those that changed rows; "+
		"per session or in the server's configuration), and in the application commit before any remote call or user wait and never keep "+
		"a transaction open across them. innodb_lock_wait_timeout (%s now) only decides how long the waiters queue before 1205: lower it "+
		"so they fail fast, and retry the whole transaction on 1205, since the error leaves the transaction open.", h.ThreadID, formatSeconds(lwt))
	return f
}

// topPlace is the lock the waiters wanted most.
func topPlace(where map[string]int) string {
	best, n := "", 0
	for w, k := range where {
		if k > n || (k == n && w < best) {
			best, n = w, k
		}
	}
	if best == "" {
		return "rows"
	}
	return best
}

// formatSeconds prints a duration in seconds as "850 ms", "4 s", "1 min 5 s".
func formatSeconds(s float64) string {
	switch {
	case s < 1:
		return diagnose.HumanMS(s * 1000)
	case s < 60:
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%d min %d s", int(s)/60, int(s)%60)
}
