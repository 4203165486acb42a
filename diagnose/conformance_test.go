package diagnose

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
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

// knownSources are the sources some metrics package names.
func knownSources() map[string]bool {
	out := map[string]bool{}
	for _, s := range slices.Concat(pgmetric.Sources, hostmetric.Sources, redismetric.Sources, mariadbmetric.Sources) {
		out[s] = true
	}
	return out
}

// withoutSources is run with every sample of the sources drop says to drop.
func withoutSources(run *timeline.Run, drop func(source string) bool) *timeline.Run {
	v := *run
	v.Samples = nil
	for _, s := range run.Samples {
		if !drop(s.Source) {
			v.Samples = append(v.Samples, s)
		}
	}
	v.Manifest.Samplers = nil
	for _, s := range run.Manifest.Samplers {
		if !drop(s.Name) {
			v.Manifest.Samplers = append(v.Manifest.Samplers, s)
		}
	}
	return &v
}

func TestRulesDeclareKnownSources(t *testing.T) {
	t.Parallel()
	known := knownSources()
	for _, r := range Rules() {
		in := r.Inputs()
		seen := map[string]bool{}
		for _, s := range in.Sources() {
			if !known[s] {
				t.Errorf("%s reads source %q, which no metrics package names", r.ID(), s)
			}
			if seen[s] {
				t.Errorf("%s declares source %q twice", r.ID(), s)
			}
			seen[s] = true
		}
	}
	for _, name := range recordings(t) {
		for s := range Recorded(openRecording(t, name)) {
			if !known[s] {
				t.Errorf("recording %s has source %q, which no metrics package names", name, s)
			}
		}
	}
}

// TestRulesReadOnlyWhatTheyDeclare holds each rule's Inputs to what it
// reads, on every recording: taking away every source it does not
// declare changes none of its findings, and taking away every source of
// its AnyOf leaves it with none (so Diagnose skipping it there loses
// nothing).
func TestRulesReadOnlyWhatTheyDeclare(t *testing.T) {
	t.Parallel()
	for _, name := range recordings(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, name)
			for _, r := range Rules() {
				in := r.Inputs()
				want, _ := json.Marshal(findingsOf(r, run))
				declared := withoutSources(run, func(s string) bool { return !slices.Contains(in.Sources(), s) })
				if got, _ := json.Marshal(findingsOf(r, declared)); string(got) != string(want) {
					t.Errorf("%s reads a source it does not declare: without the undeclared ones it finds\n%s\nwant\n%s", r.ID(), got, want)
				}
				if len(in.AnyOf) == 0 {
					continue
				}
				bare := withoutSources(run, func(s string) bool { return slices.Contains(in.AnyOf, s) })
				if in.Applies(Recorded(bare)) {
					t.Errorf("%s: Applies is true on a run without any of %v", r.ID(), in.AnyOf)
				}
				if fs := findingsOf(r, bare); len(fs) > 0 {
					t.Errorf("%s finds %d things without any of %v, which it says it needs: %+v", r.ID(), len(fs), in.AnyOf, fs[0])
				}
			}
		})
	}
}

// TestDiagnoseRunsOnlyRulesWhoseSourcesWereRecorded: a run without
// pg_stat_slru does not run the multixact rule; rules that need nothing
// sampled run on a run with no samples at all.
func TestDiagnoseRunsOnlyRulesWhoseSourcesWereRecorded(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	noSLRU := Recorded(withoutSources(run, func(s string) bool { return s == pgmetric.SLRU }))
	if (multixactSLRUThrash{}).Inputs().Applies(noSLRU) {
		t.Error("multixact-slru-thrash applies to a run without pg_stat_slru")
	}
	if !(multixactSLRUThrash{}).Inputs().Applies(Recorded(run)) {
		t.Error("multixact-slru-thrash does not apply to multixact-broken")
	}
	nothing := Recorded(withoutSources(run, func(string) bool { return true }))
	for _, r := range Rules() {
		if len(r.Inputs().AnyOf) == 0 && !r.Inputs().Applies(nothing) {
			t.Errorf("%s needs nothing sampled but does not apply to a run without samples", r.ID())
		}
	}
	for _, f := range Diagnose(withoutSources(run, func(s string) bool { return s == pgmetric.SLRU })) {
		if f.Rule == "multixact-slru-thrash" {
			t.Errorf("Diagnose ran multixact-slru-thrash without pg_stat_slru: %s", f.Headline)
		}
	}
}
