package kinds_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/diagnose/diagnosetest"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	servicerules "github.com/firedrill/firedrill/service/rules"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Recordings under diagnose/testdata/ are real runs of firedrill (run.json,
// timeline.jsonl, summary.json, scenario.yaml, scripts/), recorded on a
// 2-core machine shared with other work: noisy, as real runs are. Every
// rule of every kind meets each of them here, the registry's conformance
// test for rules.

var (
	openRecording = diagnosetest.Open
	recordings    = diagnosetest.Recordings
	findingsOf    = diagnosetest.FindingsOf
	checkFinding  = diagnosetest.CheckFinding
)

// everyRule is every rule of every kind, and the neutral ones.
func everyRule() []diagnose.Rule { return kinds.Registry().AllRules() }

// diagnoseRun diagnoses run with its kind's rules (each target's, in a
// run of several), as the command line does.
func diagnoseRun(run *timeline.Run) []diagnose.Finding {
	return diagnose.DiagnoseTargets(run, kinds.Registry().Rules)
}

// ruleOf is kind's rule id.
func ruleOf(t *testing.T, kind, id string) diagnose.Rule {
	t.Helper()
	for _, r := range kinds.Registry().Rules(kind) {
		if r.ID() == id {
			return r
		}
	}
	t.Fatalf("%s has no rule %s", kind, id)
	return nil
}

var ruleID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Within a run's rules (a kind's and the neutral ones) an id is one rule;
// several kinds may each have a variant of one id.
func TestRuleIDsAreUniqueKebabCase(t *testing.T) {
	t.Parallel()
	reg := kinds.Registry()
	for _, kind := range reg.Kinds() {
		seen := map[string]bool{}
		for _, r := range reg.Rules(kind) {
			id := r.ID()
			if !ruleID.MatchString(id) {
				t.Errorf("rule id %q is not kebab-case", id)
			}
			if seen[id] {
				t.Errorf("%s: rule id %q registered twice", kind, id)
			}
			seen[id] = true
			if !diagnose.Known(reg.AllRules(), id) {
				t.Errorf("Known(%q) = false", id)
			}
		}
	}
}

// A run gets its own kind's rules and the neutral ones, never another
// kind's; a run recorded before kinds (no kind) is PostgreSQL's.
func TestRunsGetOnlyTheirKindsRules(t *testing.T) {
	t.Parallel()
	reg := kinds.Registry()
	ids := func(rules []diagnose.Rule) []string {
		var out []string
		for _, r := range rules {
			out = append(out, fmt.Sprintf("%T", r))
		}
		return out
	}
	for _, b := range reg.Backends() {
		ruled, ok := b.(backend.Ruled)
		if !ok {
			t.Errorf("%s registers no rules", b.Kind())
			continue
		}
		want := ids(slices.Concat(ruled.Rules(), diagnose.Neutral(), servicerules.Rules()))
		if got := ids(reg.Rules(b.Kind())); !slices.Equal(got, want) {
			t.Errorf("Rules(%s) = %v, want %v", b.Kind(), got, want)
		}
	}
	if got, want := ids(reg.Rules("")), ids(reg.Rules(reg.Default())); !slices.Equal(got, want) {
		t.Errorf("a run without a kind gets %v, want the default kind's %v", got, want)
	}
	if got, want := ids(reg.Rules("no-such-kind")), ids(append(diagnose.Neutral(), servicerules.Rules()...)); !slices.Equal(got, want) {
		t.Errorf("an unknown kind gets %v, want the neutral and service rules %v", got, want)
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
		for _, r := range everyRule() {
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

func TestFindingsOnRecordingsAreComplete(t *testing.T) {
	t.Parallel()
	for _, name := range recordings(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, name)
			end := diagnose.RunEnd(run)
			for _, r := range everyRule() {
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
				for _, r := range everyRule() {
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Errorf("%s: %s panicked: %v", vname, r.ID(), p)
							}
						}()
						for _, f := range findingsOf(r, v) {
							checkFinding(t, vname+": "+r.ID(), r, f, diagnose.RunEnd(run))
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
		for _, f := range diagnoseRun(run) {
			if f.Severity == diagnose.Warning || f.Severity == diagnose.Critical {
				t.Errorf("%s: %s %s: %s", name, f.Rule, f.Severity, f.Headline)
			}
		}
	}
}

// knownSources are the sources some metrics package names.
func knownSources() map[string]bool {
	out := map[string]bool{}
	for _, s := range slices.Concat(pgmetric.Sources, hostmetric.Sources, redismetric.Sources, mariadbmetric.Sources, []string{httpmetric.Source, svcmetric.Source}) {
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
	for _, r := range everyRule() {
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
		for s := range diagnose.Recorded(openRecording(t, name)) {
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
			for _, r := range everyRule() {
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
				if in.Applies(diagnose.Recorded(bare)) {
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
	multixact := ruleOf(t, "postgres", "multixact-slru-thrash")
	noSLRU := diagnose.Recorded(withoutSources(run, func(s string) bool { return s == pgmetric.SLRU }))
	if multixact.Inputs().Applies(noSLRU) {
		t.Error("multixact-slru-thrash applies to a run without pg_stat_slru")
	}
	if !multixact.Inputs().Applies(diagnose.Recorded(run)) {
		t.Error("multixact-slru-thrash does not apply to multixact-broken")
	}
	nothing := diagnose.Recorded(withoutSources(run, func(string) bool { return true }))
	for _, r := range everyRule() {
		if len(r.Inputs().AnyOf) == 0 && !r.Inputs().Applies(nothing) {
			t.Errorf("%s needs nothing sampled but does not apply to a run without samples", r.ID())
		}
	}
	for _, f := range diagnoseRun(withoutSources(run, func(s string) bool { return s == pgmetric.SLRU })) {
		if f.Rule == "multixact-slru-thrash" {
			t.Errorf("Diagnose ran multixact-slru-thrash without pg_stat_slru: %s", f.Headline)
		}
	}
}
