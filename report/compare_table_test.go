package report

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// hugeInterval is a ± or a change of a thousand percent or more: what an
// unstable metric printed before it was called unstable.
var hugeInterval = regexp.MustCompile(`(±|[+−]) ?[0-9]{4,} ?%`)

// TestCompareTableUnstableRecorded: the multixact drill's recorded broken
// run against its control (diagnose/testdata) has metrics whose blocks
// swing (the broken run's throughput falls during the hold): they are
// said as "unstable (CV …)" in the change column and the verdict, with no
// interval of thousands of percent anywhere, and the runs are named by
// their directories in the table's header.
func TestCompareTableUnstableRecorded(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, "../diagnose/testdata/multixact-broken")
	b, fb := openCompareFixture(t, "../diagnose/testdata/multixact-control")
	c := compareForTest(a, b, fa, fb)
	var buf bytes.Buffer
	if err := WriteCompare(&buf, c); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	unstable := 0
	for _, m := range c.Workloads[0].Metrics {
		if !m.Unstable {
			continue
		}
		unstable++
		if max(m.CVA, m.CVB) <= UnstableCV {
			t.Errorf("%s: unstable with CVs %.2f and %.2f", m.Metric, m.CVA, m.CVB)
		}
		if !strings.HasPrefix(ChangeText(m), "unstable (CV ") || !strings.Contains(m.Verdict, "unstable (CV ") {
			t.Errorf("%s: change %q, verdict %q; want both to say unstable (CV …)", m.Metric, ChangeText(m), m.Verdict)
		}
		if m.Outcome != OutcomeUnstable && m.Outcome != OutcomeFaster && m.Outcome != OutcomeSlower {
			t.Errorf("%s: outcome %q", m.Metric, m.Outcome)
		}
	}
	if unstable == 0 {
		t.Errorf("no metric called unstable:\n%s", out)
	}
	if hugeInterval.MatchString(out) {
		t.Errorf("an interval of thousands of percent is printed: %q\n%s", hugeInterval.FindString(out), out)
	}
	if !strings.Contains(out, "  metric  multixact-broken ") || !strings.Contains(out, "verdict (multixact-control vs multixact-broken)") {
		t.Errorf("the table does not name the runs:\n%s", out)
	}
	if !strings.Contains(out, "  script multixact.sql → no-multixact.sql: 2 command(s) removed, 1 added\n    − SAVEPOINT nested;\n") {
		t.Errorf("the script diff does not name its files:\n%s", out)
	}
}

// TestCompareTableRecordedStock: the stock drill's deadlocking run
// against its fixed one: throughput ×21 is written as a ratio with its
// interval (not "1960 % ± 1003 %"), every row has the change column, and
// the diff is one script's, under both its names.
func TestCompareTableRecordedStock(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, "../diagnose/testdata/stock-deadlock")
	b, fb := openCompareFixture(t, "../diagnose/testdata/stock-sorted")
	c := compareForTest(a, b, fa, fb)
	if c.A.Name != "stock-deadlock" || c.B.Name != "stock-sorted" {
		t.Errorf("names %q and %q, want the directories'", c.A.Name, c.B.Name)
	}
	var buf bytes.Buffer
	if err := WriteCompare(&buf, c); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	tps := c.Workloads[0].Metrics[0]
	if tps.Metric != "tps" || tps.Outcome != OutcomeFaster || !regexp.MustCompile(`^×[0-9]+ \(×[0-9.]+ to ×[0-9.]+\)$`).MatchString(ChangeText(tps)) {
		t.Errorf("tps: outcome %q, change %q; want faster, as a ratio with its interval", tps.Outcome, ChangeText(tps))
	}
	if hugeInterval.MatchString(out) {
		t.Errorf("an interval of thousands of percent is printed: %q\n%s", hugeInterval.FindString(out), out)
	}
	if sd := c.Workloads[0].Scripts; len(sd) != 1 || sd[0].Title() != "cart-random.sql → cart-sorted.sql" || sd[0].FileA == "" || sd[0].FileB == "" {
		t.Errorf("script diffs %+v", sd)
	}
	if len(c.Workloads[0].Changes) != 0 {
		t.Errorf("script lines among the workload's changes: %q", c.Workloads[0].Changes)
	}
}

// TestCompareColor: colour only when asked, and only on the verdicts and
// the diff's lines, so the table's columns stay aligned.
func TestCompareColor(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, compareFixtureBase)
	b, fb := openCompareFixture(t, compareFixtureSlow)
	c := compareForTest(a, b, fa, fb)
	var plain, colored bytes.Buffer
	if err := WriteCompareColor(&plain, c, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompareColor(&colored, c, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("escape codes without colour")
	}
	if !strings.Contains(colored.String(), "\x1b[31mslower, p < 0.001\x1b[0m") {
		t.Errorf("the slower verdict is not red:\n%q", colored.String())
	}
	stripped := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored.String(), "")
	if stripped != plain.String() {
		t.Errorf("colour changed the text:\n%s\nvs\n%s", stripped, plain.String())
	}
}

