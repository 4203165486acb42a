package runner

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// runScenario runs a scenario file on an embedded server into a temp dir
// and reads the run directory back.
func runScenario(t *testing.T, path string) *timeline.Run {
	t.Helper()
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	return runLoaded(t, sc)
}

// runLoaded runs a loaded scenario on an embedded server into a temp dir
// and reads the run directory back.
func runLoaded(t *testing.T, sc *scenario.Scenario) *timeline.Run {
	t.Helper()
	var log strings.Builder
	res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir() + "/run", Log: &log})
	if err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log.String())
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Status != timeline.StatusCompleted || run.Summary == nil {
		t.Fatalf("status %q, summary %v", run.Manifest.Status, run.Summary)
	}
	return run
}

// window describes a series over [from, to).
type window struct {
	min, max, mean float64
	n              int
}

func over(points []timeline.Point, from, to float64) window {
	w := window{min: math.Inf(1), max: math.Inf(-1)}
	sum := 0.0
	for _, p := range points {
		if p.T >= from && p.T < to {
			w.min, w.max = min(w.min, p.V), max(w.max, p.V)
			sum += p.V
			w.n++
		}
	}
	if w.n > 0 {
		w.mean = sum / float64(w.n)
	}
	return w
}

// tps is a workload's throughput over [from, to) from its intervals.
func tps(run *timeline.Run, workload string, from, to float64) float64 {
	var n int64
	span := 0.0
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.Start >= from && iv.End <= to {
			n += iv.Count
			span += iv.End - iv.Start
		}
	}
	if span == 0 {
		return 0
	}
	return float64(n) / span
}

// holdWindow returns the hold_transaction's start and end marks' times and
// the pid it reported.
func holdWindow(t *testing.T, run *timeline.Run) (start, end float64, pid int) {
	t.Helper()
	for _, m := range run.Marks {
		if m.Kind != "hold_transaction" {
			continue
		}
		switch m.Phase {
		case timeline.PhaseStart:
			start = m.T
			if p, ok := m.Detail["pid"].(float64); ok {
				pid = int(p)
			}
		case timeline.PhaseEnd:
			end = m.T
			if m.Error != "" {
				t.Fatalf("hold ended with an error: %s", m.Error)
			}
		}
	}
	if start == 0 || end == 0 || pid == 0 {
		t.Fatalf("no complete hold_transaction marks: %+v", run.Marks)
	}
	return start, end, pid
}

