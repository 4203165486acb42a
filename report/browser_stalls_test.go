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
// With -keep the screenshots stay under testdata/artifacts/.
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
	t.Logf("report screenshot %s", screenshot(t, chromium, file, filepath.Join(dir, "aof-broken.png"), 1400, 2200))

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
