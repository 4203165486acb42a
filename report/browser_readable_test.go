//go:build unix

package report

import (
	"fmt"
	"html"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// TestHTMLInBrowserReadable opens the report of recorded runs of each kind
// in headless Chromium and checks what an on-call engineer needs to read
// it in ten seconds (issue 12): the findings' one-line headlines with
// their fix at the top; no finding window or event drawn as a band inside
// a plot; every axis and legend entry with its unit; hit rates on 0–100 %;
// latency on a log axis exactly when its p99 reaches past 20× its p50;
// charts without data left out with a line saying why; under an arrival
// rate the offered rate beside the served one; deadlocks and refused
// connections plotted where the run had them. With -keep, each page and
// its screenshots stay under testdata/artifacts/TestHTMLInBrowserReadable/.
func TestHTMLInBrowserReadable(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	recorded := filepath.Join("..", "diagnose", "testdata")
	tests := []struct {
		dir string
		// legend entries that must be drawn, by chart: "chart: part of a label"
		want []string
		// charts that must be left out (with their reason)
		omitted []string
		full    bool // keep a screenshot of the whole page too
	}{
		// The journal incident: 200/s offered to a pool of 3, ~130/s
		// served, latency climbing to 18 s.
		{dir: filepath.Join(recorded, "poolsmall"), want: []string{"throughput: api offered (tx/s)", "throughput: api (tx/s)", "connections: pool wait p99 (ms)"},
			omitted: []string{"horizon", "slru"}, full: true}, // nothing held the horizon; one SLRU read in 47 ticks
		{dir: filepath.Join(recorded, "journal-drill"), want: []string{"throughput: offered (tx/s)"}, omitted: []string{"horizon", "slru"}},
		// 40P01 deadlocks: the server's count beside the failures.
		{dir: filepath.Join(recorded, "stock-deadlock"), want: []string{"throughput: deadlocks/s (server)", "throughput: failed/s"}, full: true},
		// The MultiXact SLRU falling from 100 %.
		{dir: filepath.Join(recorded, "multixact-broken"), want: []string{"slru: MultiXactOffset (%)", "horizon: xmin horizon age (xids)"}, full: true},
		{dir: filepath.Join(recorded, "healthy")},
		// 16 clients against max_connections 12: refusals and clients
		// left without a connection.
		{dir: filepath.Join("testdata", "runs", "pg-refused"), want: []string{"throughput: rw connections refused/s", "connections: rw clients without a connection (connections)"}},
		{dir: filepath.Join("testdata", "compare", "base-1")},
		{dir: filepath.Join(recorded, "stock-mariadb-broken"), want: []string{"mariadb-rowlocks: deadlocks (per tick)"}, omitted: []string{"mariadb-qcache"}, full: true},
		// At max_connections, but nothing refused: no lock chart either.
		{dir: filepath.Join(recorded, "mariadb-connections"), want: []string{"mariadb-connections: max_connections"},
			omitted: []string{"mariadb-locks", "mariadb-rowlocks", "mariadb-qcache"}},
		{dir: filepath.Join(recorded, "openchat-fixed"), omitted: []string{"mariadb-qcache"}},                                                                // the query cache is off
		{dir: filepath.Join(recorded, "redis-maxclients"), want: []string{"redis-clients: refused (maxclients) (per tick)"}, omitted: []string{"redis-aof"}}, // AOF off
		{dir: filepath.Join(recorded, "aof-broken"), want: []string{"redis-aof: delayed fsyncs (aof_delayed_fsync) (per tick)"}, full: true},
	}
	for _, test := range tests {
		name := filepath.Base(test.dir)
		t.Run(name, func(t *testing.T) {
			run, err := openRun(test.dir)
			if err != nil {
				t.Fatal(err)
			}
			findings := diagnoseRun(run)
			dir := artifactDir(t)
			file := writeReport(t, run, findings, dir)
			dom := dumpDOM(t, chromium, file, 2*time.Minute)
			st := checkSelftest(t, dom, omittedSet(test.omitted))
			checkReadable(t, st, dom)
			checkHeadlines(t, dom, findings)

			byID := map[string]int{}
			for i, c := range st.Charts {
				byID[c.ID] = i
			}
			for _, want := range test.want {
				id, part, _ := strings.Cut(want, ": ")
				i, ok := byID[id]
				if !ok || st.Charts[i].State != "drawn" {
					t.Errorf("chart %s not drawn; charts: %s", id, chartStates(st))
					continue
				}
				var labels []string
				for _, l := range st.Charts[i].Legend {
					labels = append(labels, l.Label)
				}
				if !slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, part) }) {
					t.Errorf("chart %s: no legend entry %q in %q", id, part, labels)
				}
			}
			for _, id := range test.omitted {
				if i, ok := byID[id]; !ok || st.Charts[i].State != "omitted" || st.Charts[i].Why == "" {
					t.Errorf("chart %s: want it left out with a reason; charts: %s", id, chartStates(st))
				}
			}

			// Log axis exactly when the tail reaches past 20× the median.
			ratio := tailOverMedian(run)
			if i, ok := byID["latency"]; ok && st.Charts[i].State == "drawn" {
				if got, want := st.Charts[i].Log, ratio > 20; got != want {
					t.Errorf("latency on a log axis = %v with highest p99 / median p50 = %.1f; want %v", got, ratio, want)
				}
			}
			t.Logf("p99/p50 %.1f; %s", ratio, chartStates(st))
			screenshot(t, chromium, file, filepath.Join(dir, "first-screen.png"), 1400, 1000)
			if test.full {
				screenshot(t, chromium, file, filepath.Join(dir, "full-page.png"), 1400, 3600)
			}
		})
	}
}