// The multixact shape (INCIDENTS.md §1), shortened: while one idle
// transaction holds the xmin horizon, the savepoint-after-row-lock
// workload's MultiXact member cache hit rate collapses, the horizon's age
// grows with the holder named, and throughput drops; the control script
// shows none of the collapse.
func TestMultixactShapeOnTheTimeline(t *testing.T) {
	// Parallel: in make test, the package's other tests run beside its two
	// 70 s runs; make test-drills selects it alone, on a quiet machine,
	// where its throughput is asserted.
	t.Parallel()
	if testing.Short() {
		t.Skip("two 70 s runs")
	}
	broken := runScenario(t, "testdata/multixact-short.yaml")
	hs, he, pid := holdWindow(t, broken)
	hit := broken.Series("pg_stat_slru", "MultiXactMember.hit_rate")
	before, during := over(hit, 2, hs), over(hit, he-15, he)
	t.Logf("broken: MultiXactMember hit rate before %.3f (min %.3f), end of hold min %.3f", before.mean, before.min, during.min)
	if before.n == 0 || before.mean < 0.95 {
		t.Errorf("hit rate before the hold %.3f over %d samples, want ≥ 0.95", before.mean, before.n)
	}
	// How far the hit rate falls depends on how many multixacts the hold
	// lets pile up, so on how fast this machine ran: below 50 % once the
	// hold saw 150k transactions (about 3k TPS here; a quiet 2-core machine
	// does 5–7k), at least clearly falling otherwise.
	holdTx := tps(broken, "oltp", hs, he) * (he - hs)
	limit := 0.5
	if holdTx < 150_000 {
		limit = 0.85
		t.Logf("only %.0f transactions during the hold (a loaded machine): asserting a hit rate below %.2f, not 0.5", holdTx, limit)
	}
	if during.n == 0 || during.min >= limit {
		t.Errorf("hit rate at the end of the hold %.3f (min over %d samples), want < %.2f", during.min, during.n, limit)
	}

	age := broken.Series("xmin_horizon", "age")
	// The end mark follows the rollback by a moment: stop a second early.
	early, late := over(age, hs+1, hs+5), over(age, he-6, he-1)
	t.Logf("broken: xmin horizon age %.0f early in the hold, %.0f at its end", early.mean, late.mean)
	if late.min <= early.max || late.min < 10_000 {
		t.Errorf("xmin horizon age %.0f..%.0f early in the hold, %.0f..%.0f at its end: want it growing", early.min, early.max, late.min, late.max)
	}
	holderNamed := false
	for _, s := range broken.SourceSamples("xmin_horizon") {
		if s.T > he-6 && s.T < he-1 {
			var holder struct{ PID int }
			if json.Unmarshal(s.Detail, &holder) == nil && holder.PID == pid {
				holderNamed = true
			}
		}
	}
	if !holderNamed {
		t.Errorf("the xmin horizon's holder is never the hold's pid %d", pid)
	}
	brokenRatio := tps(broken, "oltp", he-15, he) / tps(broken, "oltp", 3, hs)
	t.Logf("broken: throughput at the end of the hold / before = %.2f", brokenRatio)
	// Throughput is the incident's consequence, but on a shared machine,
	// with other packages' tests beside this one, the window before the
	// hold can be the slow one (1.23 once in make test). It is asserted
	// only where make test-drills runs: on a quiet machine.
	if brokenRatio > 0.9 && os.Getenv("FIREDRILL_DRILL_TESTS") == "1" {
		t.Errorf("throughput ratio %.2f, want a drop (≤ 0.9)", brokenRatio)
	}

	brokenReads := over(broken.Series("pg_stat_slru", "MultiXactMember.blks_read_per_s"), he-15, he)
	if brokenReads.n == 0 || brokenReads.mean < 100 {
		t.Errorf("broken: MultiXactMember reads %.0f/s over %d samples at the end of the hold, want a cache missing (≥ 100/s)", brokenReads.mean, brokenReads.n)
	}
	// The control run asserts nothing about throughput, so it is make
	// test's alone: make test-drills, which runs this test a second time,
	// alone, for the throughput ratio above, leaves its 70 s out (CI runs
	// both; the control is checked once, beside other packages, as it was
	// designed to be).
	if os.Getenv("FIREDRILL_DRILL_TESTS") == "1" {
		t.Log("control run left to make test: it asserts no throughput")
		return
	}

	control := runScenario(t, "testdata/control-short.yaml")
	hs, he, _ = holdWindow(t, control)
	chit := over(control.Series("pg_stat_slru", "MultiXactMember.hit_rate"), hs, he)
	controlReads := over(control.Series("pg_stat_slru", "MultiXactMember.blks_read_per_s"), he-15, he)
	controlRatio := tps(control, "oltp", he-15, he) / tps(control, "oltp", 3, hs)
	t.Logf("control: MultiXactMember hit rate min %.3f over %d samples; member reads %.0f/s vs broken's %.0f/s; throughput ratio %.2f",
		chit.min, chit.n, controlReads.mean, brokenReads.mean, controlRatio)
	if chit.n > 0 && chit.min < 0.9 {
		t.Errorf("control's MultiXactMember hit rate fell to %.3f, want no collapse", chit.min)
	}
	// The control differs from the broken script in the mechanism, not
	// necessarily in throughput: its dead rows pile up behind the same
	// horizon, and on a shared CI machine the two throughput ratios overlap
	// (0.64 vs 0.78 once). What must differ is the member cache missing.
	if controlReads.mean > brokenReads.mean/20 {
		t.Errorf("control: MultiXactMember reads %.0f/s, want under 5%% of broken's %.0f/s", controlReads.mean, brokenReads.mean)
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
