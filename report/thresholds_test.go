package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// thresholdScenario parses a scenario with three workloads (one with a
// pool) and the given thresholds block, as a user would write it.
func thresholdScenario(t *testing.T, thresholds string) *scenario.Scenario {
	t.Helper()
	src := `name: thresholds
duration: 60s
workloads:
  - name: oltp
    clients: 4
    scripts: [{inline: "SELECT 1;"}]
  - name: pooled
    clients: 8
    pool: 2
    scripts: [{inline: "SELECT 1;"}]
  - name: reports
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
thresholds:
` + thresholds
	sc, err := scenario.Parse("thresholds.yaml", []byte(src), kinds.Registry().ScenarioOptions()) // the kinds' database metrics
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	return sc
}

// thresholdRun is a finished run of oltp and pooled (reports never ran):
// oltp did 60,000 transactions in 60 s with 30 failures, p99 12.3 ms;
// the database sampled 2 deadlocks, 3 temp files, rollbacks at 2/s for 4 s
// and a MultiXactMember hit rate down to 45 %; Xact was sampled but never
// accessed.
func thresholdRun() *timeline.Run {
	pct := timeline.Percentiles{P50: 1_500, P90: 4_000, P95: 6_000, P99: 12_300, P999: 40_000, Max: 95_000}
	pool := timeline.NewHistogram()
	pool.Record(250_000)
	run := &timeline.Run{
		Dir: "testdata/none",
		Manifest: timeline.Manifest{
			Format: timeline.Format, Name: "thresholds", Status: timeline.StatusCompleted, Interval: 1,
			Started:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Workloads: []timeline.WorkloadInfo{{Name: "oltp", Clients: 4}, {Name: "pooled", Clients: 8, Pool: 2}, {Name: "reports", Clients: 1}},
		},
		Summary: &timeline.Summary{Duration: 60, Workloads: []timeline.WorkloadSummary{
			{Name: "oltp", Duration: 60, Count: 60_000, Failed: 30, TPS: 1000, LatencyPct: pct,
				Errors: []timeline.ErrorSummary{{Code: "40P01", Message: "deadlock detected\nDETAIL: …", Count: 30}}},
			{Name: "pooled", Duration: 60, Count: 600, TPS: 10, LatencyPct: pct, PoolWait: pool, PoolPct: pool.Percentiles()},
		}},
	}
	for i := range 5 {
		tick := float64(i + 1)
		run.Samples = append(run.Samples,
			timeline.Sample{Source: "pg_stat_database", T: tick, Values: map[string]float64{
				"deadlocks": float64(i % 2), "temp_files": float64(min(i, 1)) * 1.5, "xact_rollback_per_s": 2,
			}},
			timeline.Sample{Source: "pg_stat_slru", T: tick, Values: map[string]float64{
				"MultiXactMember.hit_rate": 0.99 - 0.135*float64(i), "MultiXactMember.blks_read_per_s": 10,
				"Xact.blks_read_per_s": 0, "Xact.blks_hit_per_s": 0,
			}},
		)
	}
	return run
}

