package diagnose

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

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
// metrics package: pgmetric, hostmetric) a rule reads. Client metrics,
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

// Diagnose runs the registered rules whose inputs the run recorded and
// returns their findings, most severe first, then by time.
func Diagnose(run *timeline.Run) []Finding {
	var out []Finding
	recorded := Recorded(run)
	defer cacheScripts(run)() // the rules reading classified scripts share them
	for _, r := range Rules() {
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

// Known reports whether id names a registered rule (for thresholds).
func Known(id string) bool {
	for _, r := range Rules() {
		if r.ID() == id {
			return true
		}
	}
	return false
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
