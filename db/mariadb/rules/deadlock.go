package mariadbrules

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// deadlock is the deadlock rule on MariaDB/MySQL (deadlock_innodb.go
// reads InnoDB's side): deadlocks InnoDB detected and the clients' 1213
// and 1467 errors, explained by the scripts' lock order or by the gap
// locks the monitor showed; with none, a lock-order inversion the
// scripts make possible is an info finding.
type deadlock struct{}

var _ diagnose.Rule = deadlock{}

func (deadlock) ID() string { return "deadlock" }

// Inputs names the sources the rule reads.
func (deadlock) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{mariadbmetric.GlobalStatus, mariadbmetric.InnoDBStatus}}
}

// deadlockReferences are InnoDB's pages on deadlocks and row locks.
var deadlockReferences = []string{
	"https://dev.mysql.com/doc/refman/8.0/en/innodb-deadlocks.html",
	"https://dev.mysql.com/doc/refman/8.0/en/innodb-locks-set.html",
	"https://mariadb.com/kb/en/innodb-lock-modes/",
}

// deadlockCount is what the run says about deadlocks.
type deadlockCount struct {
	Server      float64 // Innodb_deadlocks over the run
	ServerPeak  timeline.Point
	HaveServer  bool
	Client      int64            // 1213 and 1467 errors the workloads saw
	ByWorkload  map[string]int64 // per workload
	First, Last float64          // the window (seconds since the start)
	Details     []string         // the distinct server messages
	Failed      []failedCommand  // script commands that failed in workloads with deadlocks
}

type failedCommand struct {
	Workload, Script string
	Line             int
	Text             string
	Failures         int64
}

func (c deadlockCount) total() float64 { return math.Max(c.Server, float64(c.Client)) }

func (deadlock) Check(run *timeline.Run) []diagnose.Finding {
	count := deadlockCount{ByWorkload: map[string]int64{}, First: math.Inf(1), Last: math.Inf(-1)}
	innodb := countInnoDBDeadlocks(run, &count)
	if run.Summary != nil {
		for _, w := range run.Summary.Workloads {
			for _, e := range w.Errors {
				if (e.Code == innodbDeadlockCode || e.Code == innodbAutoIncFailCode) && e.Detail != "" {
					count.Details = append(count.Details, e.Detail)
				}
			}
			if count.ByWorkload[w.Name] == 0 {
				continue
			}
			for _, s := range w.Scripts {
				for _, cmd := range s.Commands {
					if cmd.Failures > 0 {
						count.Failed = append(count.Failed, failedCommand{w.Name, s.Name, cmd.Line, cmd.Text, cmd.Failures})
					}
				}
			}
		}
	}
	if math.IsInf(count.First, 1) {
		count.First, count.Last = 0, 0
	}
	analysis := sqlcheck.AnalyzeLockOrder(diagnose.LockOrderSources(run, mdbdialect.Script()))
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
	f := diagnose.Finding{References: slices.Clone(deadlockReferences)}
	if total <= 0 {
		return []diagnose.Finding{latentDeadlock(run, f, concurrent)}
	}
	f.Severity, f.Lasting = diagnose.Critical, true // deadlocks counted stay counted
	f.Start = math.Max(0, count.First)
	f.End = math.Max(count.Last, f.Start)
	var workloads []string
	for w := range count.ByWorkload {
		workloads = append(workloads, w)
	}
	sort.Strings(workloads)
	if len(workloads) == 1 {
		f.Workload = workloads[0]
	}

	span := math.Max(f.End-f.Start, diagnose.Tick(run))
	serverSeries := mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.Deadlocks)
	if count.HaveServer {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: serverSeries, T: f.End, Value: count.Server,
			Text: fmt.Sprintf("%s deadlocks detected by the server between %.0f s and %.0f s (%s/min)",
				diagnose.HumanNum(count.Server), f.Start, f.End, diagnose.HumanNum(count.Server/span*60))})
		if count.ServerPeak.V > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: serverSeries, T: count.ServerPeak.T,
				Value: count.ServerPeak.V, Text: fmt.Sprintf("peak: %s deadlocks in one interval", diagnose.HumanNum(count.ServerPeak.V))})
		}
	}
	for _, w := range workloads {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + w + ".errors." + innodbDeadlockCode, T: f.End,
			Value: float64(count.ByWorkload[w]),
			Text:  fmt.Sprintf("%s tries of workload %s failed with 1213 (deadlock) or 1467 (a deadlock on the AUTO-INC lock)", diagnose.HumanNum(float64(count.ByWorkload[w])), w)})
	}
	var details []string
	for _, d := range count.Details {
		if !slices.Contains(details, d) {
			details = append(details, d)
		}
	}
	for _, d := range details {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors." + innodbDeadlockCode + ".detail", Text: "DETAIL: " + diagnose.OneLine(d, 400)})
	}
	for _, fc := range count.Failed {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: fmt.Sprintf("script:%s:%d", fc.Script, fc.Line),
			Value: float64(fc.Failures),
			Text:  fmt.Sprintf("%s failures at %s:%d `%s`", diagnose.HumanNum(float64(fc.Failures)), fc.Script, fc.Line, diagnose.OneLine(fc.Text, 100))})
	}

	rate := fmt.Sprintf("%s deadlocks in %s", diagnose.HumanNum(total), diagnose.HumanMS(span*1000))
	shape := shapeOf(innodb.Seen)
	f.Evidence = append(f.Evidence, innodbDeadlockEvidence(innodb, shape)...)
	if explainInnoDBDeadlock(run, &f, rate, shape) {
		return []diagnose.Finding{f}
	}
	if len(concurrent) > 0 {
		inv := concurrent[0]
		f.Evidence = append(f.Evidence, diagnose.InversionEvidence(inv)...)
		f.Headline = fmt.Sprintf("%s: %s", rate, diagnose.InversionHeadline(inv))
		f.Mechanism = diagnose.InversionMechanism(inv) + innodbMechanismTail
		f.Remedy = diagnose.InversionRemedy(inv)
		for _, more := range concurrent[1:] {
			f.Evidence = append(f.Evidence, diagnose.InversionEvidence(more)...)
		}
		return []diagnose.Finding{f}
	}
	f.Headline = fmt.Sprintf("%s; the scripts show no lock-order inversion, so the cycle comes from rows chosen at run time", rate)
	f.Mechanism = "Two or more transactions each hold a row or table lock the other needs, so none can proceed;" + innodbMechanismTail +
		" The monitor's deadlock above names the statements and the locks; multi-row statements take rows in whatever order the plan visits them."
	f.Remedy = "Make every transaction take its row locks in one global order: lock the rows it will change first, in one statement, " +
		"`SELECT … FROM t WHERE key IN (…) ORDER BY key FOR UPDATE`, then update them; keep transactions short, and retry transactions that fail with 1213 (max_tries in the workload)."
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
	f.Mechanism = diagnose.InversionMechanism(inv)
	f.Remedy = diagnose.InversionRemedy(inv)
	return f
}