func TestThresholdsEvaluate(t *testing.T) {
	t.Parallel()
	sc := thresholdScenario(t, `
  oltp.p99: ["< 50ms", "< 10ms", "<= 12300us"]
  oltp.p50: "< 0.002s"
  oltp.max: "< 100ms"
  oltp.tps: [">= 900", "> 1000"]
  oltp.count: ">= 60000"
  oltp.failed: "== 0"
  oltp.error_rate: ["< 0.1%", "< 0.01%"]
  pooled.pool_wait_p99: "< 100ms"
  reports.p99: "< 1s"
  db.deadlocks: "== 0"
  db.temp_files: "<= 6"
  db.rollbacks: "== 8"
  db.slru_hit_rate_min.multixact_member: ">= 90%"
  db.slru_hit_rate_min.Xact: ">= 90%"
  db.slru_hit_rate_min.Subtrans: ">= 90%"
`)
	got := EvaluateThresholds(sc.Thresholds, thresholdRun(), nil, everyRule())
	// Each case: the metric and condition, what was measured (in the
	// threshold's unit), whether it passed, and a part of Why.
	want := []struct {
		metric, cond string
		measured     float64
		unit         string
		measurable   bool
		pass         bool
		why          string
	}{
		{"oltp.p99", "< 50ms", 12.3, "ms", true, true, ""},
		{"oltp.p99", "< 10ms", 12.3, "ms", true, false, ""},
		{"oltp.p99", "<= 12300us", 12300, "us", true, true, ""}, // equality at the edge holds
		{"oltp.p50", "< 0.002s", 0.0015, "s", true, true, ""},
		{"oltp.max", "< 100ms", 95, "ms", true, true, ""},
		{"oltp.tps", ">= 900", 1000, "tx/s", true, true, ""},
		{"oltp.tps", "> 1000", 1000, "tx/s", true, false, ""},
		{"oltp.count", ">= 60000", 60000, "", true, true, ""},
		{"oltp.failed", "== 0", 30, "", true, false, ""},
		{"oltp.error_rate", "< 0.1%", 100 * 30.0 / 60030, "%", true, true, ""},
		{"oltp.error_rate", "< 0.01%", 100 * 30.0 / 60030, "%", true, false, ""},
		{"pooled.pool_wait_p99", "< 100ms", 250.111, "ms", true, false, ""},
		// A workload that never ran cannot pass anything.
		{"reports.p99", "< 1s", 0, "s", false, false, `workload "reports" did not run`},
		{"db.deadlocks", "== 0", 2, "", true, false, ""},
		{"db.temp_files", "<= 6", 6, "", true, true, ""},
		// 2 rollbacks/s over the 4 s between the first and last sample.
		{"db.rollbacks", "== 8", 8, "", true, true, ""},
		{"db.slru_hit_rate_min.MultiXactMember", ">= 90%", 45, "%", true, false, ""},
		// Sampled, never accessed: nothing missed.
		{"db.slru_hit_rate_min.Xact", ">= 90%", 100, "%", true, true, "never read or hit"},
		// Not sampled at all: fails.
		{"db.slru_hit_rate_min.Subtrans", ">= 90%", 0, "%", false, false, "was not sampled"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Metric != w.metric || g.Condition != w.cond {
			t.Errorf("result %d is %s %q, want %s %q", i, g.Metric, g.Condition, w.metric, w.cond)
			continue
		}
		name := w.metric + " " + w.cond
		if g.Measurable != w.measurable || g.Pass != w.pass {
			t.Errorf("%s: measurable %v pass %v, want %v %v (%s)", name, g.Measurable, g.Pass, w.measurable, w.pass, g.Why)
		}
		if math.Abs(g.Measured-w.measured) > 1e-3*math.Max(1, math.Abs(w.measured)) || g.Unit != w.unit {
			t.Errorf("%s: measured %v %q, want %v %q", name, g.Measured, g.Unit, w.measured, w.unit)
		}
		if !strings.Contains(g.Why, w.why) || (w.why == "" && g.Why != "") {
			t.Errorf("%s: why %q, want %q", name, g.Why, w.why)
		}
	}
}

// TestThresholdsUnmeasurableFail checks that missing data fails every kind
// of threshold instead of passing it: a run that never finished and had
// no samplers.
func TestThresholdsUnmeasurableFail(t *testing.T) {
	t.Parallel()
	sc := thresholdScenario(t, `
  oltp.p99: "< 50ms"
  oltp.error_rate: "< 1%"
  pooled.pool_wait_p99: "< 1s"
  db.deadlocks: "== 0"
  db.rollbacks: "== 0"
  db.temp_files: "== 0"
  db.slru_hit_rate_min.Xact: ">= 0%"
  finding.surely-no-such-rule-7c3f: absent
`)
	run := &timeline.Run{Manifest: timeline.Manifest{Status: timeline.StatusFailed, Interval: 1}}
	// oltp ran one interval in which every transaction failed.
	run.Intervals = []timeline.Interval{{Workload: "oltp", Start: 0, End: 1, Failed: 0}}
	for _, r := range EvaluateThresholds(sc.Thresholds, run, nil, everyRule()) {
		if r.Pass || r.Measurable || r.Why == "" {
			t.Errorf("%s: pass %v measurable %v why %q; want a failure with a reason", r, r.Pass, r.Measurable, r.Why)
		}
	}
}

// TestThresholdsFromIntervals checks the totals of a run without a
// summary (killed): added up from its intervals.
func TestThresholdsFromIntervals(t *testing.T) {
	t.Parallel()
	sc := thresholdScenario(t, `
  oltp.count: "== 300"
  oltp.failed: "== 3"
  oltp.tps: "== 100"
  oltp.p99: "<= 8ms"
  oltp.max: [">= 8ms", "< 8.1ms"]
`)
	run := &timeline.Run{Manifest: timeline.Manifest{Status: timeline.StatusInterrupted, Interval: 1}}
	for i := range 3 {
		h := timeline.NewHistogram()
		for j := range 100 {
			h.Record(int64(1000 + j*(i+1)*20)) // up to 6.94 ms in the last interval
		}
		h.Record(8000)
		run.Intervals = append(run.Intervals, timeline.Interval{
			Workload: "oltp", Start: float64(i), End: float64(i + 1), Count: 100, Failed: 1, Latency: h,
		})
	}
	for _, r := range EvaluateThresholds(sc.Thresholds, run, nil, everyRule()) {
		if !r.Pass {
			t.Errorf("%s; want it to pass", r)
		}
	}
}

func TestThresholdsFindings(t *testing.T) {
	t.Parallel()
	rules := everyRule()
	if len(rules) == 0 {
		t.Skip("no diagnosis rule is registered yet: finding.<id> thresholds cannot name one")
	}
	id := rules[0].ID()
	sc := thresholdScenario(t, fmt.Sprintf("  finding.%s: [absent, present]\n", id))
	run := thresholdRun()
	none := EvaluateThresholds(sc.Thresholds, run, nil, everyRule())
	if !none[0].Pass || none[1].Pass || none[0].Measured != 0 {
		t.Errorf("without findings: %v / %v; want absent to pass and present to fail", none[0], none[1])
	}
	fs := []diagnose.Finding{{Rule: id, Severity: diagnose.Warning}, {Rule: id, Severity: diagnose.Critical}, {Rule: "other"}}
	two := EvaluateThresholds(sc.Thresholds, run, fs, everyRule())
	if two[0].Pass || !two[1].Pass || two[1].Measured != 2 {
		t.Errorf("with two findings: %v / %v; want absent to fail and present to pass, measured 2", two[0], two[1])
	}
}

func TestCheckThresholdMetrics(t *testing.T) {
	t.Parallel()
	ok := thresholdScenario(t, "  oltp.p99: \"< 50ms\"\n  db.deadlocks: \"== 0\"\n")
	if err := CheckThresholdMetrics(ok, everyRule()); err != nil {
		t.Errorf("no finding thresholds: %v", err)
	}
	// An id no rule will ever have: the check must not pass it as absent.
	bad := thresholdScenario(t, "  oltp.p99: \"< 50ms\"\n  finding.surely-no-such-rule-7c3f: absent\n")
	err := CheckThresholdMetrics(bad, everyRule())
	var errs scenario.Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("CheckThresholdMetrics = %v; want one scenario.Error", err)
	}
	// The threshold is on the scenario's line 16; the scenario package
	// places a threshold at its condition (column 37).
	want := `thresholds.yaml:16:37: threshold finding.surely-no-such-rule-7c3f: no diagnosis rule "surely-no-such-rule-7c3f"`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q\nwant prefix %q", err, want)
	}
	if rules := everyRule(); len(rules) > 0 {
		known := thresholdScenario(t, "  finding."+rules[0].ID()+": absent\n")
		if err := CheckThresholdMetrics(known, everyRule()); err != nil {
			t.Errorf("finding.%s is a registered rule: %v", rules[0].ID(), err)
		}
	}
}

func TestWriteThresholds(t *testing.T) {
	t.Parallel()
	sc := thresholdScenario(t, "  oltp.p99: [\"< 50ms\", \"< 10ms\"]\n  reports.tps: \">= 1\"\n")
	var buf bytes.Buffer
	if err := WriteThresholds(&buf, EvaluateThresholds(sc.Thresholds, thresholdRun(), nil, everyRule())); err != nil {
		t.Fatal(err)
	}
	want := `thresholds:
  ok   oltp.p99 < 50ms: 12.3 ms
  FAIL oltp.p99 < 10ms: 12.3 ms
  FAIL reports.tps >= 1: not measured (workload "reports" did not run)
2 of 3 thresholds failed
`
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}
