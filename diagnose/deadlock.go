package diagnose

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
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

var _ Rule = deadlock{}

func (deadlock) ID() string { return "deadlock" }

// Inputs names the sources the rule reads.
func (deadlock) Inputs() Inputs {
	return Inputs{Also: []string{pgmetric.Database, pgmetric.Locks, mariadbmetric.GlobalStatus, mariadbmetric.InnoDBStatus}}
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
	InnoDB      *innodbDeadlocks // on MariaDB/MySQL: InnoDB's count and the deadlocks its monitor showed
}

type failedCommand struct {
	Workload, Script string
	Line             int
	Text             string
	Failures         int64
}

func countDeadlocks(run *timeline.Run) deadlockCount {
	c := deadlockCount{ByWorkload: map[string]int64{}, First: math.Inf(1), Last: math.Inf(-1)}
	tick := Tick(run)
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
	if mariadbRun(run) {
		innodb := countInnoDBDeadlocks(run, &c)
		c.InnoDB = &innodb
		if run.Summary != nil {
			for _, w := range run.Summary.Workloads {
				for _, e := range w.Errors {
					if (e.Code == innodbDeadlockCode || e.Code == innodbAutoIncFailCode) && e.Detail != "" {
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
		if s.T < from || s.T > to+Tick(run) {
			continue
		}
		var pairs []pgmetric.BlockingPair
		if !Detail(&s, &pairs) {
			continue
		}
		for _, p := range pairs {
			if p.Relation != "" {
				relCount[p.Relation]++
			}
			if q := oneLine(p.BlockedQuery, 120); q != "" {
				queryCount[normalizeLiterals(q)]++
			}
		}
	}
	return topKeys(relCount, 3), topKeys(queryCount, 3)
}

var numberLiteral = regexp.MustCompile(`\b\d+(\.\d+)?\b`)

// normalizeLiterals replaces numbers in a query by "?", so that the same
// statement with different keys counts once.
func normalizeLiterals(q string) string { return numberLiteral.ReplaceAllString(q, "?") }

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

func (deadlock) Check(run *timeline.Run) []Finding {
	count := countDeadlocks(run)
	analysis := sqlcheck.AnalyzeLockOrder(lockOrderSources(run))
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
	f := Finding{
		References: []string{
			"https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-DEADLOCKS",
			"https://www.postgresql.org/docs/current/runtime-config-locks.html#GUC-DEADLOCK-TIMEOUT",
			"https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE",
		},
	}
	if total <= 0 {
		return []Finding{latentDeadlock(run, f, concurrent)}
	}
	f.Severity = Critical
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

	span := math.Max(f.End-f.Start, Tick(run))
	serverSeries, clientCode := pgmetric.Series(pgmetric.Database, pgmetric.Deadlocks), deadlockCode+" deadlock_detected"
	if count.InnoDB != nil {
		serverSeries, clientCode = mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.Deadlocks), "1213 (deadlock) or 1467 (a deadlock on the AUTO-INC lock)"
	}
	if count.HaveServer {
		ev := Evidence{Series: serverSeries, T: f.End, Value: count.Server,
			Text: fmt.Sprintf("%s deadlocks detected by the server between %.0f s and %.0f s (%s/min)",
				humanNum(count.Server), f.Start, f.End, humanNum(count.Server/span*60))}
		f.Evidence = append(f.Evidence, ev)
		if count.ServerPeak.V > 0 {
			f.Evidence = append(f.Evidence, Evidence{Series: serverSeries, T: count.ServerPeak.T,
				Value: count.ServerPeak.V, Text: fmt.Sprintf("peak: %s deadlocks in one interval", humanNum(count.ServerPeak.V))})
		}
	}
	for _, w := range workloads {
		errorSeries := "workload:" + w + ".errors." + deadlockCode
		if count.InnoDB != nil {
			errorSeries = "workload:" + w + ".errors." + innodbDeadlockCode
		}
		f.Evidence = append(f.Evidence, Evidence{Series: errorSeries, T: f.End,
			Value: float64(count.ByWorkload[w]),
			Text:  fmt.Sprintf("%s tries of workload %s failed with %s", humanNum(float64(count.ByWorkload[w])), w, clientCode)})
	}
	for _, d := range uniqueStrings(count.Details) {
		text := "DETAIL: " + oneLine(d, 400)
		if desc := describeDeadlockDetail(d); desc != "" {
			text = desc + ". " + text
		}
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:errors." + deadlockCode + ".detail", Text: text})
	}
	for _, fc := range count.Failed {
		f.Evidence = append(f.Evidence, Evidence{Series: fmt.Sprintf("script:%s:%d", fc.Script, fc.Line),
			Value: float64(fc.Failures),
			Text:  fmt.Sprintf("%s failures at %s:%d `%s`", humanNum(float64(fc.Failures)), fc.Script, fc.Line, oneLine(fc.Text, 100))})
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
		f.Evidence = append(f.Evidence, Evidence{Series: "locks:blocked", T: f.Start, Text: text})
	}

	timeout := settingText(run, "deadlock_timeout", "1s")
	rate := fmt.Sprintf("%s deadlocks in %s", humanNum(total), humanMS(span*1000))
	if count.InnoDB != nil {
		shape := shapeOf(count.InnoDB.Seen)
		f.Evidence = append(f.Evidence, innodbDeadlockEvidence(*count.InnoDB, shape)...)
		f.References = []string{
			"https://dev.mysql.com/doc/refman/8.0/en/innodb-deadlocks.html",
			"https://dev.mysql.com/doc/refman/8.0/en/innodb-locks-set.html",
			"https://mariadb.com/kb/en/innodb-lock-modes/",
		}
		if explainInnoDBDeadlock(run, &f, rate, shape) {
			return []Finding{f}
		}
	}
	if len(concurrent) > 0 {
		inv := concurrent[0]
		f.Evidence = append(f.Evidence, inversionEvidence(inv)...)
		f.Headline = fmt.Sprintf("%s: %s", rate, inversionHeadline(inv))
		f.Mechanism = inversionMechanism(inv) + fmt.Sprintf(" PostgreSQL finds the cycle after deadlock_timeout (%s) of waiting and aborts one transaction with 40P01; meanwhile every session queued behind the locked rows waits too, so throughput collapses well beyond the failed transactions.", timeout)
		if count.InnoDB != nil {
			f.Mechanism = inversionMechanism(inv) + innodbMechanismTail
		}
		f.Remedy = inversionRemedy(inv)
		for _, more := range concurrent[1:] {
			f.Evidence = append(f.Evidence, inversionEvidence(more)...)
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
		if count.InnoDB != nil {
			f.Mechanism = "Two or more transactions each hold a row or table lock the other needs, so none can proceed;" + innodbMechanismTail +
				" The monitor's deadlock above names the statements and the locks; multi-row statements take rows in whatever order the plan visits them."
			f.Remedy = "Make every transaction take its row locks in one global order: lock the rows it will change first, in one statement, " +
				"`SELECT … FROM t WHERE key IN (…) ORDER BY key FOR UPDATE`, then update them; keep transactions short, and retry transactions that fail with 1213 (max_tries in the workload)."
		}
	}
	return []Finding{f}
}

// latentDeadlock is the info finding for an inversion the scripts make
// possible although this run saw no deadlock.
func latentDeadlock(run *timeline.Run, f Finding, invs []sqlcheck.Inversion) Finding {
	inv := invs[0]
	f.Severity = Info
	f.Start, f.End = loadWindow(run)
	f.End = math.Max(f.Start, f.End-1e-9)
	if inv.A.Workload == inv.B.Workload {
		f.Workload = inv.A.Workload
	}
	f.Headline = "No deadlock in this run, but " + inversionHeadline(inv)
	for _, i := range invs {
		f.Evidence = append(f.Evidence, inversionEvidence(i)...)
	}
	if pts := run.Series(pgmetric.Database, pgmetric.Deadlocks); len(pts) > 0 {
		f.Evidence = append(f.Evidence, Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.Deadlocks), T: f.End, Value: 0,
			Text: "0 deadlocks detected in this run: the keys did not collide in opposite orders (yet); more clients or a smaller hot set will make them"})
	}
	f.Mechanism = inversionMechanism(inv)
	f.Remedy = inversionRemedy(inv)
	return f
}

func inversionHeadline(inv sqlcheck.Inversion) string {
	switch {
	case inv.SameScript:
		var keys, lines []string
		for _, st := range inv.Chain {
			keys = append(keys, st.KeyText())
			lines = append(lines, lineOf(st))
		}
		return fmt.Sprintf("%s locks %s rows by %s (lines %s) in the order the keys were drawn, so two transactions take the same rows in opposite orders (%s vs %s)",
			inv.A.Name, inv.Table, strings.Join(keys, ", then "), strings.Join(lines, ", "), inv.ExampleA, inv.ExampleB)
	case inv.CrossTable:
		return fmt.Sprintf("%s locks %s before %s (%s, %s) while %s locks them the other way round (%s, %s)",
			inv.A.Name, inv.AFirst.Table, inv.AThen.Table, inv.A.Where(inv.AFirst), inv.A.Where(inv.AThen),
			inv.B.Name, inv.B.Where(inv.BFirst), inv.B.Where(inv.BThen))
	}
	return fmt.Sprintf("%s and %s lock %s rows in opposite orders (%s: %s then %s; %s: %s then %s)",
		inv.A.Name, inv.B.Name, inv.Table, inv.A.Where(inv.AFirst), inv.AFirst.KeyText(), inv.AThen.KeyText(),
		inv.B.Where(inv.BFirst), inv.BFirst.KeyText(), inv.BThen.KeyText())
}

func inversionEvidence(inv sqlcheck.Inversion) []Evidence {
	step := func(ls *sqlcheck.LockScript, s *sqlcheck.LockStep, what string) Evidence {
		series := "script:" + ls.Name
		if s.Line > 0 {
			series = fmt.Sprintf("script:%s:%d", ls.Name, s.Line)
		}
		return Evidence{Series: series, Value: float64(s.Line),
			Text: fmt.Sprintf("%s (workload %s): `%s` — %s %s rows by %s", what, ls.Workload, oneLine(s.Text, 100), s.How, s.Table, s.KeyText())}
	}
	if inv.SameScript {
		var out []Evidence
		for i, st := range inv.Chain {
			what := "locks first"
			if i > 0 {
				what = "then, in the same transaction"
			}
			out = append(out, step(inv.A, st, what))
		}
		out = append(out, Evidence{Series: "script:" + inv.A.Name,
			Text: fmt.Sprintf("simulating %s with its own \\set expressions: one transaction locks %s, another %s — the order follows the random draw", inv.A.Name, inv.ExampleA, inv.ExampleB)})
		return out
	}
	return []Evidence{
		step(inv.A, inv.AFirst, "one order, first"),
		step(inv.A, inv.AThen, "one order, then"),
		step(inv.B, inv.BFirst, "opposite order, first"),
		step(inv.B, inv.BThen, "opposite order, then"),
	}
}

func inversionMechanism(inv sqlcheck.Inversion) string {
	if inv.CrossTable {
		return fmt.Sprintf("A row lock is held until the transaction ends. %s takes a row of %s and then waits for one of %s while %s holds that row of %s and waits for the first: a cycle neither can leave.",
			inv.A.Name, inv.AFirst.Table, inv.AThen.Table, inv.B.Name, inv.BFirst.Table)
	}
	return fmt.Sprintf("A row lock is held until the transaction ends. When one transaction holds %s row A and waits for row B while another holds B and waits for A, neither can proceed; "+
		"the keys here come from the script's variables in the order they were drawn, not in a global order, so such pairs are routine under concurrency, and the smaller the set of hot rows the more often.",
		inv.Table)
}

func inversionRemedy(inv sqlcheck.Inversion) string {
	if inv.CrossTable {
		return fmt.Sprintf("Pick one table order for every transaction (e.g. always %s before %s) and change %s to follow it; retry 40P01 failures meanwhile.",
			inv.BFirst.Table, inv.BThen.Table, inv.A.Name)
	}
	col := "key"
	if len(inv.AFirst.Cols) > 0 {
		col = strings.Join(inv.AFirst.Cols, ", ")
	}
	var vars []string
	steps := append([]*sqlcheck.LockStep{inv.AFirst, inv.AThen, inv.BFirst, inv.BThen}, inv.Chain...)
	for _, s := range steps {
		for _, src := range s.Operands() {
			if !contains(vars, src) {
				vars = append(vars, src)
			}
		}
	}
	list := strings.Join(vars, ", ")
	if list == "" {
		list = "…"
	}
	return fmt.Sprintf("Take %s rows in one global order: sort the keys (%s) before locking — in the application, or in a pgbench script with least()/greatest() — "+
		"or lock them all in one statement that orders them: `SELECT %s FROM %s WHERE %s IN (%s) ORDER BY %s FOR UPDATE;` then run the updates. "+
		"Sorted, two transactions that need the same rows queue on the first one instead of deadlocking; keep retrying 40P01 failures (max_tries) as a safety net.",
		inv.Table, list, col, inv.Table, firstCol(inv.AFirst), list, col)
}

func firstCol(s *sqlcheck.LockStep) string {
	if len(s.Cols) > 0 {
		return s.Cols[0]
	}
	return "key"
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

// settingText is a server setting from the manifest, or def.
func settingText(run *timeline.Run, name, def string) string {
	if v, ok := run.Manifest.Settings[name]; ok && v != "" {
		return v
	}
	return def
}

func lineOf(s *sqlcheck.LockStep) string {
	if s.Line > 0 {
		return fmt.Sprint(s.Line)
	}
	return fmt.Sprintf("command %d", s.Cmd+1)
}
