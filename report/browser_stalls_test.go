//go:build unix

package report

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTMLInBrowserStalls: the aof drill's broken run, whose Redis stops
// for hundreds of ms while its p99 stays under a few ms, draws a max
// series on its latency chart, and that series reaches the stall the
// finding names; the aof fix's compare page calls the max "faster".
// With -keep the screenshots stay under testdata/artifacts/, the broken
// report's as testdata/artifacts/aof-broken.png (committed).
func TestHTMLInBrowserStalls(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	broken, fb := openCompareFixture(t, "../diagnose/testdata/aof-broken")
	fixed, ff := openCompareFixture(t, "../diagnose/testdata/aof-fixed")
	dir := artifactDir(t)

	file := writeReport(t, broken, fb, dir)
	st := checkSelftest(t, dumpDOM(t, chromium, file, 2*time.Minute), nil)
	hasMax := false
	for _, c := range st.Charts {
		if c.ID != "latency" {
			continue
		}
		for _, l := range c.Legend {
			hasMax = hasMax || strings.HasPrefix(l.Label, "cache max")
		}
	}
	if !hasMax {
		t.Errorf("the latency chart has no max series: %+v", st.Charts)
	}
	// The series' peak: the intervals' max that the chart draws.
	var peakMS float64
	for _, iv := range broken.Intervals {
		if iv.Count > 0 {
			peakMS = max(peakMS, float64(iv.LatencyPct.Max)/1000)
		}
	}
	stallRE := regexp.MustCompile(`stalled up to ([0-9.]+) ms`)
	found := false
	for _, f := range fb {
		if m := stallRE.FindStringSubmatch(f.Headline); f.Rule == "aof-fsync-stall" && m != nil {
			found = true
			stall, _ := strconv.ParseFloat(m[1], 64)
			if peakMS < stall {
				t.Errorf("the max series peaks at %.1f ms, below the finding's stall of %.1f ms", peakMS, stall)
			}
		}
	}
	if !found {
		t.Errorf("no aof-fsync-stall finding naming its stall in %d findings", len(fb))
	}
	t.Logf("report screenshot %s", keptScreenshot(t, chromium, file, dir, "aof-broken.png", 1400, 1500))

	page, c := writeComparePage(t, broken, fixed, fb, ff, dir)
	dom := dumpDOM(t, chromium, page, 2*time.Minute)
	checkSelftest(t, dom, nil)
	var maxOutcome string
	for _, m := range c.Workloads[0].Metrics {
		if m.Metric == "max" {
			maxOutcome = m.Outcome
		}
	}
	if maxOutcome != OutcomeFaster {
		t.Errorf("compare's max verdict for the aof fix: %q, want %q", maxOutcome, OutcomeFaster)
	}
	if !regexp.MustCompile(`<tr class="better"><td>max</td>`).MatchString(dom) {
		t.Error("the compare page does not show the max row as better")
	}
	t.Logf("compare screenshot %s", screenshot(t, chromium, page, filepath.Join(dir, "aof-compare.png"), 1400, 1800))
}

// TestHTMLInBrowserLockWait: a recorded PostgreSQL run whose 8 clients
// wait 20 s on a row lock an idle transaction holds (no transaction
// finishes, so p50/p99/max have nothing to draw) shows the wait on its
// latency chart as a "running" line that climbs tick by tick to the
// wait's length, with no hole in the chart where the wait was. With
// -keep its screenshot is testdata/artifacts/pg-lockwait.png (committed).
func TestHTMLInBrowserLockWait(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	run, err := openRun(filepath.Join("testdata", "runs", "pg-lockwait"))
	if err != nil {
		t.Fatal(err)
	}
	// The recording's wait: the longest stretch of intervals in which
	// nothing finished, and the oldest transaction's age at its end.
	var blocked, longest int
	var oldestMS float64
	for _, iv := range run.Intervals {
		if iv.Count > 0 {
			blocked = 0
			continue
		}
		blocked++
		longest = max(longest, blocked)
		oldestMS = max(oldestMS, float64(iv.OldestUS)/1000)
	}
	if longest < 15 || oldestMS < 15000 {
		t.Fatalf("the recording has no long wait: %d intervals without a transaction, oldest %.0f ms", longest, oldestMS)
	}
	findings := diagnoseRun(run)
	dir := artifactDir(t)
	file := writeReport(t, run, findings, dir)
	st := checkSelftest(t, dumpDOM(t, chromium, file, 2*time.Minute), nil)
	drawn := false
	for _, c := range st.Charts {
		if c.ID != "latency" {
			continue
		}
		drawn = c.State == "drawn"
		if c.Gaps > 0 {
			t.Errorf("the latency chart has %d ticks without any value", c.Gaps)
		}
		var running bool
		for _, l := range c.Legend {
			if !strings.HasPrefix(l.Label, "bump running") {
				continue
			}
			running = true
			if l.Peak == nil || *l.Peak < 0.95*oldestMS {
				t.Errorf("the running line peaks at %v ms, below the wait's %.0f ms", l.Peak, oldestMS)
			}
			// It climbs through the wait: one point a tick, each higher.
			if l.Rise < longest-1 {
				t.Errorf("the running line climbs %d ticks in a row; the wait lasted %d", l.Rise, longest)
			}
		}
		if !running {
			t.Errorf("the latency chart has no running line: %+v", c.Legend)
		}
	}
	if !drawn {
		t.Errorf("no latency chart drawn: %s", chartStates(st))
	}
	t.Logf("%d intervals blocked, oldest %.0f ms; screenshot %s", longest, oldestMS,
		keptScreenshot(t, chromium, file, dir, "pg-lockwait.png", 1400, 1400))
}

