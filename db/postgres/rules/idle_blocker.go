package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// idleBlocker finds a session that is idle in transaction at the head of
// a lock chain: it changed or locked rows, then stopped talking to the
// server without committing, and every session that needs those rows
// waits for an application that is not even using the database.
// lock-contention reports the queue; this rule names the one session
// that must end for the queue to drain.
//
// Threshold: the head's direct waiters have waited at least
// deadlock_timeout (1 s by default, the wait after which PostgreSQL's
// log_lock_waits logs a lock wait) on it while it was idle, in two
// consecutive lock samples. A waiter on a transaction id waits for that
// one transaction, so that wait proves the head's transaction has held
// the lock that long; ordinary clients are idle in transaction only for
// the moment between two statements.
type idleBlocker struct{}

var _ diagnose.Rule = idleBlocker{}

func (idleBlocker) ID() string { return "idle-in-transaction-blocker" }

// Inputs names the sources the rule reads.
func (idleBlocker) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Locks}, Also: []string{pgmetric.Activity, pgmetric.Settings}}
}

// idleBlockerSamples is how many consecutive lock samples must show the
// same idle head with long waiters.
const idleBlockerSamples = 2

// idleHead is a session seen idle in transaction at the head of chains.
type idleHead struct {
	PID               int
	App, Query, State string
	First, Last       float64 // lock samples in which it was seen so
	Samples           int
	MaxBehind         int     // sessions waiting on it, directly or not, at most
	MaxBehindT        float64 // when
	MaxWaitS          float64 // longest wait of a direct waiter
	Relations         map[string]bool
	WaitedQueries     map[string]int
	run               int // consecutive qualifying samples up to now
	bestRun           int // the longest such run
}

func (r idleBlocker) Check(run *timeline.Run) []diagnose.Finding {
	heads := map[int]*idleHead{}
	var order []int
	for _, s := range run.SourceSamples(pgmetric.Locks) {
		if s.Error != "" {
			continue
		}
		var pairs []pgmetric.BlockingPair
		if !diagnose.Detail(&s, &pairs) {
			continue
		}
		minWait := r.deadlockTimeoutS(run, s.T)
		blocked := map[int]bool{}
		for _, p := range pairs {
			blocked[p.BlockedPID] = true
		}
		seen := map[int]bool{}
		for _, p := range pairs {
			if p.BlockingPID == 0 || blocked[p.BlockingPID] || !strings.HasPrefix(p.BlockingState, "idle in transaction") {
				continue
			}
			h, ok := heads[p.BlockingPID]
			if !ok {
				h = &idleHead{PID: p.BlockingPID, App: p.BlockingApp, Query: p.BlockingQuery, State: p.BlockingState,
					First: s.T, Relations: map[string]bool{}, WaitedQueries: map[string]int{}}
				heads[p.BlockingPID] = h
				order = append(order, p.BlockingPID)
			}
			if p.Relation != "" {
				h.Relations[p.Relation] = true
			}
			h.WaitedQueries[diagnose.OneLine(p.BlockedQuery, 100)]++
			if p.WaitS >= minWait {
				seen[p.BlockingPID] = true
				h.MaxWaitS = math.Max(h.MaxWaitS, p.WaitS)
			}
		}
		for pid, h := range heads {
			if !seen[pid] {
				h.run = 0
				continue
			}
			h.run++
			h.Samples++
			h.Last = s.T
			if n := countBehind(pairs, pid); n > h.MaxBehind {
				h.MaxBehind, h.MaxBehindT = n, s.T
			}
			if h.run > h.bestRun {
				h.bestRun = h.run
			}
		}
	}
	var out []diagnose.Finding
	for _, pid := range order {
		h := heads[pid]
		if h.bestRun >= idleBlockerSamples {
			out = append(out, r.finding(run, h))
		}
	}
	return out
}

// eventStatements is what the session pid ran in its transaction when
// it is an event's: the statements its start mark records (its
// pg_stat_activity.query is only its last statement, the xid probe
// `SELECT txid_current()` of a hold_transaction that takes one); "" for
// another session.
func eventStatements(run *timeline.Run, pid int) string {
	for _, m := range run.Marks {
		if m.Phase != timeline.PhaseStart || fmt.Sprint(m.Detail["pid"]) != strconv.Itoa(pid) {
			continue
		}
		if sql, ok := m.Detail["sql"].(string); ok && sql != "" {
			return sql
		}
	}
	return ""
}

// deadlockTimeoutS is deadlock_timeout at t, in seconds (1 by default).
func (idleBlocker) deadlockTimeoutS(run *timeline.Run, t float64) float64 {
	if v, ok := pgSeconds(settingAt(run, "deadlock_timeout", t, ""), 1e-3); ok && v > 0 {
		return v
	}
	return 1
}

