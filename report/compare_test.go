package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

var updateCompare = flag.Bool("update-compare", false, "rewrite the compare golden files under testdata/compare/")

// The recorded fixtures (see testdata/compare/README.md): two runs of the
// same scenario, and one whose script has an added pg_sleep that makes
// it about 20 % slower.
const (
	compareFixtureBase  = "testdata/compare/base-1"
	compareFixtureBase2 = "testdata/compare/base-2"
	compareFixtureSlow  = "testdata/compare/slow"
)

func openCompareFixture(t *testing.T, dir string) (*timeline.Run, []diagnose.Finding) {
	t.Helper()
	run, err := openRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs, ok, err := diagnose.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		fs = diagnoseRun(run)
	}
	return run, fs
}

// TestCompareRecordedSame compares two recorded runs of the same scenario:
// every metric must be judged no different.
func TestCompareRecordedSame(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, compareFixtureBase)
	b, fb := openCompareFixture(t, compareFixtureBase2)
	c := compareForTest(a, b, fa, fb)
	if len(c.Workloads) != 1 || len(c.Workloads[0].Metrics) != len(compareMetrics) {
		t.Fatalf("comparison: %+v", c)
	}
	wc := c.Workloads[0]
	if len(wc.Changes) != 0 {
		t.Errorf("the same scenario shows changes: %q", wc.Changes)
	}
	for _, m := range wc.Metrics {
		if m.Significant || !strings.HasPrefix(m.Verdict, "no significant difference, p = ") {
			t.Errorf("%s: %q (A %v, B %v); want no significant difference", m.Metric, m.Verdict, m.A, m.B)
		}
	}
	if len(c.Settings) != 0 {
		t.Errorf("settings differ between two embedded runs of one scenario: %+v", c.Settings)
	}
}

// TestCompareRecordedSlower compares the baseline with the run whose
// script has an added pg_sleep (about 20 % slower): the verdict must say B
// is slower, by about that much, for throughput and median latency.
func TestCompareRecordedSlower(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, compareFixtureBase)
	b, fb := openCompareFixture(t, compareFixtureSlow)
	c := compareForTest(a, b, fa, fb)
	if len(c.Workloads) != 1 {
		t.Fatalf("comparison: %+v", c)
	}
	wc := c.Workloads[0]
	if len(wc.Changes) != 0 || len(wc.Scripts) != 1 || len(wc.Scripts[0].Removed) != 0 ||
		strings.Join(wc.Scripts[0].Added, "|") != "SELECT pg_sleep(0.002);" {
		t.Errorf("changes %q, scripts %+v; want one script with SELECT pg_sleep(0.002); added", wc.Changes, wc.Scripts)
	}
	for _, m := range wc.Metrics {
		switch m.Metric {
		case "tps":
			// Fewer transactions per second: a negative change.
			if !m.Significant || m.Change > -0.10 || m.Change < -0.30 || !strings.Contains(m.Verdict, "slower") {
				t.Errorf("tps: %q (change %+.3f); want B slower by 10–30 %%", m.Verdict, m.Change)
			}
		case "p50":
			// Longer latency: a positive change, and still "slower".
			if !m.Significant || m.Change < 0.10 || m.Change > 0.30 || !strings.Contains(m.Verdict, "slower") {
				t.Errorf("p50: %q (change %+.3f); want B slower by 10–30 %%", m.Verdict, m.Change)
			}
		}
		if strings.Contains(m.Verdict, "faster") {
			t.Errorf("%s: %q; B cannot be faster", m.Metric, m.Verdict)
		}
	}
}

