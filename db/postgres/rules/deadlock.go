package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// deadlock finds deadlocks (pg_stat_database's count, the clients' 40P01
// errors with their detail) and explains them from the workload scripts:
// which statements lock which rows, keyed by which variables, in which
// order, and where two transactions can take the same rows in opposite
// orders. With no deadlock in the run, an inversion the scripts make
// possible is still reported, as info.
type deadlock struct{}

var _ diagnose.Rule = deadlock{}

func (deadlock) ID() string { return "deadlock" }

// Inputs names the sources the rule reads.
func (deadlock) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{pgmetric.Database, pgmetric.Locks}}
}

// deadlockCode is the SQLSTATE of deadlock_detected.
const deadlockCode = "40P01"

// deadlockCount is what the run says about deadlocks.
type deadlockCount struct {
	Server      float64 // pg_stat_database deadlocks over the run
	ServerPeak  timeline.Point
	HaveServer  bool
	Client      int64            // 40P01 errors the workloads saw
	ByWorkload  map[string]int64 // 40P01 per workload
	First, Last float64          // the window (seconds since the start)
	Details     []string         // the distinct DETAIL texts
	Failed      []failedCommand  // script commands that failed in workloads with deadlocks
}

type failedCommand struct {
	Workload, Script string
	Line             int
	Text             string
	Failures         int64
}

func countDeadlocks(run *timeline.Run) deadlockCount {
	c := deadlockCount{ByWorkload: map[string]int64{}, First: math.Inf(1), Last: math.Inf(-1)}
	tick := diagnose.Tick(run)
	pts := run.Series(pgmetric.Database, pgmetric.Deadlocks)
	for _, p := range pts {
		c.HaveServer = true
		if p.V <= 0 {
			continue
		}
		c.Server += p.V
		if p.V > c.ServerPeak.V {
			c.ServerPeak = p
		}
		c.First = min(c.First, p.T-tick)
		c.Last = max(c.Last, p.T)
	}
	if !c.HaveServer { // an older run: the cumulative counter
		if tot := run.Series(pgmetric.Database, pgmetric.DeadlocksTotal); len(tot) > 1 {
			c.HaveServer = true
			c.Server = math.Max(0, tot[len(tot)-1].V-tot[0].V)
		}
	}
	for _, iv := range run.Intervals {
		if n := iv.Errors[deadlockCode]; n > 0 {
			c.Client += n
			c.ByWorkload[iv.Workload] += n
			c.First = min(c.First, iv.Start)
			c.Last = max(c.Last, iv.End)
		}
	}
	if run.Summary != nil {
		for _, w := range run.Summary.Workloads {
			for _, e := range w.Errors {
				if e.Code != deadlockCode {
					continue
				}
				if c.ByWorkload[w.Name] == 0 && e.Count > 0 { // no intervals: the totals
					c.ByWorkload[w.Name] = e.Count
					c.Client += e.Count
				}
				c.First, c.Last = min(c.First, e.First), max(c.Last, e.Last)
				if e.Detail != "" {
					c.Details = append(c.Details, e.Detail)
				}
			}
			if c.ByWorkload[w.Name] == 0 {
				continue
			}
			for _, s := range w.Scripts {
				for _, cmd := range s.Commands {
					if cmd.Failures > 0 {
						c.Failed = append(c.Failed, failedCommand{w.Name, s.Name, cmd.Line, cmd.Text, cmd.Failures})
					}
				}
			}
		}
	}
	if math.IsInf(c.First, 1) {
		c.First, c.Last = 0, 0
	}
	return c
}

func (c deadlockCount) total() float64 { return math.Max(c.Server, float64(c.Client)) }

var deadlockLine = regexp.MustCompile(`Process (\d+) waits for (\w+) on ([^;]+); blocked by process (\d+)`)

