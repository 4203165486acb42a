package diagnose

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// Recordings under testdata/ are real runs of firedrill (run.json,
// timeline.jsonl, summary.json, scenario.yaml, scripts/), recorded on a
// 2-core machine shared with other work: noisy, as real runs are.

// openedRecordings keeps each recording read once for all tests: rules
// only read a run, and tests that change one change a copy.
var openedRecordings struct {
	sync.Mutex
	runs map[string]*timeline.Run
}

// openRecording reads testdata/<name>, a recorded run directory.
func openRecording(t testing.TB, name string) *timeline.Run {
	t.Helper()
	openedRecordings.Lock()
	defer openedRecordings.Unlock()
	if run, ok := openedRecordings.runs[name]; ok {
		return run
	}
	run, err := timeline.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("open recording: %v", err)
	}
	if openedRecordings.runs == nil {
		openedRecordings.runs = map[string]*timeline.Run{}
	}
	openedRecordings.runs[name] = run
	return run
}

// recordings lists every run directory under testdata/.
func recordings(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatalf("list recordings: %v", err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("testdata", e.Name(), timeline.ManifestFile)); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no recordings under testdata/")
	}
	return names
}

// findingsOf runs one rule, as Diagnose would.
func findingsOf(r Rule, run *timeline.Run) []Finding {
	fs := r.Check(run)
	for i := range fs {
		fs[i].Rule = r.ID()
	}
	return fs
}

var ruleID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestRuleIDsAreUniqueKebabCase(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range Rules() {
		id := r.ID()
		if !ruleID.MatchString(id) {
			t.Errorf("rule id %q is not kebab-case", id)
		}
		if seen[id] {
			t.Errorf("rule id %q registered twice", id)
		}
		seen[id] = true
		if !Known(id) {
			t.Errorf("Known(%q) = false", id)
		}
	}
}

// emptyRuns are runs with nothing in them: no rule may find anything there
// or panic. The manifest names a workload that never ran.
func emptyRuns() map[string]*timeline.Run {
	manifest := timeline.Manifest{
		Format: timeline.Format, Name: "empty", Status: timeline.StatusCompleted, Interval: 1,
		Target: timeline.Target{Kind: "postgres", Embedded: true, ServerVersion: "15.18", VersionNum: 150018},
		Host:   timeline.Host{CPUs: 2},
		Workloads: []timeline.WorkloadInfo{{Name: "oltp", Clients: 8, Mode: "prepared",
			Scripts: []timeline.ScriptInfo{{Name: "multixact.sql", Weight: 1, Commands: []string{
				"BEGIN;", "SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;", "SAVEPOINT nested;",
				"UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;", "COMMIT;"}}}}},
		Settings: map[string]string{"statement_timeout": "0", "idle_in_transaction_session_timeout": "0"},
	}
	return map[string]*timeline.Run{
		"zero":          {},
		"manifest only": {Manifest: manifest},
		"empty summary": {Manifest: manifest, Summary: &timeline.Summary{}},
	}
}

func TestRulesFindNothingInAnEmptyRun(t *testing.T) {
	t.Parallel()
	for name, run := range emptyRuns() {
		for _, r := range Rules() {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s on the %s run panicked: %v", r.ID(), name, p)
					}
				}()
				if fs := r.Check(run); len(fs) != 0 {
					t.Errorf("%s on the %s run: %d findings, want none: %+v", r.ID(), name, len(fs), fs)
				}
			}()
		}
	}
}

// checkFinding reports what a finding lacks.
func checkFinding(t *testing.T, where string, r Rule, f Finding, runEnd float64) {
	t.Helper()
	if f.Rule != "" && f.Rule != r.ID() {
		t.Errorf("%s: rule %q, want %q", where, f.Rule, r.ID())
	}
	if SeverityRank(f.Severity) > 2 {
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

func TestFindingsOnRecordingsAreComplete(t *testing.T) {
	t.Parallel()
	for _, name := range recordings(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, name)
			end := RunEnd(run)
			for _, r := range Rules() {
				for i, f := range findingsOf(r, run) {
					checkFinding(t, r.ID()+" #"+strconv.Itoa(i), r, f, end)
				}
			}
		})
	}
}

// TestRulesTolerateMissingSourcesAndGaps runs every rule on every
// recording with sources taken out (each source is missing in one
// variant), with every other sample missing, and without details and
// marks: what an old run, a sampler that failed or a busy server leaves.
// Rules must not panic, and what they find must stay well-formed.
func TestRulesTolerateMissingSourcesAndGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every rule many times")
	}
	t.Parallel()
	const groups = 3 // sources are dropped a third at a time
	for _, name := range recordings(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, name)
			index := map[string]int{}
			for _, s := range run.Samples {
				if _, ok := index[s.Source]; !ok {
					index[s.Source] = len(index)
				}
			}
			variants := map[string]*timeline.Run{}
			for g := 0; g < groups; g++ {
				v := *run
				v.Samples = nil
				var dropped []string
				for _, s := range run.Samples {
					if index[s.Source]%groups != g {
						v.Samples = append(v.Samples, s)
					}
				}
				for source, i := range index {
					if i%groups == g {
						dropped = append(dropped, source)
					}
				}
				variants["without "+strings.Join(dropped, ", ")] = &v
			}
			gappy := *run
			gappy.Samples = nil
			for i, s := range run.Samples {
				if i%2 == 0 {
					gappy.Samples = append(gappy.Samples, s)
				}
			}
			variants["every other sample"] = &gappy
			noDetail := *run
			noDetail.Marks = nil
			noDetail.Samples = make([]timeline.Sample, len(run.Samples))
			for i, s := range run.Samples {
				s.Detail = nil
				noDetail.Samples[i] = s
			}
			variants["no details, no marks"] = &noDetail
			for vname, v := range variants {
				for _, r := range Rules() {
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Errorf("%s: %s panicked: %v", vname, r.ID(), p)
							}
						}()
						for _, f := range findingsOf(r, v) {
							checkFinding(t, vname+": "+r.ID(), r, f, RunEnd(run))
						}
					}()
				}
			}
		})
	}
}

// TestHealthyRecordingHasNoWarningFromAnyRule holds every registered rule,
// whoever wrote it, to the promise: a healthy run (builtin
// tpcb-like, no events) yields no warning or critical finding.
func TestHealthyRecordingHasNoWarningFromAnyRule(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy", "guarded"} {
		run := openRecording(t, name)
		for _, f := range Diagnose(run) {
			if f.Severity == Warning || f.Severity == Critical {
				t.Errorf("%s: %s %s: %s", name, f.Rule, f.Severity, f.Headline)
			}
		}
	}
}
