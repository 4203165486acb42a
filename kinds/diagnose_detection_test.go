package kinds_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
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
// ok is false if it never does. In a run of several targets (target not
// ""), the rule runs on that target's view with the others as its peers,
// as DiagnoseTargets runs it (the peers' kinds offer only what says how
// busy their servers were).
func firstWarning(r diagnose.Rule, run *timeline.Run, target string, from float64) (t float64, ok bool) {
	end := diagnose.RunEnd(run)
	check := r.Check
	if target != "" {
		kind := run.ForTarget(target).Manifest.Target.Kind
		reg := kinds.Registry()
		rulesFor := func(k string) []diagnose.Rule {
			if k == kind {
				return []diagnose.Rule{r}
			}
			var out []diagnose.Rule
			for _, pr := range reg.Rules(k) {
				if _, ok := pr.(diagnose.ServerActivity); ok {
					out = append(out, pr)
				}
			}
			return out
		}
		check = func(run *timeline.Run) []diagnose.Finding {
			var out []diagnose.Finding
			for _, f := range diagnose.DiagnoseTargets(run, rulesFor) {
				if f.Target == target && f.Rule == r.ID() {
					out = append(out, f)
				}
			}
			return out
		}
	}
	for t = math.Floor(from); t <= math.Ceil(end); t++ {
		for _, f := range check(prefix(run, t)) {
			if f.Severity == diagnose.Warning || f.Severity == diagnose.Critical {
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
		for _, e := range diagnose.Events(run) {
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
// as recorded up to each second (1 s sampling), by the kind's rule of
// that id. diagnose/README.md shows
// the same table; a change that makes a rule slower or faster updates
// both.
var detectionCases = []struct {
	kind      string
	rule      string
	recording string
	event     string // the incident starts with this event …
	workload  string // … or with this workload's load
	seconds   float64
	target    string // in a run of several, the target the rule is about
}{
	{"postgres", "multixact-creation", "multixact-broken", "long-tx", "", 6, ""},
	{"postgres", "multixact-creation", "mxfunc", "long-tx", "", 7, ""},
	{"postgres", "multixact-slru-thrash", "multixact-broken", "long-tx", "", 13, ""},
	{"postgres", "multixact-slru-thrash", "mxfunc", "long-tx", "", 16, ""},
	{"postgres", "xmin-horizon-held", "multixact-broken", "long-tx", "", 15, ""},
	{"postgres", "subtransaction-overflow", "subtrans", "long-tx", "", 12, ""},
	{"postgres", "subtransaction-overflow", "subfunc", "long-tx", "", 13, ""},
	{"postgres", "generator-limited", "generator-limited", "", "flood", 6, ""},
	{"redis", "generator-limited", "redis-slow-rate", "", "admin", 8, ""},
	{"postgres", "deadlock", "stock-deadlock", "", "cart", 2, ""},
	{"postgres", "lock-contention", "hotrow", "", "orders", 2, ""},
	{"postgres", "missing-index", "journal", "", "feed", 2, ""},
	{"postgres", "connection-saturation", "poolsmall", "", "api", 2, ""},
	{"postgres", "commit-bound", "commit", "", "updates", 3, ""},
	{"mariadb", "commit-bound", "mariadb-commit", "", "updates", 3, ""},
	{"postgres", "checkpoint-pressure", "checkpoints", "", "ingest", 3, ""},
	{"postgres", "temp-spill", "tempspill", "", "report", 4, ""},
	{"postgres", "idle-in-transaction-blocker", "idleblock", "forgotten-tx", "", 3, ""},
	{"mariadb", "idle-in-transaction-blocker", "mariadb-idleblock", "forgotten-tx", "", 3, ""},
	// The HTTP rule, on the service of a run of two targets. The load
	// ramps up (2 transactions/s for 10 s, then to 40/s over 40 s) and
	// the onset is its start, so most of these seconds are the ramp's:
	// the p99 first holds twice its baseline about 20 s (http-journal)
	// and 28 s (http-elsewhere) into the load.
	{"http", "http-latency", "http-journal", "", "browse", 27, "api"},
	{"http", "http-latency", "http-elsewhere", "", "browse", 32, "api"},
}

func TestDetectionSpeed(t *testing.T) {
	t.Parallel()
	for _, c := range detectionCases {
		t.Run(c.rule+"/"+c.recording, func(t *testing.T) {
			t.Parallel()
			rule := ruleOf(t, c.kind, c.rule)
			run := openRecording(t, c.recording)
			onset := incidentOnset(t, run, c.event, c.workload)
			at, ok := firstWarning(rule, run, c.target, onset)
			if !ok {
				t.Fatalf("%s never warns on %s", c.rule, c.recording)
			}
			got := at - math.Floor(onset)
			t.Logf("| %s | %s | %s |", c.rule, c.recording, fmt.Sprintf("%.0f s", got))
			if got != c.seconds {
				t.Errorf("%s on %s: first warning %.0f s after the onset (%.1f s), want %.0f s", c.rule, c.recording, got, onset, c.seconds)
			}
		})
	}
}