// TestCompareGolden keeps WriteCompare's output on the recorded runs; run
// with -update-compare after an intended change.
func TestCompareGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b, golden string }{
		{compareFixtureBase, compareFixtureBase2, "testdata/compare/same.golden"},
		{compareFixtureBase, compareFixtureSlow, "testdata/compare/slower.golden"},
	} {
		a, fa := openCompareFixture(t, c.a)
		b, fb := openCompareFixture(t, c.b)
		var buf bytes.Buffer
		if err := WriteCompare(&buf, compareForTest(a, b, fa, fb)); err != nil {
			t.Fatal(err)
		}
		if *updateCompare {
			if err := os.WriteFile(c.golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(c.golden)
		if err != nil {
			t.Fatalf("%v (run with -update-compare to create it)", err)
		}
		if buf.String() != string(want) {
			t.Errorf("%s: output differs (run with -update-compare if intended):\n%s", c.golden, buf.String())
		}
	}
}

// syntheticRun builds a run of one workload "oltp" of n one-second
// intervals; each interval's throughput and latency scale come from
// level(i) (1 = 1000 tx/s at 2 ms median).
func syntheticRun(name string, n int, level func(i int) float64) *timeline.Run {
	return buildSyntheticRun(name, n, level, true)
}

// syntheticTPSRun is syntheticRun without latency histograms (an HDR
// histogram is ~180 KB: thousands of them make a slow test under -race).
func syntheticTPSRun(name string, n int, level func(i int) float64) *timeline.Run {
	return buildSyntheticRun(name, n, level, false)
}

func buildSyntheticRun(name string, n int, level func(i int) float64, latency bool) *timeline.Run {
	run := &timeline.Run{
		Dir: name,
		Manifest: timeline.Manifest{
			Format: timeline.Format, Name: name, Status: timeline.StatusCompleted, Interval: 1,
			Target:    timeline.Target{Kind: "postgres", Embedded: true, ServerVersion: "15.18"},
			Workloads: []timeline.WorkloadInfo{{Name: "oltp", Clients: 4, Mode: "simple", Scripts: []timeline.ScriptInfo{{Name: "tx", Weight: 1, Commands: []string{"SELECT 1;"}}}}},
			Settings:  map[string]string{"shared_buffers": "128MB", "port": "5432"},
		},
	}
	for i := range n {
		l := level(i)
		var h *timeline.Histogram
		if latency {
			h = timeline.NewHistogram()
			for j := range 200 {
				// a spread of latencies around 2 ms / l
				h.Record(int64(float64(1000+10*j) / l))
			}
		}
		run.Intervals = append(run.Intervals, timeline.Interval{
			Workload: "oltp", Start: float64(i), End: float64(i + 1), Clients: 4,
			Count: int64(1000 * l), Latency: h,
		})
	}
	return run
}

// noise returns levels 1 + sd·e with e an AR(1) series of lag-1
// autocorrelation rho and unit variance, from seed.
func noise(seed uint64, n int, sd, rho float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]float64, n)
	e := rng.NormFloat64()
	for i := range out {
		out[i] = 1 + sd*e
		e = rho*e + math.Sqrt(1-rho*rho)*rng.NormFloat64()
	}
	return out
}

// TestCompareBlocksKeepSameHonest is why Compare tests blocks, not
// intervals: over 40 pairs of runs of one autocorrelated process (ρ = 0.7,
// as throughput on a busy host), the U test on one-second values calls
// about half of the pairs different; on blocks chosen from the
// autocorrelation far fewer, and the verdicts (with the drift and interval
// guards) almost none.
func TestCompareBlocksKeepSameHonest(t *testing.T) {
	t.Parallel()
	const pairs, n = 40, 60
	count := func(opts CompareOptions) (lowP, verdicts int) {
		for p := range pairs {
			la, lb := noise(uint64(2*p), n, 0.08, 0.7), noise(uint64(2*p+1), n, 0.08, 0.7)
			a := syntheticTPSRun("a", n, func(i int) float64 { return la[i] })
			b := syntheticTPSRun("b", n, func(i int) float64 { return lb[i] })
			m := CompareWith(a, b, nil, nil, opts).Workloads[0].Metrics[0]
			if m.P < opts.Alpha {
				lowP++
			}
			if m.Significant {
				verdicts++
			}
		}
		return lowP, verdicts
	}
	perInterval := DefaultCompareOptions
	perInterval.Block, perInterval.MinBlock = 1, 1
	rawP, rawVerdicts := count(perInterval)
	blockP, blockVerdicts := count(DefaultCompareOptions)
	t.Logf("one process, %d pairs: p < 0.05 for %d with one-second values (%d verdicts of a difference), %d with blocks (%d verdicts)",
		pairs, rawP, rawVerdicts, blockP, blockVerdicts)
	if blockP > 6 || blockVerdicts > 2 { // 5 % of 40 is 2
		t.Errorf("blocks: p < 0.05 for %d and a difference claimed for %d of %d pairs of the same process", blockP, blockVerdicts, pairs)
	}
	if rawP < 2*blockP {
		t.Errorf("one-second values: p < 0.05 for %d pairs, blocks %d; the test no longer shows why blocks", rawP, blockP)
	}
}

