package diagnose

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// What the deadlock rule hands the lock-order check (sqlcheck): each
// workload script's text, as the run directory keeps it, with what the
// run says of its workload.

// lockOrderSources reads the run's workload scripts for
// sqlcheck.AnalyzeLockOrder.
func lockOrderSources(run *timeline.Run) []sqlcheck.ScriptSource {
	var out []sqlcheck.ScriptSource
	dialect := scriptDialect(run)
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

// scriptDialect is the language of the run's scripts: MySQL's SQL on a
// MariaDB or MySQL target, else PostgreSQL's.
func scriptDialect(run *timeline.Run) script.Dialect {
	if mariadbRun(run) {
		return script.MySQL
	}
	return script.PostgreSQL
}

func fileBacked(run *timeline.Run, s timeline.ScriptInfo) bool {
	if s.File == "" || run.Dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(run.Dir, timeline.ScriptsDir, filepath.Base(s.File)))
	return err == nil
}

// commandLines are a script's n command lines as summary.json has them.
func commandLines(run *timeline.Run, workload string, index, n int) []int {
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
