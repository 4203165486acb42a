package diagnose

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/firedrill/firedrill/timeline"
)

// Rule is a detector over a run's timeline. Rules read only the run
// directory (through *timeline.Run), so they can be recomputed for old
// runs and tested on recorded timelines without a server.
type Rule interface {
	// ID is the rule's stable name, e.g. "multixact-slru-thrash"; scenario
	// thresholds refer to it as finding.<id>.
	ID() string
	// Check returns what the rule concludes from the run, nothing if it
	// sees nothing. It must not fail on missing series (a sampler that did
	// not run, an old run): it simply has less evidence.
	Check(run *timeline.Run) []Finding
	// Inputs says which sampled sources the rule reads, so that Diagnose
	// runs it only where it can conclude something, and the conformance
	// test can hold it to reading nothing else.
	Inputs() Inputs
}

// Inputs are the sampled sources (timeline.Sample.Source, named by a
// metrics package: a kind's, or hostmetric) a rule reads. Client metrics,
// marks, the manifest and the recorded scripts are every run's and are
// not listed.
type Inputs struct {
	// AnyOf: the rule concludes nothing unless the run recorded at least
	// one of these sources. Empty: it can conclude from client metrics
	// alone, and always runs.
	AnyOf []string
	// Also: sources it reads for more evidence when the run has them.
	Also []string
}

// Sources is every source the rule may read.
func (in Inputs) Sources() []string { return append(slices.Clone(in.AnyOf), in.Also...) }

// Applies reports whether a run that recorded the sources in recorded
// gives the rule what it needs.
func (in Inputs) Applies(recorded map[string]bool) bool {
	if len(in.AnyOf) == 0 {
		return true
	}
	for _, s := range in.AnyOf {
		if recorded[s] {
			return true
		}
	}
	return false
}

// Recorded is the set of sources a run has: those with at least one
// sample (failed ones included), and the samplers its manifest says ran.
func Recorded(run *timeline.Run) map[string]bool {
	out := map[string]bool{}
	for _, s := range run.Manifest.Samplers {
		out[s.Name] = true
	}
	for i := range run.Samples {
		out[run.Samples[i].Source] = true
	}
	return out
}

// Diagnose runs the rules whose inputs the run recorded and returns their
// findings, most severe first, then by time. rules are the neutral ones
// and those of the run's kind, as the caller's registry of kinds gives
// them (backend.Registry.Rules); their order breaks ties.
func Diagnose(run *timeline.Run, rules []Rule) []Finding {
	var out []Finding
	recorded := Recorded(run)
	defer beginPass(run)() // the rules share what Shared computes
	for _, r := range rules {
		if !r.Inputs().Applies(recorded) {
			continue
		}
		for _, f := range r.Check(run) {
			f.Rule = r.ID()
			out = append(out, f)
		}
	}
	Sort(out)
	return out
}

// RunWide is implemented by a rule that reads what belongs to no target
// and to the whole run (the service tier's series, shared by the
// workloads of every target): DiagnoseTargets runs it once on the whole
// run instead of on each target's view, where it would see the same
// series again and again.
type RunWide interface {
	Rule
	RunWide()
}

// DiagnoseTargets diagnoses each target of a run of several on its own
// view of the run (timeline.Run.ForTarget), with the rules rulesFor
// gives for the target's kind, and names the target in each finding;
// the run-wide rules (RunWide) of those kinds run once on the whole run
// and name a target themselves where they are about one. A run of one
// system is diagnosed as Diagnose does. While a target is diagnosed its
// rules find the others with Peers.
func DiagnoseTargets(run *timeline.Run, rulesFor func(kind string) []Rule) []Finding {
	names := run.Manifest.TargetNames()
	if len(names) == 0 {
		return Diagnose(run, rulesFor(run.Manifest.Target.Kind))
	}
	var out, wide []Rule
	seen := map[string]bool{}
	var findings []Finding
	for _, name := range names {
		view := run.ForTarget(name)
		done := withPeers(run, view, name, rulesFor)
		out = out[:0]
		for _, r := range rulesFor(view.Manifest.Target.Kind) {
			if _, ok := r.(RunWide); !ok {
				out = append(out, r)
			} else if !seen[r.ID()] {
				seen[r.ID()] = true
				wide = append(wide, r)
			}
		}
		for _, f := range Diagnose(view, out) {
			f.Target = name
			findings = append(findings, f)
		}
		done()
	}
	findings = append(findings, Diagnose(run, wide)...)
	Sort(findings)
	return findings
}

// passes holds, per run being diagnosed, what its rules computed once for
// all of them (Shared); Diagnose empties it when done, so that nothing of
// a run stays once it is diagnosed.
var passes struct {
	sync.Mutex
	byRun map[*timeline.Run]*pass
}

// pass is one run's shared answers, for the Diagnose calls running on it.
type pass struct {
	diagnosing int
	answers    map[any]any
}

// beginPass opens run's shared answers until the returned function is called.
func beginPass(run *timeline.Run) (end func()) {
	passes.Lock()
	defer passes.Unlock()
	if passes.byRun == nil {
		passes.byRun = map[*timeline.Run]*pass{}
	}
	p := passes.byRun[run]
	if p == nil {
		p = &pass{answers: map[any]any{}}
		passes.byRun[run] = p
	}
	p.diagnosing++
	return func() {
		passes.Lock()
		defer passes.Unlock()
		if p.diagnosing--; p.diagnosing == 0 {
			delete(passes.byRun, run)
		}
	}
}

// Shared is compute's answer for run, computed once for all the rules of
// a Diagnose pass over it (several rules reading the same costly thing,
// such as classified scripts); outside a pass it is computed each time.
// key names the answer; use an unexported type of the caller's package.
func Shared[T any](run *timeline.Run, key any, compute func() T) T {
	passes.Lock()
	p := passes.byRun[run]
	if p != nil {
		if v, ok := p.answers[key]; ok {
			passes.Unlock()
			return v.(T)
		}
	}
	passes.Unlock()
	v := compute()
	if p != nil {
		passes.Lock()
		p.answers[key] = v
		passes.Unlock()
	}
	return v
}

// SeverityRank orders severities, critical first; an unknown one sorts last.
func SeverityRank(s string) int {
	switch s {
	case Critical:
		return 0
	case Warning:
		return 1
	case Info:
		return 2
	}
	return 3
}

// Sort orders findings most severe first, then by the start of their window.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if a, b := SeverityRank(fs[i].Severity), SeverityRank(fs[j].Severity); a != b {
			return a < b
		}
		return fs[i].Start < fs[j].Start
	})
}

// Known reports whether id names one of rules (for thresholds and
// drills' expectations).
func Known(rules []Rule, id string) bool {
	return slices.ContainsFunc(rules, func(r Rule) bool { return r.ID() == id })
}

// Write stores findings in the run directory's findings.json.
func Write(dir string, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	return timeline.WriteJSON(dir, timeline.FindingsFile, Findings{Format: FindingsFormat, Findings: fs})
}

// Read loads a run directory's findings.json; ok is false if it has none
// (a run from before diagnosis, or one that did not finish).
func Read(dir string) (fs []Finding, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, timeline.FindingsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var f Findings
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, false, fmt.Errorf("%s: %w", filepath.Join(dir, timeline.FindingsFile), err)
	}
	return f.Findings, true, nil
}