// TestCompareVerdicts checks sign and size of verdicts on synthetic runs.
func TestCompareVerdicts(t *testing.T) {
	t.Parallel()
	base := noise(1, 60, 0.03, 0)
	other := noise(2, 60, 0.03, 0)
	cases := []struct {
		name   string
		factor float64 // B's level relative to A's: >1 is faster
		tps    string  // prefix of the tps verdict
		p50    string
	}{
		// B does 25 % fewer transactions: tps −25 %, latency +33 %.
		{"slower", 0.75, "B is 25 % ± ", "B is 33 % ± "},
		{"faster", 1.25, "B is 25 % ± ", "B is 20 % ± "},
		{"same", 1, "no significant difference, p = ", "no significant difference, p = "},
	}
	for _, c := range cases {
		a := syntheticRun("a", 60, func(i int) float64 { return base[i] })
		b := syntheticRun("b", 60, func(i int) float64 { return other[i] * c.factor })
		cmp := compareForTest(a, b, nil, nil)
		tps, p50 := cmp.Workloads[0].Metrics[0], cmp.Workloads[0].Metrics[1]
		word := "slower"
		if c.factor > 1 {
			word = "faster"
		}
		for _, m := range []struct {
			got    MetricComparison
			prefix string
		}{{tps, c.tps}, {p50, c.p50}} {
			if !strings.HasPrefix(m.got.Verdict, m.prefix) {
				t.Errorf("%s %s: %q, want prefix %q", c.name, m.got.Metric, m.got.Verdict, m.prefix)
			}
			if c.factor != 1 && !strings.Contains(m.got.Verdict, word) {
				t.Errorf("%s %s: %q, want %q", c.name, m.got.Metric, m.got.Verdict, word)
			}
		}
	}
}

// TestCompareMinChange: a real but small change is within noise below
// the floor the user set.
func TestCompareMinChange(t *testing.T) {
	t.Parallel()
	a := syntheticTPSRun("a", 60, func(i int) float64 { return 1 + 0.002*float64(i%5) })
	b := syntheticTPSRun("b", 60, func(i int) float64 { return 0.94 + 0.002*float64(i%5) })
	opts := DefaultCompareOptions
	if m := CompareWith(a, b, nil, nil, opts).Workloads[0].Metrics[0]; !m.Significant {
		t.Fatalf("a steady 6 %% drop: %q; want it found", m.Verdict)
	}
	opts.MinChange = 0.10
	m := CompareWith(a, b, nil, nil, opts).Workloads[0].Metrics[0]
	if want := "within noise: B is 6.0 % slower (p < 0.001), but that is below the 10 % taken as noise"; m.Verdict != want || m.Significant || !m.WithinNoise {
		t.Errorf("with MinChange 10 %%: %q, want %q", m.Verdict, want)
	}
}

// TestCompareWithinNoise: a run that drifts as much within itself as it
// differs from the other is not credited with a difference.
func TestCompareWithinNoise(t *testing.T) {
	t.Parallel()
	// A is steady; B runs at 0.75 for 36 s, then at A's level: B's median
	// is 25 % below A's, but B differs from itself by 33 %.
	a := syntheticTPSRun("a", 60, func(i int) float64 { return 1 + 0.01*float64(i%3) })
	b := syntheticTPSRun("b", 60, func(i int) float64 {
		if i < 36 {
			return 0.75 + 0.01*float64(i%3)
		}
		return 1 + 0.01*float64(i%3)
	})
	m := compareForTest(a, b, nil, nil).Workloads[0].Metrics[0]
	if m.Significant || !m.WithinNoise || !strings.HasPrefix(m.Verdict, "within noise: B is ") || !strings.Contains(m.Verdict, "between their own halves") {
		t.Errorf("verdict %q (p %.3g, change %+.2f, drift %.2f); want within noise", m.Verdict, m.P, m.Change, m.Drift)
	}
}