// TestCompareHTMLInBrowserPerWorkload: the openchat drill's compare page
// gives each workload its own charts, scaled to it, and its own verdict:
// the join's throughput (a few hundred tx/s, doubled by the fix) is not
// drawn on the counts' axis (thousands), and its tps row says better.
// With -keep its screenshot is testdata/artifacts/openchat-compare.png
// (committed).
func TestCompareHTMLInBrowserPerWorkload(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	a, fa := openCompareFixture(t, "../diagnose/testdata/openchat-broken")
	b, fb := openCompareFixture(t, "../diagnose/testdata/openchat-fixed")
	dir := artifactDir(t)
	file, c := writeComparePage(t, a, b, fa, fb, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, nil)
	peak := map[string]float64{} // workload: its highest throughput drawn
	axisMax := map[string]float64{}
	for _, ch := range st.Charts {
		name, ok := strings.CutPrefix(ch.Title, "Throughput: ")
		if !ok || ch.State != "drawn" {
			continue
		}
		if len(ch.Legend) != 2 {
			t.Errorf("chart %s: %d series, want one per run", ch.ID, len(ch.Legend))
		}
		for _, l := range ch.Legend {
			if l.Peak != nil {
				peak[name] = max(peak[name], *l.Peak)
			}
		}
		if len(ch.Axes) > 0 && ch.Axes[0].Max != nil {
			axisMax[name] = *ch.Axes[0].Max
		}
	}
	if peak["join"] == 0 || peak["count"] == 0 {
		t.Fatalf("want a throughput chart per workload, join and count: %s", chartStates(st))
	}
	if axisMax["join"] >= peak["count"] || axisMax["join"] > 2*peak["join"] {
		t.Errorf("the join's axis tops at %.0f tx/s: want it scaled to the join's %.0f, not the counts' %.0f",
			axisMax["join"], peak["join"], peak["count"])
	}
	verdicts := map[string]string{}
	for _, wc := range c.Workloads {
		for _, m := range wc.Metrics {
			if m.Metric == "tps" {
				verdicts[wc.Name] = m.Outcome
			}
		}
	}
	if verdicts["join"] != OutcomeFaster {
		t.Errorf("the join's tps verdict %q, want %q (all verdicts %v)", verdicts["join"], OutcomeFaster, verdicts)
	}
	_, joinSection, _ := strings.Cut(dom, "<h3>workload join</h3>")
	joinSection, _, _ = strings.Cut(joinSection, "<h3>")
	if !strings.Contains(joinSection, `<tr class="better"><td>tps</td>`) {
		t.Error("the join's own verdict table does not show its tps as better")
	}
	t.Logf("%s; screenshot %s", chartStates(st), keptScreenshot(t, chromium, file, dir, "openchat-compare.png", 1400, 2400))
}

// keptScreenshot takes a screenshot into dir; with -keep it goes to
// testdata/artifacts/name instead, one of the pictures the repository
// keeps (see .gitignore) to show what the page draws.
func keptScreenshot(t *testing.T, chromium, file, dir, name string, width, height int) string {
	t.Helper()
	png := filepath.Join(dir, name)
	if *keepArtifacts {
		png = filepath.Join("testdata", "artifacts", name)
	}
	return screenshot(t, chromium, file, png, width, height)
}
