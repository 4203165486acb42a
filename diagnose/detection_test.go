package diagnose

import (
	"fmt"
	"math"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// prefix is run as the live stream sees it at t seconds: what was
// recorded up to t, and no summary yet.
func prefix(run *timeline.Run, t float64) *timeline.Run {
	v := &timeline.Run{Dir: run.Dir, Manifest: run.Manifest}
	v.Manifest.Status = timeline.StatusRunning
	for _, iv := range run.Intervals {
		if iv.End <= t {
			v.Intervals = append(v.Intervals, iv)
		}
	}
	for _, s := range run.Samples {
		if s.T <= t {
			v.Samples = append(v.Samples, s)
		}
	}
	for _, m := range run.Marks {
		if m.T <= t {
			v.Marks = append(v.Marks, m)
		}
	}
	return v
}

// firstWarning is the first whole second t of the run at which the rule,
// run on what was recorded up to t, gives a WARNING or CRITICAL finding;
// ok is false if it never does.
func firstWarning(r Rule, run *timeline.Run, from float64) (t float64, ok bool) {
	end := RunEnd(run)
	for t = math.Floor(from); t <= math.Ceil(end); t++ {
		for _, f := range r.Check(prefix(run, t)) {
			if f.Severity == Warning || f.Severity == Critical {
				return t, true
			}
		}
	}
	return 0, false
}

// incidentOnset is when a recording's incident begins: the start of the
// named event, or, with no event, when the workload's first interval
// begins (a load-driven incident starts with the load).
func incidentOnset(t *testing.T, run *timeline.Run, event, workload string) float64 {
	t.Helper()
	if event != "" {
		for _, e := range Events(run) {
			if e.Name == event {
				return e.Start
			}
		}
		t.Fatalf("no event %q in the recording", event)
	}
	ivs := run.WorkloadIntervals(workload)
	if len(ivs) == 0 {
		t.Fatalf("no intervals of workload %q in the recording", workload)
	}
	return ivs[0].Start
}

// detectionCases are each rule's recorded incident, with the seconds
// from its onset to the rule's first WARNING, re-diagnosing the timeline
// as recorded up to each second (1 s sampling). diagnose/README.md shows
// the same table; a change that makes a rule slower or faster updates
// both.
var detectionCases = []struct {
	rule      Rule
	recording string
	event     string // the incident starts with this event …
	workload  string // … or with this workload's load
	seconds   float64
}{
	{multixactSLRUThrash{}, "multixact-broken", "long-tx", "", 13},
	{multixactSLRUThrash{}, "mxfunc", "long-tx", "", 16},
	{xminHorizonHeld{}, "multixact-broken", "long-tx", "", 15},
	{subtransactionOverflow{}, "subtrans", "long-tx", "", 12},
	{subtransactionOverflow{}, "subfunc", "long-tx", "", 13},
	{generatorLimited{}, "generator-limited", "", "flood", 6},
	{deadlock{}, "stock-deadlock", "", "cart", 2},
	{lockContention{}, "hotrow", "", "orders", 2},
	{missingIndex{}, "journal", "", "feed", 2},
	{connectionSaturation{}, "poolsmall", "", "api", 2},
	{commitBound{}, "commit", "", "updates", 3},
	{commitBound{}, "mariadb-commit", "", "updates", 3},
	{checkpointPressure{}, "checkpoints", "", "ingest", 3},
	{tempSpill{}, "tempspill", "", "report", 4},
	{idleBlocker{}, "idleblock", "forgotten-tx", "", 3},
}

func TestDetectionSpeed(t *testing.T) {
	t.Parallel()
	for _, c := range detectionCases {
		t.Run(c.rule.ID()+"/"+c.recording, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, c.recording)
			onset := incidentOnset(t, run, c.event, c.workload)
			at, ok := firstWarning(c.rule, run, onset)
			if !ok {
				t.Fatalf("%s never warns on %s", c.rule.ID(), c.recording)
			}
			got := at - math.Floor(onset)
			t.Logf("| %s | %s | %s |", c.rule.ID(), c.recording, fmt.Sprintf("%.0f s", got))
			if got != c.seconds {
				t.Errorf("%s on %s: first warning %.0f s after the onset (%.1f s), want %.0f s", c.rule.ID(), c.recording, got, onset, c.seconds)
			}
		})
	}
}