// TestChangeText covers the change column's forms.
func TestChangeText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		mc   MetricComparison
		want string
	}{
		{"a drop with its interval", MetricComparison{Change: -0.12, ChangeLo: -0.2, ChangeHi: -0.04, ChangePM: 0.08}, "−12 % (−20 % to −4.0 %)"},
		{"twice as much up is a ratio", MetricComparison{Change: 3.93, ChangeLo: 1.28, ChangeHi: 6.58, ChangePM: 2.65}, "×4.9 (×2.3 to ×7.6)"},
		{"unbounded above", MetricComparison{Change: 2, ChangeLo: 0.5, ChangeHi: math.Inf(1), ChangePM: math.Inf(1)}, "×3.0 (×1.5 to ?)"},
		{"no interval", MetricComparison{Change: 0.1, ChangeLo: math.Inf(-1), ChangeHi: math.Inf(1), ChangePM: math.Inf(1)}, "+10 % (± ?)"},
		{"unstable", MetricComparison{Unstable: true, CVA: 1.2, CVB: 0.1, Change: 120}, "unstable (CV 120 % in A)"},
		{"unstable in both", MetricComparison{Unstable: true, CVA: 0.6, CVB: 0.9}, "unstable (CV 60 % in A, 90 % in B)"},
		{"not measured", MetricComparison{Change: math.NaN()}, "-"},
		{"half or less is a divisor", MetricComparison{Change: -0.9999, ChangeLo: -0.99995, ChangeHi: -0.999, ChangePM: 0.001}, "÷10000 (÷20000 to ÷1000)"},
		{"down to nothing", MetricComparison{Change: -0.6, ChangeLo: -1, ChangeHi: -0.5, ChangePM: 0.4}, "÷2.5 (? to ÷2.0)"},
		{"no change at all", MetricComparison{}, "0 %"},
	} {
		if got := ChangeText(c.mc); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDiffScripts pairs scripts by name, then in order, and leaves the
// unchanged out.
func TestDiffScripts(t *testing.T) {
	t.Parallel()
	a := []timeline.ScriptInfo{
		{Name: "same.sql", Commands: []string{"SELECT 1;"}},
		{Name: "old.sql", File: "w-2-old.sql", Commands: []string{"BEGIN;", "SAVEPOINT s;", "COMMIT;"}},
		{Name: "gone.sql", Commands: []string{"SELECT 2;"}},
	}
	b := []timeline.ScriptInfo{
		{Name: "new.sql", File: "w-1-new.sql", Commands: []string{"BEGIN;", "SELECT  1;", "COMMIT;"}},
		{Name: "same.sql", Commands: []string{"SELECT   1;"}},
	}
	got := diffScripts(a, b)
	if len(got) != 2 {
		t.Fatalf("diffs %+v, want old→new and gone", got)
	}
	if got[0].Title() != "old.sql → new.sql" || strings.Join(got[0].Removed, "|") != "SAVEPOINT s;" || strings.Join(got[0].Added, "|") != "SELECT 1;" {
		t.Errorf("first diff %+v", got[0])
	}
	if got[1].Title() != "gone.sql (only in A)" || len(got[1].Removed) != 1 {
		t.Errorf("second diff %+v", got[1])
	}
}

// TestEstimateText: a median's interval, or its CV when the interval
// reaches further from it than the median itself.
func TestEstimateText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    Estimate
		cv   float64
		want string
	}{
		{Estimate{Center: 100, Lo: 90, Hi: 110}, 0.6, "100.0 ms ± 10%"},
		{Estimate{Center: 113.9, Lo: 20, Hi: 937}, 1.12, "113.9 ms, CV 112 %"},
		{Estimate{Lo: math.Inf(-1), Hi: math.Inf(1)}, 0, "-"},
	} {
		if got := EstimateText(c.e, "ms", c.cv); got != c.want {
			t.Errorf("EstimateText(%+v, %g) = %q, want %q", c.e, c.cv, got, c.want)
		}
	}
	if got := driftText(131.89); got != "×133" {
		t.Errorf("driftText(131.89) = %q", got)
	}
	if got := driftText(0.16); got != "16 %" {
		t.Errorf("driftText(0.16) = %q", got)
	}
}

// TestRatioSize: rises and falls of the same ratio weigh the same, so a
// fall to a ten-thousandth is far beyond a drift of ×2.5.
func TestRatioSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ change, want float64 }{
		{0.25, 0.25}, {-0.2, 0.25}, {-0.9999, 9999}, {0, 0}, {1, 1}, {-0.5, 1},
	} {
		if got := ratioSize(c.change); math.Abs(got-c.want) > 1e-6*max(1, c.want) {
			t.Errorf("ratioSize(%g) = %g, want %g", c.change, got, c.want)
		}
	}
	if !math.IsInf(ratioSize(-1), 1) {
		t.Error("a fall to nothing is infinitely far")
	}
	if got := selfDrift([]float64{10, 10, 5, 5}); got != 1 {
		t.Errorf("a run halving drifts %g, want 1", got)
	}
}