// describeDeadlockDetail turns a 40P01 DETAIL into a short sentence: the
// cycle's length and what its members wait for.
func describeDeadlockDetail(detail string) string {
	ms := deadlockLine.FindAllStringSubmatch(detail, -1)
	if len(ms) == 0 {
		return ""
	}
	kinds := map[string]int{}
	var order []string
	for _, m := range ms {
		object := m[3]
		kind := object
		switch {
		case strings.HasPrefix(object, "transaction"):
			kind = m[2] + " on a transaction (a row it updated or locked)"
		case strings.HasPrefix(object, "tuple"):
			kind = m[2] + " on a tuple (a row another session is already waiting for)"
			if i := strings.Index(object, "of relation "); i >= 0 {
				kind = m[2] + " on a row of relation " + strings.Fields(object[i+len("of relation "):])[0]
			}
		case strings.HasPrefix(object, "relation"):
			kind = m[2] + " on a whole table (relation " + strings.Fields(strings.TrimPrefix(object, "relation "))[0] + ")"
		}
		if kinds[kind] == 0 {
			order = append(order, kind)
		}
		kinds[kind]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d wait for %s", kinds[k], k))
	}
	return fmt.Sprintf("a cycle of %d processes: %s", len(ms), strings.Join(parts, ", "))
}

// deadlockLocks reads the locks sampler's pairs during the deadlock window:
// the relations and the statements that waited.
func deadlockLocks(run *timeline.Run, from, to float64) (relations []string, queries []string) {
	relCount := map[string]int{}
	queryCount := map[string]int{}
	for _, s := range run.SourceSamples(pgmetric.Locks) {
		if s.T < from || s.T > to+diagnose.Tick(run) {
			continue
		}
		var pairs []pgmetric.BlockingPair
		if !diagnose.Detail(&s, &pairs) {
			continue
		}
		for _, p := range pairs {
			if p.Relation != "" {
				relCount[p.Relation]++
			}
			if q := diagnose.OneLine(p.BlockedQuery, 120); q != "" {
				queryCount[sqlcheck.NormalizeLiterals(q)]++
			}
		}
	}
	return topKeys(relCount, 3), topKeys(queryCount, 3)
}

