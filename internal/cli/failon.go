package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
)

// ExitFindings is the exit code of a run or drill whose diagnosis has a
// finding at --fail-on's severity or worse: the thresholds' code, as CI
// treats both alike ("the run completed, but it is not good").
const ExitFindings = clikit.ExitThresholds

// failOnFlag is --fail-on warning|critical: exit ExitFindings when the
// diagnosis has a finding that severe or worse.
type failOnFlag struct {
	severity string // "" without the flag
}

var _ pflag.Value = (*failOnFlag)(nil)

func (f *failOnFlag) add(fs *pflag.FlagSet, what string) {
	fs.Var(f, "fail-on", "exit "+fmt.Sprint(ExitFindings)+" when "+what+" has a finding of this severity or worse: warning or critical")
}

// Set takes the severity, refusing others before anything runs.
func (f *failOnFlag) Set(s string) error {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case diagnose.Warning, diagnose.Critical:
		f.severity = s
		return nil
	}
	return fmt.Errorf("%q is not a severity --fail-on takes: warning or critical", s)
}

// String is the severity, for --help's default.
func (f *failOnFlag) String() string { return f.severity }

// Type names the value in --help.
func (f *failOnFlag) Type() string { return "SEVERITY" }

// failing returns the findings at the flag's severity or worse; none
// without the flag.
func (f *failOnFlag) failing(findings []diagnose.Finding) []diagnose.Finding {
	if f.severity == "" {
		return nil
	}
	var out []diagnose.Finding
	for _, fd := range findings {
		if diagnose.SeverityRank(fd.Severity) <= diagnose.SeverityRank(f.severity) {
			out = append(out, fd)
		}
	}
	return out
}

// check returns an ExitFindings error naming the findings (of where, a
// run or a drill variant: "" or "variant fixed: ") at the flag's
// severity or worse, nil when there are none.
func (f *failOnFlag) check(where string, findings []diagnose.Finding) error {
	bad := f.failing(findings)
	if len(bad) == 0 {
		return nil
	}
	names := make([]string, len(bad))
	for i, fd := range bad {
		names[i] = strings.ToUpper(fd.Severity) + " " + fd.Rule
	}
	return clikit.WithCode(ExitFindings, fmt.Errorf("--fail-on %s: %s%d finding(s): %s", f.severity, where, len(bad), strings.Join(names, ", ")))
}
