//go:build unix

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

var keepArtifacts = flag.Bool("keep", false, "keep the browser tests' report.html, DOM dump and screenshots under testdata/artifacts/")

// The browser tests open the report in headless Chromium, let its script
// draw, and read back what the script wrote into <pre id="selftest">:
// each chart drawn (coloured pixels in its plot) or why not, every
// script error, and whether zooming one chart zoomed them all.
func TestHTMLInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	run, findings := genRunDir(t, smallRun())
	dir := artifactDir(t)
	file := writeReport(t, run, findings, dir)

	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, nil)
	for _, f := range findings {
		if !strings.Contains(dom, html.EscapeString(f.Headline)) {
			t.Errorf("rendered page lacks the finding %q", f.Headline)
		}
	}
	t.Logf("rendered in %d ms: %s", st.MS, chartStates(st))
	// Event details read as words on the rendered page, as in the
	// terminal, not as JSON.
	if !strings.Contains(dom, "pid 4242, xid 771234") || strings.Contains(dom, `"pid": 4242`) {
		t.Errorf("the events table does not say the hold's detail in words")
	}

	first := screenshot(t, chromium, file, filepath.Join(dir, "first-screen.png"), 1400, 1000)
	full := screenshot(t, chromium, file, filepath.Join(dir, "full-page.png"), 1400, 5600)
	t.Logf("screenshots: %s %s", first, full)
}

// TestHTMLInBrowserNoData: charts without data show their reason and the
// script still runs clean.
func TestHTMLInBrowserNoData(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	cfg := quickRun()
	cfg.Samplers = false
	run, findings := genRunDir(t, cfg)
	dir := artifactDir(t)
	file := writeReport(t, run, findings, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	nodata := map[string]bool{"aas": true, "slru": true, "horizon": true, "hostcpu": true, "hostdisk": true, "firedrill": true}
	checkSelftest(t, dom, nodata)
	if !strings.Contains(dom, "no data: no samplers ran in this run") {
		t.Error("the page does not say why the database charts are empty")
	}
}

// TestHTMLInBrowserBigRun: an hour of one-second ticks for a dozen
// workloads, every source sampled, draws within the browser's budget.
func TestHTMLInBrowserBigRun(t *testing.T) {
	if testing.Short() {
		t.Skip("big run: skipped in -short")
	}
	t.Parallel()
	chromium := findChromium(t)
	run, findings := genRunDir(t, bigRun())
	dir := artifactDir(t)
	file := writeReport(t, run, findings, dir)
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, chromium, file, 4*time.Minute)
	st := checkSelftest(t, dom, nil)
	for _, c := range st.Charts {
		if c.ID == "throughput" && c.Series < 12 {
			t.Errorf("throughput draws %d series, want one per workload (12) and their errors", c.Series)
		}
		if c.Points < 3600 {
			t.Errorf("chart %s has %d points, want every one of 3600 ticks", c.ID, c.Points)
		}
	}
	t.Logf("%d intervals × %d workloads: report.html is %.2f MB, rendered in %d ms", 3600, 12, float64(info.Size())/1e6, st.MS)
	t.Logf("screenshot: %s", screenshot(t, chromium, file, filepath.Join(dir, "first-screen.png"), 1400, 1000))
}

// selftest is what report.js writes into <pre id="selftest">.
type selftest struct {
	Charts []struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		State  string `json:"state"` // drawn, nodata, omitted (left off the page), error
		Why    string `json:"why"`
		Series int    `json:"series"`
		Points int    `json:"points"`
		Pixels int    `json:"pixels"`
		// BandPixels are the coloured pixels left in the plot area with
		// every series hidden: a band or tint drawn over the data.
		BandPixels int  `json:"bandPixels"`
		Log        bool `json:"log"` // the left axis is logarithmic
		Axes       []struct {
			Label string   `json:"label"` // as drawn
			Unit  string   `json:"unit"`
			Text  string   `json:"text"` // the unit in words
			Min   *float64 `json:"min"`
			Max   *float64 `json:"max"`
			Log   bool     `json:"log"`
		} `json:"axes"`
		Legend []struct {
			Label string `json:"label"` // as shown
			Unit  string `json:"unit"`  // its axis's unit in words
			// What the series draws: points with a value, the highest,
			// and the longest run of points each above the one before.
			Defined int      `json:"defined"`
			Peak    *float64 `json:"peak"`
			Rise    int      `json:"rise"`
		} `json:"legend"`
		// Gaps are the times between the chart's first and last value
		// where none of its series has one.
		Gaps int `json:"gaps"`
	} `json:"charts"`
	Problems    []string `json:"problems"`
	MS          int      `json:"ms"`
	ZoomSync    string   `json:"zoomSync"`
	CursorSync  string   `json:"cursorSync"`
	StackToggle string   `json:"stackToggle"`
	LogToggle   string   `json:"logToggle"`
}