func omittedSet(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// checkReadable checks every drawn chart: nothing coloured inside its plot
// but the series (finding windows and events live in the lanes above);
// every axis and legend entry says its unit; shares stay within 100 %.
// Every chart left out says why, on the page, and has no plot.
func checkReadable(t *testing.T, st selftest, dom string) {
	t.Helper()
	for _, c := range st.Charts {
		if c.State == "omitted" {
			if c.Why == "" {
				t.Errorf("chart %s left out without a reason", c.ID)
			}
			if strings.Contains(dom, fmt.Sprintf(`data-chart="%s"`, c.ID)) {
				t.Errorf("chart %s is left out but still has a plot on the page", c.ID)
			}
			if !strings.Contains(dom, fmt.Sprintf(`data-omitted="%s"`, c.ID)) || !strings.Contains(dom, html.EscapeString(c.Why)) {
				t.Errorf("chart %s is left out, but the page does not say so (%q)", c.ID, c.Why)
			}
			continue
		}
		if c.State != "drawn" {
			continue
		}
		if c.BandPixels != 0 {
			t.Errorf("chart %s: %d coloured pixels inside the plot with every series hidden: a band over the data", c.ID, c.BandPixels)
		}
		if len(c.Axes) == 0 {
			t.Errorf("chart %s: no y axis reported", c.ID)
		}
		for _, a := range c.Axes {
			if a.Text == "" || !saysUnit(a.Label, a.Text) {
				t.Errorf("chart %s: axis %q (unit %s) does not say its unit %q", c.ID, a.Label, a.Unit, a.Text)
			}
			if a.Max == nil || a.Min == nil {
				t.Errorf("chart %s: axis %q has no range", c.ID, a.Label)
				continue
			}
			switch a.Unit {
			case "pct":
				if *a.Max > 1+1e-9 || *a.Min < 0 {
					t.Errorf("chart %s: axis %q runs %g–%g %%, want within 0–100 %%", c.ID, a.Label, *a.Min*100, *a.Max*100)
				}
			case "pct100":
				if *a.Max > 100+1e-9 || *a.Min < 0 {
					t.Errorf("chart %s: axis %q runs %g–%g %%, want within 0–100 %%", c.ID, a.Label, *a.Min, *a.Max)
				}
			}
		}
		if len(c.Legend) != c.Series {
			t.Errorf("chart %s: %d legend entries for %d series", c.ID, len(c.Legend), c.Series)
		}
		for _, l := range c.Legend {
			if !saysUnit(l.Label, l.Unit) {
				t.Errorf("chart %s: legend entry %q does not say its unit %q", c.ID, l.Label, l.Unit)
			}
		}
	}
}

// saysUnit: the label names the unit as a word, as the page writes it
// ("api (tx/s)"), or is itself a rate when the unit is one ("failed/s").
func saysUnit(label, unit string) bool {
	if unit == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(label[i:], unit)
		if j < 0 {
			break
		}
		at := i + j
		before, after := byte(' '), byte(' ')
		if at > 0 {
			before = label[at-1]
		}
		if end := at + len(unit); end < len(label) {
			after = label[end]
		}
		if strings.IndexByte(" (", before) >= 0 && strings.IndexByte(" ),", after) >= 0 {
			return true
		}
		i = at + 1
	}
	return strings.HasSuffix(unit, "/s") && strings.Contains(label, "/s")
}