func TestCompareTooShort(t *testing.T) {
	t.Parallel()
	// 4 s: three one-second blocks after the first interval, and the U
	// test cannot reach p < 0.05 with three values a side.
	a := syntheticTPSRun("a", 4, func(int) float64 { return 1 })
	b := syntheticTPSRun("b", 4, func(int) float64 { return 0.5 })
	wc := compareForTest(a, b, nil, nil).Workloads[0]
	if m := wc.Metrics[0]; m.Significant || !strings.HasPrefix(m.Verdict, "too few blocks to tell (3 in A, 3 in B; need 4)") {
		t.Errorf("4 s runs: %q (%d + %d blocks); want too few blocks", m.Verdict, wc.BlocksA, wc.BlocksB)
	}
	// 6 s: five blocks, enough for the test, too few to bound a median.
	a = syntheticTPSRun("a", 6, func(int) float64 { return 1 })
	b = syntheticTPSRun("b", 6, func(int) float64 { return 0.5 })
	if m := compareForTest(a, b, nil, nil).Workloads[0].Metrics[0]; !m.Significant || !strings.HasPrefix(m.Verdict, "B is 50 % ± ? slower, p = ") {
		t.Errorf("6 s runs: %q; want B 50 %% ± ? slower", m.Verdict)
	}
	empty := syntheticTPSRun("b", 1, func(int) float64 { return 1 })
	if wc := compareForTest(a, empty, nil, nil).Workloads[0]; len(wc.Metrics) != 0 || len(wc.Notes) != 1 {
		t.Errorf("against a run with one interval: %+v; want a note and no metrics", wc)
	}
}

func TestCompareWarmup(t *testing.T) {
	t.Parallel()
	a := syntheticTPSRun("a", 50, func(int) float64 { return 1 })
	for _, c := range []struct {
		opts CompareOptions
		want float64
	}{
		{DefaultCompareOptions, 5},                           // 10 % of 50 s
		{CompareOptions{Warmup: 12}, 12},                     // a duration
		{CompareOptions{}, 1},                                // none asked: the first interval still goes
		{CompareOptions{WarmupFraction: 0.2, Warmup: 3}, 10}, // the larger
	} {
		wc := CompareWith(a, a, nil, nil, c.opts).Workloads[0]
		if wc.WarmupA != c.want || wc.WarmupB != c.want {
			t.Errorf("%+v: warm-up %g / %g s, want %g", c.opts, wc.WarmupA, wc.WarmupB, c.want)
		}
	}
}