var selftestPre = regexp.MustCompile(`(?s)<pre id="selftest"[^>]*>(.*?)</pre>`)

// checkSelftest fails on any script problem, on a chart not drawn that
// has data (or drawn that should say "no data"), and on a broken zoom sync.
func checkSelftest(t *testing.T, dom string, wantNoData map[string]bool) selftest {
	t.Helper()
	m := selftestPre.FindStringSubmatch(dom)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		t.Fatalf("the page's script did not finish its self-test (no #selftest content); DOM starts:\n%.2000s", dom)
	}
	var st selftest
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &st); err != nil {
		t.Fatalf("self-test: %v\n%s", err, m[1])
	}
	for _, p := range st.Problems {
		t.Errorf("script problem: %s", p)
	}
	if len(st.Charts) == 0 {
		t.Error("self-test lists no charts")
	}
	for _, c := range st.Charts {
		switch {
		case wantNoData[c.ID] && c.State != "nodata" && c.State != "omitted":
			t.Errorf("chart %s: state %s, want it left out for want of data", c.ID, c.State)
		case wantNoData[c.ID]:
		case c.State == "omitted":
			t.Errorf("chart %s left out (%s), want drawn", c.ID, c.Why)
		case c.State != "drawn":
			t.Errorf("chart %s: state %s (%s), want drawn", c.ID, c.State, c.Why)
		case c.Pixels < 200:
			t.Errorf("chart %s: only %d coloured pixels in its plot: series not drawn", c.ID, c.Pixels)
		}
	}
	if st.ZoomSync != "ok" {
		t.Errorf("zoom sync: %s", st.ZoomSync)
	}
	if st.CursorSync != "ok" {
		t.Errorf("cursor sync: %s", st.CursorSync)
	}
	if st.LogToggle != "ok" {
		t.Errorf("log scale toggle: %s", st.LogToggle)
	}
	if st.StackToggle != "ok" {
		t.Errorf("restacking after hiding a stacked series: %s", st.StackToggle)
	}
	return st
}

func chartStates(st selftest) string {
	var parts []string
	for _, c := range st.Charts {
		parts = append(parts, fmt.Sprintf("%s=%s(%d px)", c.ID, c.State, c.Pixels))
	}
	return strings.Join(parts, " ")
}

func writeReport(t *testing.T, run *timeline.Run, findings []diagnose.Finding, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, findings, testKinds()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, timeline.ReportFile)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// artifactDir is where a test leaves its page and pictures: under
// testdata/artifacts with -keep, else a temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if !*keepArtifacts {
		return t.TempDir()
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "artifacts", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts kept in %s", dir)
	return dir
}

func dumpDOM(t *testing.T, chromium, file string, timeout time.Duration) string {
	t.Helper()
	// Virtual time runs the page's timers (the self-test is one) without
	// waiting for them in real time.
	out := runChromium(t, chromium, timeout, "--virtual-time-budget=15000", "--window-size=1400,1000", "--dump-dom", "file://"+file)
	dom := string(out)
	if *keepArtifacts {
		if err := os.WriteFile(filepath.Join(filepath.Dir(file), "dom.html"), out, 0o644); err != nil {
			t.Error(err)
		}
	}
	return dom
}

func screenshot(t *testing.T, chromium, file, png string, width, height int) string {
	t.Helper()
	runChromium(t, chromium, 2*time.Minute, "--virtual-time-budget=15000", "--hide-scrollbars",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+png, "file://"+file)
	if info, err := os.Stat(png); err != nil || info.Size() == 0 {
		t.Errorf("no screenshot at %s: %v", png, err)
	}
	return png
}

// chromiumSlot lets one Chromium run at a time: several at once on a
// small CI machine starve each other past any timeout.
var chromiumSlot = make(chan struct{}, 1)

