package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"os"
	"path/filepath"
	"slices"

	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// The run's workload scripts, their commands classified by sqlcheck, for
// the rules that read what the scripts do (subtransaction-overflow,
// multixact-slru-thrash, missing-index).

// scriptCommand is one command of a workload's script, with where it is.
type scriptCommand struct {
	Workload, Script string
	File             string // the copy under the run's scripts/, if any
	Line             int    // in the script, 0 if unknown
	Text             string
	Stmt             sqlcheck.Stmt
}

// series names the command as evidence: "script:FILE:LINE".
func (c scriptCommand) series() string {
	name := c.Script
	if c.File != "" {
		name = c.File
	}
	if c.Line > 0 {
		return fmt.Sprintf("script:%s:%d", name, c.Line)
	}
	return "script:" + name
}

// workloadScript is a script of a workload with its commands classified.
type workloadScript struct {
	Workload, Script, File string
	Commands               []scriptCommand
}

// workloadScripts returns every workload script of the run with its
// commands: from the manifest, or (an old run without command texts)
// from the copies under scripts/. Lines come from summary.json.
func workloadScripts(run *timeline.Run) []workloadScript {
	return classifyScripts(run, nil)
}

// savepointScripts returns the workload scripts of the run that open a
// savepoint, classified: all that the subtransaction rules
// (subtransaction-overflow, multixact-slru-thrash) read, since a script
// without a SAVEPOINT gives them nothing. The others are not classified
// at all: for a generated script of 100,000 commands that took ~90 MB of
// allocation per rule (issue 14). Within one Diagnose the scripts are
// classified once, for both rules.
func savepointScripts(run *timeline.Run) []workloadScript {
	return diagnose.Shared(run, savepointScriptsKey{}, func() []workloadScript {
		return classifyScripts(run, func(texts []string) bool { return slices.ContainsFunc(texts, sqlcheck.MaySavepoint) })
	})
}

// savepointScriptsKey names savepointScripts' answer among a Diagnose
// pass's shared ones.
type savepointScriptsKey struct{}

// classifyScripts is workloadScripts of the scripts whose command texts
// keep accepts (all with a nil keep).
func classifyScripts(run *timeline.Run, keep func(texts []string) bool) []workloadScript {
	var out []workloadScript
	for _, w := range run.Manifest.Workloads {
		for si, s := range w.Scripts {
			ws := workloadScript{Workload: w.Name, Script: s.Name, File: s.File}
			texts := s.Commands
			var lines []int
			if len(texts) == 0 && s.File != "" && run.Dir != "" {
				texts, lines = splitScriptFile(filepath.Join(run.Dir, timeline.ScriptsDir, filepath.Base(s.File)))
			}
			if keep != nil && !keep(texts) {
				continue
			}
			ws.Commands = make([]scriptCommand, 0, len(texts))
			summary := scriptSummary(run, w.Name, s.Name, si)
			for ci, text := range texts {
				c := scriptCommand{Workload: w.Name, Script: s.Name, File: s.File, Text: text, Stmt: sqlcheck.Classify(text)}
				switch {
				case ci < len(lines):
					c.Line = lines[ci]
				case summary != nil && ci < len(summary.Commands):
					c.Line = summary.Commands[ci].Line
				}
				ws.Commands = append(ws.Commands, c)
			}
			out = append(out, ws)
		}
	}
	return out
}

// scriptSummary finds a script's totals (for its commands' lines).
func scriptSummary(run *timeline.Run, workload, script string, index int) *timeline.ScriptSummary {
	if run.Summary == nil {
		return nil
	}
	for wi := range run.Summary.Workloads {
		w := &run.Summary.Workloads[wi]
		if w.Name != workload {
			continue
		}
		for i := range w.Scripts {
			if w.Scripts[i].Name == script {
				return &w.Scripts[i]
			}
		}
		if index < len(w.Scripts) {
			return &w.Scripts[index]
		}
	}
	return nil
}

// splitScriptFile reads a copy of a pgbench script file into commands
// (sqlcheck.SplitScript): the fallback for runs whose manifest lacks
// command texts.
func splitScriptFile(path string) (texts []string, lines []int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	return sqlcheck.SplitScript(string(b))
}
