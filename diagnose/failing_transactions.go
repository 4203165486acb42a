package diagnose

import (
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// failingTransactions reports a workload whose transactions all failed
// for a stretch of the run (a broken script, a missing table, a wrong
// schema): the run then measured the error path, not the database under
// load. Failures of connections alone are an outage, not this.
type failingTransactions struct{}

var _ Rule = failingTransactions{}

func (failingTransactions) ID() string { return "failing-transactions" }

// Inputs names the sources the rule reads.
func (failingTransactions) Inputs() Inputs { return Inputs{} }

// failingStretch is how long every transaction must fail before it is a
// finding: the default abort_on_failure window. A shorter workload whose
// transactions all failed from its start to its end counts too.
const failingStretch = 5.0

// failingHints say what to do about the commonest errors of a script that
// can never succeed, by SQLSTATE.
var failingHints = map[string]string{
	"42601": "the command is not valid SQL: fix its syntax",
	"42P01": "the table does not exist: create it in setup, or check the schema the workload's search_path names",
	"42703": "a column does not exist: check the table's definition in setup",
	"42883": "a function or operator does not exist for these argument types: check the types of the script's variables",
	"22012": "the command divides by zero: check the expression and the variables it uses",
	"3D000": "the database does not exist: check the target",
	"42501": "the role lacks a privilege: grant it, or run as the table's owner",
}

func (r failingTransactions) Check(run *timeline.Run) []Finding {
	var out []Finding
	for _, w := range run.Manifest.Workloads {
		if f, ok := r.check(run, w); ok {
			out = append(out, f)
		}
	}
	return out
}

func (failingTransactions) check(run *timeline.Run, w timeline.WorkloadInfo) (Finding, bool) {
	ivs := run.WorkloadIntervals(w.Name)
	// The longest run of intervals in which transactions failed, none
	// succeeded, and not only by losing their connections.
	bestFrom, bestTo, from := -1, -1, -1
	for i, iv := range ivs {
		if iv.Count == 0 && iv.Failed > connectionFailures(iv) {
			if from < 0 {
				from = i
			}
			if bestFrom < 0 || iv.End-ivs[from].Start > ivs[bestTo].End-ivs[bestFrom].Start {
				bestFrom, bestTo = from, i
			}
			continue
		}
		from = -1
	}
	if bestFrom < 0 {
		return Finding{}, false
	}
	start, end := ivs[bestFrom].Start, ivs[bestTo].End
	whole := bestFrom == 0 && bestTo == len(ivs)-1
	if end-start < failingStretch && !whole {
		return Finding{}, false
	}
	var failed int64
	codes := map[string]int64{}
	for _, iv := range ivs[bestFrom : bestTo+1] {
		failed += iv.Failed
		for code, n := range iv.Errors {
			if !iv.ConnectionCode(code) {
				codes[code] += n
			}
		}
	}
	code := ""
	for c, n := range codes {
		if code == "" || n > codes[code] || n == codes[code] && c < code {
			code = c
		}
	}
	es := WorkloadError(run, w.Name, code)
	message := code
	where, text := "", ""
	if es != nil {
		message = FirstLine(es.Message)
		where, text = scriptLine(run, w, es.Script, es.Line)
	}
	if !strings.Contains(message, code) {
		message += " (" + code + ")"
	}
	at := ""
	if where != "" {
		at = " at " + where
		if text != "" {
			at += " (" + text + ")"
		}
	}
	f := Finding{
		Severity: Critical,
		Start:    start,
		End:      end,
		Workload: w.Name,
		Headline: fmt.Sprintf("Every transaction of workload %s failed for %.0f s: %s%s", w.Name, end-start, message, at),
		Evidence: []Evidence{{
			Series: "workload:" + w.Name + ".failed", T: start, Value: float64(failed),
			Text: fmt.Sprintf("%d transactions failed and none succeeded from %.0f s to %.0f s", failed, start, end),
		}},
		Mechanism: "The workload's script fails every time it runs, so the run measured how fast the server rejects it, " +
			"not how the database behaves under the load: no transaction committed, and every number of the run " +
			"(throughput, latency, waits) describes the error path.",
	}
	if code != "" {
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + w.Name + ".errors." + code, Value: float64(codes[code]),
			Text: fmt.Sprintf("%d × %s: %s", codes[code], code, message)})
	}
	if where != "" {
		f.Evidence = append(f.Evidence, Evidence{Series: "script:" + where, Text: fmt.Sprintf("the command that failed: %s", text)})
	}
	if run.Manifest.Status == timeline.StatusFailed && run.Manifest.Error != "" {
		f.Evidence = append(f.Evidence, Evidence{Series: "manifest:status", Text: "the run was stopped: " + run.Manifest.Error})
	}
	remedy := "Run the failing command by hand against the target (psql) to see the error, and fix the script or the setup"
	if hint, ok := failingHints[code]; ok {
		remedy = "Fix the command" + at + ": " + hint
	}
	f.Remedy = remedy + ". firedrill stops a run whose transactions all fail for 5 s (exit 1); the scenario's abort_on_failure sets the share and the time, or false to let such a run go on."
	return f, true
}

// connectionFailures counts an interval's failed tries that lost or could
// not open a connection.
func connectionFailures(iv timeline.Interval) int64 { return iv.ConnectionFailures() }

// WorkloadError finds a workload's summary of one error code.
func WorkloadError(run *timeline.Run, workload, code string) *timeline.ErrorSummary {
	if run.Summary == nil {
		return nil
	}
	for i := range run.Summary.Workloads {
		ws := &run.Summary.Workloads[i]
		if ws.Name != workload {
			continue
		}
		for j := range ws.Errors {
			if ws.Errors[j].Code == code {
				return &ws.Errors[j]
			}
		}
	}
	return nil
}

// scriptLine names a script's line as file:line (the script's copy in the
// run directory) and the command's text there, from the summary.
func scriptLine(run *timeline.Run, w timeline.WorkloadInfo, script string, line int) (where, text string) {
	for _, s := range w.Scripts {
		if s.Name != script {
			continue
		}
		where = s.Name
		if s.File != "" {
			where = timeline.ScriptsDir + "/" + s.File
		}
		if line <= 0 {
			return where, ""
		}
		return fmt.Sprintf("%s:%d", where, line), commandText(run, w.Name, script, line)
	}
	return "", ""
}

// commandText is the text of a script's command on a line, from the
// summary's per-command totals.
func commandText(run *timeline.Run, workload, script string, line int) string {
	if run.Summary == nil {
		return ""
	}
	for _, ws := range run.Summary.Workloads {
		if ws.Name != workload {
			continue
		}
		for _, ss := range ws.Scripts {
			if ss.Name != script {
				continue
			}
			for _, c := range ss.Commands {
				if c.Line == line {
					return strings.TrimSpace(c.Text)
				}
			}
		}
	}
	return ""
}

// FirstLine is the first line of a message (a server error's, before its DETAIL).
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