// TestCompareFindingsSettingsChanges checks the parts besides the
// statistics: findings by rule, settings, workload definitions.
func TestCompareFindingsSettingsChanges(t *testing.T) {
	t.Parallel()
	a := syntheticTPSRun("a", 30, func(int) float64 { return 1 })
	b := syntheticTPSRun("b", 30, func(int) float64 { return 1 })
	b.Manifest.Settings = map[string]string{"shared_buffers": "1GB", "port": "6543", "jit": "off"}
	b.Manifest.Workloads[0].Clients = 8
	b.Manifest.Workloads[0].Scripts[0].Commands = []string{"SELECT 1;", "SELECT   pg_sleep(0.01);"}
	b.Manifest.Workloads[0].Settings = map[string]string{"statement_timeout": "5s"}
	b.Manifest.Workloads = append(b.Manifest.Workloads, timeline.WorkloadInfo{Name: "extra"})
	fa := []diagnose.Finding{
		{Rule: "deadlock", Severity: diagnose.Critical, Headline: "deadlocks in A"},
		{Rule: "slow-commit", Severity: diagnose.Warning, Headline: "commits wait for WAL"},
	}
	fb := []diagnose.Finding{
		{Rule: "slow-commit", Severity: diagnose.Info, Headline: "commits wait a little"},
		{Rule: "slow-commit", Severity: diagnose.Critical, Headline: "commits wait for WAL a lot"},
		{Rule: "xmin-horizon", Severity: diagnose.Warning, Headline: "an old snapshot holds vacuum back"},
	}
	c := compareForTest(a, b, fa, fb)
	want := []FindingChange{
		{Rule: "xmin-horizon", Change: FindingAppeared, SeverityB: diagnose.Warning, CountB: 1, Headline: "an old snapshot holds vacuum back"},
		{Rule: "deadlock", Change: FindingVanished, SeverityA: diagnose.Critical, CountA: 1, Headline: "deadlocks in A"},
		{Rule: "slow-commit", Change: FindingPersists, SeverityA: diagnose.Warning, SeverityB: diagnose.Critical, CountA: 1, CountB: 2, Headline: "commits wait for WAL a lot"},
	}
	if len(c.Findings) != len(want) {
		t.Fatalf("findings %+v, want %+v", c.Findings, want)
	}
	for i := range want {
		if c.Findings[i] != want[i] {
			t.Errorf("finding %d: %+v, want %+v", i, c.Findings[i], want[i])
		}
	}
	// port is where an embedded server listens, not how it behaves.
	wantSettings := []SettingChange{{Name: "jit", B: "off"}, {Name: "shared_buffers", A: "128MB", B: "1GB"}}
	if len(c.Settings) != 2 || c.Settings[0] != wantSettings[0] || c.Settings[1] != wantSettings[1] {
		t.Errorf("settings %+v, want %+v", c.Settings, wantSettings)
	}
	wantChanges := []string{"clients 4 → 8", "session setting statement_timeout: (not set) → 5s"}
	if got := c.Workloads[0].Changes; strings.Join(got, "|") != strings.Join(wantChanges, "|") {
		t.Errorf("changes %q, want %q", got, wantChanges)
	}
	if len(c.OnlyInB) != 1 || c.OnlyInB[0] != "extra" || len(c.OnlyInA) != 0 {
		t.Errorf("only in A %q, only in B %q", c.OnlyInA, c.OnlyInB)
	}
	var buf bytes.Buffer
	if err := WriteCompare(&buf, c); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"  appeared in B: [WARNING] xmin-horizon ×1 — an old snapshot holds vacuum back\n",
		"  vanished in B: [CRITICAL] deadlock ×1 — deadlocks in A\n",
		"  in both:       slow-commit [WARNING] ×1 → [CRITICAL] ×2 — commits wait for WAL a lot\n",
		"  script tx: 0 command(s) removed, 1 added\n    + SELECT pg_sleep(0.01);\n",
		"workload extra ran only in B\n",
		"  shared_buffers  128MB      → 1GB\n",
	} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, buf.String())
		}
	}
}

