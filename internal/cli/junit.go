package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/timeline"
)

// junitFlag is --junit FILE: the checks of a run (thresholds) or a drill
// (expectations) as JUnit XML for CI systems (report.WriteJUnit).
type junitFlag struct {
	path string
}

func (j *junitFlag) add(f *pflag.FlagSet, what string) {
	f.Var(j, "junit", "also write "+what+" as JUnit XML to this file, one test case each, for CI test reports")
}

var _ pflag.Value = (*junitFlag)(nil)

// Set takes the flag's file, refusing "-" before anything runs.
func (j *junitFlag) Set(path string) error {
	if path == "-" || path == "" {
		return fmt.Errorf("--junit needs a file name: standard output carries the summary (--json - puts JSON there)")
	}
	j.path = path
	return nil
}

// String is the file, for --help's default.
func (j *junitFlag) String() string { return j.path }

// Type names the value in --help.
func (j *junitFlag) Type() string { return "FILE" }

// write writes the suites to the flag's file, when given.
func (j *junitFlag) write(env *clikit.Env, suites []report.JUnitSuite) error {
	if j.path == "" {
		return nil
	}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, suites); err != nil {
		return err
	}
	if err := clikit.WritePrivateFile(j.path, buf.Bytes()); err != nil {
		return fmt.Errorf("write --junit: %w", err)
	}
	return nil
}

// runSuite is a run's thresholds as one JUnit suite.
func runSuite(run *timeline.Run, thresholds []report.ThresholdResult) report.JUnitSuite {
	m := &run.Manifest
	s := report.JUnitSuite{
		Name: m.Name + " thresholds", Timestamp: m.Started,
		Properties: [][2]string{{"run_dir", run.Dir}, {"scenario", m.Name}, {"status", m.Status}},
		Cases:      report.ThresholdCases(m.Name, thresholds),
	}
	if !m.Ended.IsZero() {
		s.Duration = m.Ended.Sub(m.Started)
	}
	return s
}

// writeRun writes --junit for a run.
func (j *junitFlag) writeRun(env *clikit.Env, run *timeline.Run, thresholds []report.ThresholdResult) error {
	return j.write(env, []report.JUnitSuite{runSuite(run, thresholds)})
}

// drillSuites are a drill's expectations as JUnit suites, one per variant
// (class firedrill.drill.<drill>.<variant>), judged as printChecks judges
// them.
func drillSuites(d drills.Drill, runs []variantRun, quick bool, rules []diagnose.Rule, ms drills.Measures) []report.JUnitSuite {
	others := map[string]*timeline.Run{}
	for _, r := range runs {
		others[r.variant.Name] = r.run
	}
	var suites []report.JUnitSuite
	for _, r := range runs {
		m := &r.run.Manifest
		s := report.JUnitSuite{
			Name: "drill " + d.Name + " " + r.variant.Name, Timestamp: m.Started, Duration: r.elapsed,
			Properties: [][2]string{{"run_dir", r.run.Dir}, {"variant", r.variant.Name}, {"summary", r.variant.Summary}, {"status", m.Status}, {"quick", fmt.Sprint(quick)}},
		}
		if s.Duration == 0 && !m.Ended.IsZero() {
			s.Duration = m.Ended.Sub(m.Started)
		}
		for _, c := range d.Check(r.variant, r.run, r.findings, rules, quick, others, ms) {
			jc := report.JUnitCase{Class: "firedrill.drill." + d.Name + "." + r.variant.Name, Name: c.Expectation, Output: c.Got}
			switch {
			case c.Skipped:
				jc.Skipped = "compares with a variant that did not run: " + c.Got
			case !c.Pass:
				jc.Failure = c.Expectation + ": " + c.Got
			}
			s.Cases = append(s.Cases, jc)
		}
		suites = append(suites, s)
	}
	return suites
}

// concluded writes --junit for a drill after conclude judged it, and
// keeps conclude's outcome unless the file cannot be written.
func (j *junitFlag) concluded(env *clikit.Env, d drills.Drill, runs []variantRun, quick bool, rules []diagnose.Rule, ms drills.Measures, outcome error) error {
	if err := j.write(env, drillSuites(d, runs, quick, rules, ms)); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	return outcome
}
