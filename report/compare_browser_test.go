//go:build unix

package report

import (
	"bytes"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// writeComparePage writes the compare page of a and b, named by their
// directories, into dir and returns its path and the comparison.
func writeComparePage(t *testing.T, a, b *timeline.Run, fa, fb []diagnose.Finding, dir string) (string, *Comparison) {
	t.Helper()
	c := compareForTest(a, b, fa, fb)
	var page bytes.Buffer
	if err := WriteCompareHTML(&page, a, b, CompareSide{Label: c.A.Name, Dir: a.Dir}, CompareSide{Label: c.B.Name, Dir: b.Dir}, c); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "compare.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, c
}

// TestCompareHTMLInBrowser: the compare page of two runs draws each
// workload's throughput and latency and the database load with both runs
// overlaid, under the verdict, and its script runs clean.
func TestCompareHTMLInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	a, fa := genRunDir(t, quickRun())
	cfgB := quickRun()
	cfgB.HoldFrom, cfgB.HoldTo = 0, 0 // B: no incident
	b, fb := genRunDir(t, cfgB)
	dir := artifactDir(t)
	file, c := writeComparePage(t, a, b, fa, fb, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, nil)
	ids := map[string]bool{}
	for _, c := range st.Charts {
		ids[c.ID] = true
	}
	for _, id := range []string{"tps-0", "latency-0", "tps-1", "latency-1", "aas"} {
		if !ids[id] {
			t.Errorf("no chart %s; charts: %s", id, chartStates(st))
		}
	}
	for _, m := range c.Workloads[0].Metrics {
		if !strings.Contains(dom, html.EscapeString(ChangeText(m))) {
			t.Errorf("the verdict table lacks %s's change %q", m.Metric, ChangeText(m))
		}
	}
	t.Logf("rendered in %d ms: %s; screenshot %s", st.MS, chartStates(st),
		screenshot(t, chromium, file, filepath.Join(dir, "compare.png"), 1400, 1600))
}

var verdictRowRE = regexp.MustCompile(`<tr class="(better|worse|unsure|same)"><td>(tps|p50|p95|p99|max)</td>`)

// TestCompareHTMLInBrowserRecorded: the stock drill's recorded broken
// (deadlocking) and fixed (sorted keys) runs. The page names the runs by
// their directories in the headings, the table and the charts' legends
// (never "A"/"B" alone), colours each verdict row (throughput better),
// folds each script's diff under its file names, and draws every chart.
// With -keep its screenshot is kept as
// testdata/artifacts/TestCompareHTMLInBrowserRecorded/compare.png.
func TestCompareHTMLInBrowserRecorded(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	a, fa := openCompareFixture(t, "../diagnose/testdata/stock-deadlock")
	b, fb := openCompareFixture(t, "../diagnose/testdata/stock-sorted")
	dir := artifactDir(t)
	file, _ := writeComparePage(t, a, b, fa, fb, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, nil)
	for _, c := range st.Charts {
		if c.State != "drawn" {
			t.Errorf("chart %s: %s %s", c.ID, c.State, c.Why)
		}
	}
	for _, want := range []string{
		`Verdict: <span class="side-b">stock-sorted</span> against <span class="side-a">stock-deadlock</span>`,
		`<th class="side-a">stock-deadlock</th><th class="side-b">stock-sorted</th>`,
		// the legends (uPlot writes the series' labels into the DOM)
		`stock-deadlock p99`, `stock-sorted p50`,
		// the script diff, folded, under both files' names
		`<details class="script"><summary>script cart-random.sql → cart-sorted.sql: 3 command(s) removed, 6 added</summary>`,
		`<span class="diff-added">+ \set sku1 least(:a, :b, :c)</span>`,
		`<td class="better">vanished in stock-sorted</td>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	rows := map[string]string{}
	for _, m := range verdictRowRE.FindAllStringSubmatch(dom, -1) {
		rows[m[2]] = m[1]
	}
	if rows["tps"] != "better" || len(rows) != 4 {
		t.Errorf("verdict rows %v: want tps, p50, p95, p99 with tps better (×21)", rows)
	}
	if strings.Contains(dom, `<pre class="comparison">`) && !strings.Contains(dom, `<details><summary>as text`) {
		t.Error("the terminal's text is shown as the verdict instead of folded under the table")
	}
	t.Logf("rendered in %d ms: %s; screenshot %s", st.MS, chartStates(st),
		screenshot(t, chromium, file, filepath.Join(dir, "compare.png"), 1400, 2000))
}

// TestCompareHTMLInBrowserRedis: the compare page of the aof drill's
// recorded broken and fixed runs overlays Redis's load (commands per
// second), not PostgreSQL's active sessions, and draws every chart.
func TestCompareHTMLInBrowserRedis(t *testing.T) {
	t.Parallel()
	compareKindInBrowser(t, "aof-broken", "aof-fixed", "Redis 7.0.15")
}

// TestCompareHTMLInBrowserMariaDB: the same for the openchat drill's runs,
// whose load is the process list's active sessions.
func TestCompareHTMLInBrowserMariaDB(t *testing.T) {
	t.Parallel()
	compareKindInBrowser(t, "openchat-broken", "openchat-fixed", "MariaDB 10.11")
}

func compareKindInBrowser(t *testing.T, runA, runB, server string) {
	t.Helper()
	chromium := findChromium(t)
	a, fa := openCompareFixture(t, "../diagnose/testdata/"+runA)
	b, fb := openCompareFixture(t, "../diagnose/testdata/"+runB)
	dir := artifactDir(t)
	file, _ := writeComparePage(t, a, b, fa, fb, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, nil)
	ids := map[string]bool{}
	for _, c := range st.Charts {
		ids[c.ID] = true
	}
	if !ids["load"] || ids["aas"] {
		t.Errorf("charts %s: want the kind's load, not PostgreSQL's active sessions", chartStates(st))
	}
	if !strings.Contains(dom, server) {
		t.Errorf("the page does not name the server %s", server)
	}
	if !strings.Contains(dom, runA+" p99") {
		t.Errorf("the legends do not name run %s", runA)
	}
	t.Logf("rendered in %d ms: %s", st.MS, chartStates(st))
}