// TestCompareJSON checks the comparison encodes (infinite confidence
// bounds as null) and round-trips its verdicts.
func TestCompareJSON(t *testing.T) {
	t.Parallel()
	a := syntheticTPSRun("a", 6, func(int) float64 { return 1 })
	a.Manifest.Started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := compareForTest(a, a, nil, nil)
	var buf bytes.Buffer
	if err := WriteCompareJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format    string `json:"format"`
		A         RunRef `json:"a"`
		Workloads []struct {
			Metrics []struct {
				Verdict  string   `json:"verdict"`
				ChangePM *float64 `json:"change_pm"`
				A        struct {
					Median float64  `json:"median"`
					Lo     *float64 `json:"lo"`
				} `json:"a"`
			} `json:"metrics"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, buf.String())
	}
	if doc.Format != CompareFormat || doc.A.Started != "2026-01-02T03:04:05Z" || len(doc.Workloads) != 1 {
		t.Fatalf("document:\n%s", buf.String())
	}
	m := doc.Workloads[0].Metrics[0]
	if m.Verdict != c.Workloads[0].Metrics[0].Verdict || m.A.Lo != nil || m.ChangePM != nil || m.A.Median != 1000 {
		t.Errorf("metric %+v; want the verdict, median 1000 and null bounds (too few blocks)", m)
	}
}

func TestCompareFormatting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got, want string
	}{
		{formatP(0.41), "p = 0.41"},
		{formatP(0.0042), "p = 0.004"},
		{formatP(0.00002), "p < 0.001"},
		{formatPercent(0.31), "31"},
		{formatPercent(0.042), "4.2"},
		{formatPercent(0.0042), "0.42"},
		{formatEstimate(Estimate{400, 390, 420}, "tx/s"), "400.0 tx/s ± 5%"},
		{formatEstimate(Estimate{2.5, math.Inf(-1), math.Inf(1)}, "ms"), "2.500 ms ± ∞"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// The bounds of a ratio: relative half-widths in quadrature, each
	// side from the sides of A and B that push the ratio that way.
	change, lo, hi := relativeChange(Estimate{100, 97, 110}, Estimate{80, 76, 84})
	wantLo, wantHi := 0.8*(1-math.Hypot(0.05, 0.10))-1, 0.8*(1+math.Hypot(0.05, 0.03))-1
	if math.Abs(change+0.2) > 1e-9 || math.Abs(lo-wantLo) > 1e-9 || math.Abs(hi-wantHi) > 1e-9 {
		t.Errorf("relativeChange = %v [%v, %v], want -0.2 [%v, %v]", change, lo, hi, wantLo, wantHi)
	}
}

// TestCompareFixturesSmall keeps the recorded runs small: no report.html,
// and the listed files only.
func TestCompareFixturesSmall(t *testing.T) {
	t.Parallel()
	var total int64
	err := filepath.Walk("testdata/compare", func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Name() == timeline.ReportFile {
			t.Errorf("%s: recorded runs keep no report", path)
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 1<<20 {
		t.Errorf("testdata/compare holds %d bytes; keep the recordings under 1 MiB", total)
	}
}

// TestCompareNotes checks what Compare says about the runs' surroundings.
func TestCompareNotes(t *testing.T) {
	t.Parallel()
	a := syntheticTPSRun("a", 30, func(int) float64 { return 1 })
	b := syntheticTPSRun("b", 30, func(int) float64 { return 1 })
	a.Manifest.Host, b.Manifest.Host = timeline.Host{Hostname: "h", CPUs: 2}, timeline.Host{Hostname: "h", CPUs: 2}
	b.Manifest.Target.ServerVersion = "16.4"
	b.Manifest.Status = timeline.StatusInterrupted
	for i := range 30 {
		a.Samples = append(a.Samples, timeline.Sample{Source: "host", T: float64(i), Values: map[string]float64{"cpu.idle": 40, "procs_running": 3}})
		b.Samples = append(b.Samples, timeline.Sample{Source: "host", T: float64(i), Values: map[string]float64{"cpu.idle": 0, "procs_running": 12}})
	}
	want := []string{
		"server version differs: 15.18 → 16.4",
		"run B did not complete (interrupted)",
		"the host's CPUs were idle 40 % of the time in A and 0 % in B: a difference may be the machine's, not the code's",
		"the host's run queue differed: a median of 3 runnable threads in A and 12 in B, on 2 CPUs: a difference may be the machine's, not the code's",
	}
	if got := compareForTest(a, b, nil, nil).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := compareForTest(a, a, nil, nil).Notes; len(got) != 0 {
		t.Errorf("a run against itself: notes %q", got)
	}
}

// TestCompareRedisRuns compares the aof drill's recorded broken and fixed
// runs: Redis's comparison weighs the slowest transactions (the fsync
// stalls p99 hides) and the server's counters, beside the percentiles.
func TestCompareRedisRuns(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, "../diagnose/testdata/aof-broken")
	b, fb := openCompareFixture(t, "../diagnose/testdata/aof-fixed")
	c := compareForTest(a, b, fa, fb)
	if len(c.Workloads) != 1 {
		t.Fatalf("workloads: %+v", c.Workloads)
	}
	wc := c.Workloads[0]
	var maxRow *MetricComparison
	for i := range wc.Metrics {
		if wc.Metrics[i].Metric == "max" {
			maxRow = &wc.Metrics[i]
		}
	}
	if maxRow == nil || len(wc.Metrics) != len(compareMetrics)+2 || wc.Metrics[len(wc.Metrics)-1].Metric != "stalls" {
		t.Fatalf("metrics %+v: want the percentiles, max and stalls", wc.Metrics)
	}
	if maxRow.A.Center < 100 || maxRow.B.Center >= maxRow.A.Center {
		t.Errorf("max: A %v ms, B %v ms: the broken run's blocks must stall past 100 ms and more than the fixed run's", maxRow.A.Center, maxRow.B.Center)
	}
	st := wc.Stalls
	if st == nil || st.MaxA < 300 || st.IntervalsA == 0 || st.ThresholdMS != 100 {
		t.Errorf("stalls: %+v: want the broken run's 400 ms stalls counted over 100 ms", st)
	}
	counters := map[string]CounterChange{}
	for _, cc := range c.Counters {
		counters[cc.Name] = cc
	}
	delayed := counters["redis_info:aof_delayed_fsync"]
	if delayed.A == nil || *delayed.A != 5 || delayed.B == nil || *delayed.B != 0 {
		t.Errorf("aof_delayed_fsync: %+v, want 5 in A and 0 in B", delayed)
	}
	pending := counters["redis_latency:aof-write-pending-fsync.max_ms"]
	if pending.A == nil || *pending.A < 300 || pending.B == nil || *pending.B != 0 {
		t.Errorf("aof-write-pending-fsync: %+v, want ~393 ms in A and 0 (never happened) in B", pending)
	}
	var text bytes.Buffer
	if err := WriteCompare(&text, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  max ", "slowest transaction: 430.3 ms in A", "AOF writes past a late fsync (aof_delayed_fsync)   5", "server counters"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("compare text lacks %q:\n%s", want, text.String())
		}
	}
	for _, never := range []string{"longest fork"} { // 0 in both: not printed
		if strings.Contains(text.String(), never) {
			t.Errorf("compare text prints %q, a counter that never moved:\n%s", never, text.String())
		}
	}
}

// TestComparePostgresUnchanged: a PostgreSQL comparison has no max row,
// stalls or counters (its output is as before kinds had their own).
func TestComparePostgresUnchanged(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, compareFixtureBase)
	b, fb := openCompareFixture(t, compareFixtureSlow)
	c := compareForTest(a, b, fa, fb)
	if c.Counters != nil {
		t.Errorf("counters on a PostgreSQL comparison: %+v", c.Counters)
	}
	for _, wc := range c.Workloads {
		if wc.Stalls != nil || len(wc.Metrics) != len(compareMetrics) {
			t.Errorf("workload %s: stalls %+v, %d metrics", wc.Name, wc.Stalls, len(wc.Metrics))
		}
	}
}

// TestCompareMariaDBRuns compares the openchat drill's recorded broken and
// fixed runs: the counters that tell AUTO-INC and query-cache contention
// apart (waiters at once, invalidations) are set side by side, with the
// workloads' slowest transactions.
func TestCompareMariaDBRuns(t *testing.T) {
	t.Parallel()
	a, fa := openCompareFixture(t, "../diagnose/testdata/openchat-broken")
	b, fb := openCompareFixture(t, "../diagnose/testdata/openchat-fixed")
	c := compareForTest(a, b, fa, fb)
	counters := map[string]CounterChange{}
	for _, cc := range c.Counters {
		counters[cc.Name] = cc
	}
	for _, name := range []string{"mariadb_innodb_locks:lock_waits.auto_inc", "mariadb_processlist:state.Waiting for query cache lock"} {
		cc, ok := counters[name]
		if !ok || cc.A == nil || *cc.A < 5 || cc.B == nil || *cc.B != 0 {
			t.Errorf("%s: %+v: want many waiters at once in the broken run and none in the fixed one", name, cc)
		}
	}
	if len(c.Workloads) == 0 {
		t.Fatal("no workloads compared")
	}
	for _, wc := range c.Workloads {
		if wc.Stalls == nil || wc.Stalls.ThresholdMS != 1000 || len(wc.Metrics) != len(compareMetrics)+2 || wc.Metrics[len(wc.Metrics)-1].Metric != "stalls" {
			t.Errorf("workload %s: stalls %+v, %d metrics: want MariaDB's max and stalls rows, stalls over 1 s", wc.Name, wc.Stalls, len(wc.Metrics))
		}
	}
}