// checkHeadlines: the strip at the top has one line per finding with its
// severity, number, window and fix.
func checkHeadlines(t *testing.T, dom string, findings []diagnose.Finding) {
	t.Helper()
	start := strings.Index(dom, `id="findings-strip"`)
	end := strings.Index(dom, `id="charts"`)
	if start < 0 || end < start {
		t.Fatal("no findings strip before the charts")
	}
	strip := dom[start:end]
	if len(findings) == 0 {
		if !strings.Contains(strip, "No findings.") {
			t.Error("a run without findings does not say so at the top")
		}
		return
	}
	if got := strings.Count(strip, `class="chip `); got != len(findings) {
		t.Errorf("%d lines at the top for %d findings", got, len(findings))
	}
	for i := range findings {
		if !strings.Contains(strip, fmt.Sprintf(`<span class="fno">F%d</span>`, i+1)) {
			t.Errorf("finding F%d has no line at the top", i+1)
		}
	}
	withRemedy := 0
	for _, f := range findings {
		if f.Remedy != "" {
			withRemedy++
		}
	}
	if got := strings.Count(strip, `<b>fix:</b>`); got != withRemedy {
		t.Errorf("%d fixes at the top for %d findings with a remedy", got, withRemedy)
	}
}

// tailOverMedian is, over the workloads, the highest p99 of any interval
// over the median p50 of the intervals: the spread the latency chart
// decides its scale by.
func tailOverMedian(run *timeline.Run) float64 {
	p50s, p99max := map[string][]float64{}, map[string]float64{}
	for _, iv := range run.Intervals {
		if iv.Count == 0 {
			continue
		}
		if iv.LatencyPct.P50 > 0 {
			p50s[iv.Workload] = append(p50s[iv.Workload], float64(iv.LatencyPct.P50))
		}
		p99max[iv.Workload] = math.Max(p99max[iv.Workload], float64(iv.LatencyPct.P99))
	}
	worst := 0.0
	for w, ps := range p50s {
		slices.Sort(ps)
		worst = math.Max(worst, p99max[w]/ps[len(ps)/2])
	}
	return worst
}

func TestSaysUnit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		label, unit string
		want        bool
	}{
		{"api (tx/s)", "tx/s", true},
		{"api failed/s", "errors/s", true}, // a rate says it
		{"longest wait", "s", false},       // the letter is no unit
		{"longest wait (s)", "s", true},
		{"max_connections", "connections", false},
		{"backends (connections)", "connections", true},
		{"anything", "", false},
	} {
		if got := saysUnit(tt.label, tt.unit); got != tt.want {
			t.Errorf("saysUnit(%q, %q) = %v, want %v", tt.label, tt.unit, got, tt.want)
		}
	}
}
