// Package diagnosetest opens the recorded runs under diagnose/testdata for
// the tests of rules, wherever those rules live (diagnose, a kind's
// db/<kind>/rules, the registry's conformance tests).
package diagnosetest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// Dir is the folder of the recordings: diagnose/testdata.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// opened keeps each recording read once for all tests of a package:
// rules only read a run, and tests that change one change a copy.
var opened struct {
	sync.Mutex
	runs map[string]*timeline.Run
}

// Open reads the recorded run directory Dir()/name.
func Open(t testing.TB, name string) *timeline.Run {
	t.Helper()
	opened.Lock()
	defer opened.Unlock()
	if run, ok := opened.runs[name]; ok {
		return run
	}
	run, err := timeline.Open(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatalf("open recording: %v", err)
	}
	if opened.runs == nil {
		opened.runs = map[string]*timeline.Run{}
	}
	opened.runs[name] = run
	return run
}

// Recordings lists every recorded run directory under Dir().
func Recordings(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(Dir())
	if err != nil {
		t.Fatalf("list recordings: %v", err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(Dir(), e.Name(), timeline.ManifestFile)); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no recordings under " + Dir())
	}
	return names
}

// FindingsOf runs one rule on run, naming its findings as Diagnose would.
func FindingsOf(r diagnose.Rule, run *timeline.Run) []diagnose.Finding {
	fs := r.Check(run)
	for i := range fs {
		fs[i].Rule = r.ID()
	}
	return fs
}

// CheckFinding reports what a finding of r lacks: a known severity, a
// window inside the run (which ends at runEnd), a one-line headline,
// mechanism, remedy, evidence with series and text, references as URLs.
func CheckFinding(t *testing.T, where string, r diagnose.Rule, f diagnose.Finding, runEnd float64) {
	t.Helper()
	if f.Rule != "" && f.Rule != r.ID() {
		t.Errorf("%s: rule %q, want %q", where, f.Rule, r.ID())
	}
	if diagnose.SeverityRank(f.Severity) > 2 {
		t.Errorf("%s: severity %q is not one of info, warning, critical", where, f.Severity)
	}
	const slack = 1 // the last samples can lie just past the run's last record
	if f.Start < 0 || f.End < f.Start || f.End > runEnd+slack {
		t.Errorf("%s: window [%.1f, %.1f] is not inside the run [0, %.1f]", where, f.Start, f.End, runEnd)
	}
	for field, text := range map[string]string{"headline": f.Headline, "mechanism": f.Mechanism, "remedy": f.Remedy} {
		if strings.TrimSpace(text) == "" {
			t.Errorf("%s: empty %s", where, field)
		}
	}
	if strings.Contains(f.Headline, "\n") {
		t.Errorf("%s: headline is not one line: %q", where, f.Headline)
	}
	if len(f.Evidence) == 0 {
		t.Errorf("%s: no evidence", where)
	}
	for i, e := range f.Evidence {
		if e.Series == "" || strings.TrimSpace(e.Text) == "" {
			t.Errorf("%s: evidence %d lacks its series or text: %+v", where, i, e)
		}
	}
	for _, ref := range f.References {
		if !strings.HasPrefix(ref, "https://") {
			t.Errorf("%s: reference %q is not a URL", where, ref)
		}
	}
}