func topKeys(m map[string]int, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

func (deadlock) Check(run *timeline.Run) []diagnose.Finding {
	count := countDeadlocks(run)
	analysis := sqlcheck.AnalyzeLockOrder(diagnose.LockOrderSources(run, pgdialect.Script()))
	var concurrent []sqlcheck.Inversion
	for _, inv := range analysis.Inversions {
		if inv.Concurrent {
			concurrent = append(concurrent, inv)
		}
	}
	total := count.total()
	if total <= 0 && len(concurrent) == 0 {
		return nil
	}
	f := diagnose.Finding{
		References: []string{
			"https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-DEADLOCKS",
			"https://www.postgresql.org/docs/current/runtime-config-locks.html#GUC-DEADLOCK-TIMEOUT",
			"https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE",
		},
	}
	if total <= 0 {
		return []diagnose.Finding{latentDeadlock(run, f, concurrent)}
	}
	f.Severity, f.Lasting = diagnose.Critical, true // deadlocks counted stay counted
	f.Start = math.Max(0, count.First)
	f.End = math.Max(count.Last, f.Start)
	// The workload that saw them, if one.
	var workloads []string
	for w := range count.ByWorkload {
		workloads = append(workloads, w)
	}
	sort.Strings(workloads)
	if len(workloads) == 1 {
		f.Workload = workloads[0]
	}

	span := math.Max(f.End-f.Start, diagnose.Tick(run))
	serverSeries, clientCode := pgmetric.Series(pgmetric.Database, pgmetric.Deadlocks), deadlockCode+" deadlock_detected"
	if count.HaveServer {
		ev := diagnose.Evidence{Series: serverSeries, T: f.End, Value: count.Server,
			Text: fmt.Sprintf("%s deadlocks detected by the server between %.0f s and %.0f s (%s/min)",
				diagnose.HumanNum(count.Server), f.Start, f.End, diagnose.HumanNum(count.Server/span*60))}
		f.Evidence = append(f.Evidence, ev)
		if count.ServerPeak.V > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: serverSeries, T: count.ServerPeak.T,
				Value: count.ServerPeak.V, Text: fmt.Sprintf("peak: %s deadlocks in one interval", diagnose.HumanNum(count.ServerPeak.V))})
		}
	}
	for _, w := range workloads {
		errorSeries := "workload:" + w + ".errors." + deadlockCode
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: errorSeries, T: f.End,
			Value: float64(count.ByWorkload[w]),
			Text:  fmt.Sprintf("%s tries of workload %s failed with %s", diagnose.HumanNum(float64(count.ByWorkload[w])), w, clientCode)})
	}
	for _, d := range uniqueStrings(count.Details) {
		text := "DETAIL: " + diagnose.OneLine(d, 400)
		if desc := describeDeadlockDetail(d); desc != "" {
			text = desc + ". " + text
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors." + deadlockCode + ".detail", Text: text})
	}
	for _, fc := range count.Failed {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: fmt.Sprintf("script:%s:%d", fc.Script, fc.Line),
			Value: float64(fc.Failures),
			Text:  fmt.Sprintf("%s failures at %s:%d `%s`", diagnose.HumanNum(float64(fc.Failures)), fc.Script, fc.Line, diagnose.OneLine(fc.Text, 100))})
	}
	relations, queries := deadlockLocks(run, f.Start, f.End)
	if len(relations) > 0 || len(queries) > 0 {
		text := "sessions waited for row locks"
		if len(relations) > 0 {
			text += " on " + strings.Join(relations, ", ")
		}
		if len(queries) > 0 {
			text += " in `" + strings.Join(queries, "`, `") + "`"
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "locks:blocked", T: f.Start, Text: text})
	}

	timeout := diagnose.Setting(run, "deadlock_timeout", "1s")
	rate := fmt.Sprintf("%s deadlocks in %s", diagnose.HumanNum(total), diagnose.HumanMS(span*1000))
	if len(concurrent) > 0 {
		inv := concurrent[0]
		f.Evidence = append(f.Evidence, diagnose.InversionEvidence(inv)...)
		f.Headline = fmt.Sprintf("%s: %s", rate, diagnose.InversionHeadline(inv))
		f.Mechanism = diagnose.InversionMechanism(inv) + fmt.Sprintf(" PostgreSQL finds the cycle after deadlock_timeout (%s) of waiting and aborts one transaction with 40P01; meanwhile every session queued behind the locked rows waits too, so throughput collapses well beyond the failed transactions.", timeout)
		f.Remedy = diagnose.InversionRemedy(inv)
		for _, more := range concurrent[1:] {
			f.Evidence = append(f.Evidence, diagnose.InversionEvidence(more)...)
		}
	} else {
		f.Headline = fmt.Sprintf("%s; the scripts show no lock-order inversion, so the cycle comes from rows chosen at run time", rate)
		if len(count.Details) > 0 {
			if desc := describeDeadlockDetail(count.Details[0]); desc != "" {
				f.Headline = fmt.Sprintf("%s: %s", rate, desc)
			}
		}
		f.Mechanism = "Two or more transactions each hold a row or table lock the other needs, so none can proceed; " +
			fmt.Sprintf("PostgreSQL detects the cycle after deadlock_timeout (%s) and aborts one of them with 40P01. ", timeout) +
			"The statements that failed and the DETAIL above name the lock types; multi-row statements (UPDATE … WHERE … IN, joins, foreign-key checks) take rows in whatever order the plan visits them."
		f.Remedy = "Make every transaction take its row locks in one global order: lock the rows it will change first, in one statement, " +
			"`SELECT … FROM t WHERE key = ANY($1) ORDER BY key FOR UPDATE`, then update them; keep transactions short, and retry transactions that fail with 40P01 (max_tries in the workload)."
	}
	return []diagnose.Finding{f}
}

// latentDeadlock is the info finding for an inversion the scripts make
// possible although this run saw no deadlock.
func latentDeadlock(run *timeline.Run, f diagnose.Finding, invs []sqlcheck.Inversion) diagnose.Finding {
	inv := invs[0]
	f.Severity = diagnose.Info
	f.Start, f.End = diagnose.LoadWindow(run)
	f.End = math.Max(f.Start, f.End-1e-9)
	if inv.A.Workload == inv.B.Workload {
		f.Workload = inv.A.Workload
	}
	f.Headline = "No deadlock in this run, but " + diagnose.InversionHeadline(inv)
	for _, i := range invs {
		f.Evidence = append(f.Evidence, diagnose.InversionEvidence(i)...)
	}
	if pts := run.Series(pgmetric.Database, pgmetric.Deadlocks); len(pts) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.Deadlocks), T: f.End, Value: 0,
			Text: "0 deadlocks detected in this run: the keys did not collide in opposite orders (yet); more clients or a smaller hot set will make them"})
	}
	f.Mechanism = diagnose.InversionMechanism(inv)
	f.Remedy = diagnose.InversionRemedy(inv)
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func uniqueStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