func (r idleBlocker) finding(run *timeline.Run, h *idleHead) diagnose.Finding {
	// The head's transaction began at least its longest waiter's wait
	// before it was last seen.
	start := math.Max(0, math.Min(h.First, h.Last-h.MaxWaitS))
	f := diagnose.Finding{Severity: diagnose.Warning, Start: start, End: h.Last}
	who := fmt.Sprintf("pid %d (%s)", h.PID, appOrUnknown(h.App))
	if w, ok := workloadOfApp(run, h.App); ok {
		who = fmt.Sprintf("pid %d (workload %s)", h.PID, w)
	}
	held := h.Last - start
	ran, lastStatement := h.Query, diagnose.OneLine(h.Query, 120)
	if sql := eventStatements(run, h.PID); sql != "" {
		ran = sql
		if sql != h.Query {
			lastStatement += fmt.Sprintf(" (its transaction's statements: `%s`)", diagnose.OneLine(sql, 120))
		}
	}
	f.Headline = fmt.Sprintf("A session idle in transaction heads the lock chain: %s ran `%s` and then sat idle holding its locks for %s, "+
		"with up to %d sessions waiting behind it", who, diagnose.OneLine(ran, 80), diagnose.SecondsText(held), h.MaxBehind)
	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.Locks, pgmetric.LocksRootBlockers), T: h.First, Value: float64(h.PID),
			Text: fmt.Sprintf("%s was %s at the head of the blocking chains in %d lock samples from %.0f s to %.0f s; its last statement: `%s`",
				who, h.State, h.Samples, h.First, h.Last, lastStatement)},
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.Locks, pgmetric.LocksMaxWaitS), T: h.Last, Value: h.MaxWaitS,
			Text: fmt.Sprintf("sessions waited on it for up to %s (deadlock_timeout, after which log_lock_waits logs a wait, is %s)",
				diagnose.SecondsText(h.MaxWaitS), diagnose.SecondsText(r.deadlockTimeoutS(run, h.First)))},
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.Locks, pgmetric.LocksBlocked), T: h.MaxBehindT, Value: float64(h.MaxBehind),
			Text: fmt.Sprintf("%d sessions waiting behind it at %.0f s, directly or through each other", h.MaxBehind, h.MaxBehindT)})
	if q := topKeys(h.WaitedQueries, 1); len(q) == 1 {
		text := fmt.Sprintf("the waiters were running `%s`", q[0])
		if rels := sortedKeys(h.Relations); len(rels) > 0 {
			text += " on " + strings.Join(rels, ", ")
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:detail", Text: text})
	}
	if idle := diagnose.Over(run.Series(pgmetric.Activity, pgmetric.OldestIdleInXactS), start, h.Last+diagnose.Tick(run)); idle.N > 0 && idle.Max > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Activity, pgmetric.OldestIdleInXactS), T: idle.MaxT, Value: idle.Max,
			Text: fmt.Sprintf("the longest idle-in-transaction session had been idle %s", diagnose.SecondsText(idle.Max))})
	}
	for _, w := range run.Manifest.Workloads {
		c, ok := throughputChange(run, w.Name, 0, start, h.Last)
		if !ok || c.Factor < 1.25 {
			continue
		}
		f.Headline += "; " + c.phrase()
		f.Evidence = append(f.Evidence, c.evidence())
		if f.Workload == "" {
			f.Workload = w.Name
		}
		if c.Factor >= 2 {
			f.Severity = diagnose.Critical
		}
	}
	f.Mechanism = "Row and table locks are held until the transaction ends, not until the statement does. A session that " +
		"changed rows and then went idle without COMMIT — the application waiting on a remote call, a user, a bug that " +
		"forgot to commit, a pool that returned a connection mid-transaction — keeps them locked, and every transaction " +
		"that needs those rows queues behind a session that is doing nothing. The queue drains only when it ends."
	f.Remedy = fmt.Sprintf("End it now: `SELECT pg_terminate_backend(%d);` (its transaction rolls back). Then make the server end "+
		"such sessions by itself: `ALTER ROLE <app role> SET idle_in_transaction_session_timeout = '10s'` (or per pool "+
		"connection); and in the application, commit before any remote call or user wait, never hold a transaction open "+
		"across them, and set `lock_timeout` so the waiters fail fast instead of queueing.", h.PID)
	f.References = []string{
		"https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-IDLE-IN-TRANSACTION-SESSION-TIMEOUT",
		"https://www.postgresql.org/docs/current/runtime-config-logging.html#GUC-LOG-LOCK-WAITS",
		"https://www.postgresql.org/docs/current/functions-info.html#FUNCTIONS-INFO-SESSION-TABLE",
	}
	return f
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