// runChromium runs one headless Chromium in its own process group, with
// a throwaway profile and nothing that reaches the network, and kills the
// whole group when it is done or the timeout passes. The timeouts are
// generous: they catch a hung browser, not a slow one.
func runChromium(t *testing.T, chromium string, timeout time.Duration, args ...string) []byte {
	t.Helper()
	chromiumSlot <- struct{}{}
	defer func() { <-chromiumSlot }()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
		"--no-first-run", "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any; ESRCH when none
	}
	if ctx.Err() != nil {
		t.Fatalf("chromium %s: no result within %s\nstderr:\n%s", strings.Join(args, " "), timeout, browserLog(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\nstderr:\n%s", strings.Join(args, " "), err, browserLog(stderr.String()))
	}
	return stdout.Bytes()
}

// browserLog is the end of Chromium's stderr without the D-Bus
// complaints every container run makes.
func browserLog(stderr string) string {
	var keep []string
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "dbus") && !strings.Contains(line, "DBus") {
			keep = append(keep, line)
		}
	}
	return lastBytes(strings.Join(keep, "\n"), 2000)
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var installChromium sync.Once

// findChromium returns a Chromium to drive: $FIREDRILL_CHROMIUM, else one
// on PATH, else (as root on Debian, as CI is) it installs the chromium
// package once. Only when none can be had does the test skip.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FIREDRILL_CHROMIUM"); p != "" {
		return p
	}
	look := func() string {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	if p := look(); p != "" {
		return p
	}
	var why string
	installChromium.Do(func() { why = tryInstallChromium() })
	if p := look(); p != "" {
		return p
	}
	t.Skipf("chromium is not installed and could not be installed (%s); install it with `apt-get install -y chromium` or set FIREDRILL_CHROMIUM", why)
	return ""
}

func tryInstallChromium() string {
	if os.Getenv("FIREDRILL_NO_INSTALL") != "" {
		return "FIREDRILL_NO_INSTALL is set"
	}
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "no apt-get"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastBytes(string(out), 500))
		}
		return nil
	}
	err := apt("install", "-y", "-qq", "chromium")
	if err != nil {
		if uerr := apt("update", "-qq"); uerr != nil {
			return uerr.Error()
		}
		err = apt("install", "-y", "-qq", "chromium")
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestHTMLInBrowserKinds: a run of another kind than PostgreSQL draws
// that kind's database charts, with data, and none of PostgreSQL's (whose
// sources such a run never has). The runs are recorded ones
// (diagnose/testdata), made by firedrill on its throwaway servers.
func TestHTMLInBrowserKinds(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	redis := []string{"redis-ops", "redis-aof", "redis-latency", "redis-clients", "redis-memory"}
	mariadb := []string{"mariadb-states", "mariadb-locks", "mariadb-rowlocks", "mariadb-qcache", "mariadb-connections"}
	tests := []struct {
		run        string
		want       []string // the kind's charts, each drawn with data or left out (omitted)
		noFindings bool     // a run without findings (their list was once null and broke the script)
		omitted    []string // charts of only zeros, left out with one line
	}{
		{"aof-broken", redis, false, nil},
		{"aof-fixed", redis, true, nil},
		{"openchat-broken", mariadb, false, []string{"mariadb-rowlocks"}},    // AUTO-INC and query-cache lock waits; no row-lock waits
		{"openchat-fixed", mariadb, false, []string{"mariadb-qcache"}},       // no findings at all; the query cache off
		{"stock-mariadb-broken", mariadb, false, []string{"mariadb-qcache"}}, // deadlocks, row locks
	}
	postgresOnly := []string{"aas", "connections", "slru", "horizon"}
	for _, test := range tests {
		name := test.run
		if test.noFindings {
			name += "-without-findings"
		}
		t.Run(name, func(t *testing.T) {
			run, err := openRun(filepath.Join("..", "diagnose", "testdata", test.run))
			if err != nil {
				t.Fatal(err)
			}
			findings := diagnoseRun(run)
			if test.noFindings {
				findings = nil
			}
			dir := artifactDir(t)
			file := writeReport(t, run, findings, dir)
			dom := dumpDOM(t, chromium, file, 2*time.Minute)
			st := checkSelftest(t, dom, omittedSet(test.omitted)) // every other chart drawn
			ids := map[string]bool{}
			for _, c := range st.Charts {
				ids[c.ID] = true
			}
			for _, id := range test.want {
				if !ids[id] {
					t.Errorf("no chart %s; charts: %s", id, chartStates(st))
				}
			}
			for _, id := range postgresOnly {
				if ids[id] {
					t.Errorf("PostgreSQL's chart %s on a %s run", id, run.Manifest.Target.Kind)
				}
			}
			t.Logf("rendered in %d ms: %s; screenshot %s", st.MS, chartStates(st),
				screenshot(t, chromium, file, filepath.Join(dir, "full-page.png"), 1400, 3000))
		})
	}
}
