package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// What the deadlock rule hands the lock-order check (sqlcheck): each
// workload script's text, as the run directory keeps it, with what the
// run says of its workload.

// LockOrderSources reads the run's workload scripts, written in its
// kind's dialect, for sqlcheck.AnalyzeLockOrder.
func LockOrderSources(run *timeline.Run, dialect script.Dialect) []sqlcheck.ScriptSource {
	var out []sqlcheck.ScriptSource
	for _, w := range run.Manifest.Workloads {
		inputs := workloadInputs(w)
		for si, s := range w.Scripts {
			src := sqlcheck.ScriptSource{Workload: w.Name, Name: s.Name, File: s.File, Text: scriptText(run, s),
				Dialect: dialect, Start: w.Start, Stop: w.Stop, Clients: w.Clients, Inputs: inputs}
			// A copy of the script file has its own lines; a text made
			// of the commands has summary.json's.
			if len(s.Commands) == 0 || !fileBacked(run, s) {
				src.Lines = recordedLines(run, w.Name, si)
			}
			out = append(out, src)
		}
	}
	return out
}

// scriptText is a script's text: the copy under the run's scripts/, or
// for an old run without the copy, the commands' texts, one a line.
func scriptText(run *timeline.Run, s timeline.ScriptInfo) []byte {
	var text []byte
	if s.File != "" && run.Dir != "" {
		text, _ = os.ReadFile(filepath.Join(run.Dir, timeline.ScriptsDir, filepath.Base(s.File)))
	}
	if len(text) == 0 { // an old run without the copy: the commands' texts
		var b strings.Builder
		for _, c := range s.Commands {
			b.WriteString(c)
			if !strings.HasPrefix(strings.TrimSpace(c), `\`) && !strings.HasSuffix(strings.TrimSpace(c), ";") {
				b.WriteString(";")
			}
			b.WriteString("\n")
		}
		text = []byte(b.String())
	}
	return text
}

// workloadInputs are the variables a workload's scripts may read without
// setting them: its defines and :scale, as run.json records them.
func workloadInputs(w timeline.WorkloadInfo) map[string]string {
	m := map[string]string{}
	for k, v := range w.Defines {
		m[k] = v
	}
	if w.Scale > 0 {
		m[script.VarScale] = strconv.Itoa(w.Scale)
	}
	return m
}

func fileBacked(run *timeline.Run, s timeline.ScriptInfo) bool {
	if s.File == "" || run.Dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(run.Dir, timeline.ScriptsDir, filepath.Base(s.File)))
	return err == nil
}

// CommandLines are a script's n command lines as summary.json has them.
func CommandLines(run *timeline.Run, workload string, index, n int) []int {
	if out := recordedLines(run, workload, index); len(out) == n {
		return out
	}
	return nil
}

// recordedLines are the lines of a script's commands as summary.json has
// them (workload names are unique in a run).
func recordedLines(run *timeline.Run, workload string, index int) []int {
	if run.Summary == nil {
		return nil
	}
	for _, w := range run.Summary.Workloads {
		if w.Name != workload || index >= len(w.Scripts) {
			continue
		}
		var out []int
		for _, c := range w.Scripts[index].Commands {
			out = append(out, c.Line)
		}
		return out
	}
	return nil
}

// What findings say of a lock-order inversion (sqlcheck.Inversion), on any
// kind whose scripts take row locks.

// InversionHeadline says in one line which scripts lock rows in opposite orders.
func InversionHeadline(inv sqlcheck.Inversion) string {
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

// InversionEvidence is the script lines that take the locks of an inversion.
func InversionEvidence(inv sqlcheck.Inversion) []Evidence {
	step := func(ls *sqlcheck.LockScript, s *sqlcheck.LockStep, what string) Evidence {
		series := "script:" + ls.Name
		if s.Line > 0 {
			series = fmt.Sprintf("script:%s:%d", ls.Name, s.Line)
		}
		return Evidence{Series: series, Value: float64(s.Line),
			Text: fmt.Sprintf("%s (workload %s): `%s` — %s %s rows by %s", what, ls.Workload, OneLine(s.Text, 100), s.How, s.Table, s.KeyText())}
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

// InversionMechanism explains why an inversion deadlocks.
func InversionMechanism(inv sqlcheck.Inversion) string {
	if inv.CrossTable {
		return fmt.Sprintf("A row lock is held until the transaction ends. %s takes a row of %s and then waits for one of %s while %s holds that row of %s and waits for the first: a cycle neither can leave.",
			inv.A.Name, inv.AFirst.Table, inv.AThen.Table, inv.B.Name, inv.BFirst.Table)
	}
	return fmt.Sprintf("A row lock is held until the transaction ends. When one transaction holds %s row A and waits for row B while another holds B and waits for A, neither can proceed; "+
		"the keys here come from the script's variables in the order they were drawn, not in a global order, so such pairs are routine under concurrency, and the smaller the set of hot rows the more often.",
		inv.Table)
}

// InversionRemedy says how to take an inversion's rows in one order.
func InversionRemedy(inv sqlcheck.Inversion) string {
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
			if !slices.Contains(vars, src) {
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

func lineOf(s *sqlcheck.LockStep) string {
	if s.Line > 0 {
		return fmt.Sprint(s.Line)
	}
	return fmt.Sprintf("command %d", s.Cmd+1)
}
