//go:build unix

package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// sampleReport is a search of a system of capacity 1,000/s on the
// closed model (clients 1…64), as the fake queue of the search's tests
// runs it, with a lock-contention finding from 32 clients on.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	dir := t.TempDir()
	fit := USL{Sigma: 0.03, Kappa: 0.0005, Lambda: 100}
	run := func(_ context.Context, level float64, _ int) (Step, error) {
		x := fit.Throughput(level)
		h := timeline.NewHistogram()
		lat := int64(level / x * 1e6)
		for range 100 {
			h.Record(lat)
		}
		s := Step{Dir: filepath.Join(dir, "step"), Measure: Measure{Seconds: 25, Count: int64(25 * x), Achieved: x, Issued: x, Latency: h,
			P50: lat, P99: lat * 2, P999: lat * 3, HostBusy: 50, ClientCPU: 0.2, ClientCPUCap: 2}}
		if level >= 32 {
			s.Findings = []diagnose.Finding{{Rule: "lock-contention", Severity: diagnose.Critical,
				Headline: "Row lock on stock sku=80 holds 61 % of active time", Remedy: "Spread the hot row. Then retry."}}
			s.Binds = TopBinds(s.Findings, 3)
		}
		return s, nil
	}
	slo, err := ParseSLO("p99<500ms")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Search(context.Background(), Config{Vary: VaryClients, Start: 1, Confirm: 2, SLOs: []SLO{slo}}, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Scenario: "stock", Workload: "order", Result: res, SLOs: []SLO{slo}, Server: "a fresh embedded server per step", Dir: dir}
	r.Fit()
	return r
}

func TestSummaryLines(t *testing.T) {
	t.Parallel()
	r := sampleReport(t)
	var b bytes.Buffer
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^sustainable: \d+ clients, [\d,]+ tx/s at p99 [\d.]+ ms \(SLO p99<500ms\), 2 confirming runs within`),
		regexp.MustCompile(`(?m)^knee: ~[\d,]+ tx/s; USL fit σ=0\.03 κ=0\.0005 \(R² 1\.00\): peak [\d,]+ tx/s at 44 clients$`),
		regexp.MustCompile(`(?m)^binds: lock-contention: Row lock on stock sku=80 holds 61 % of active time — fix: Spread the hot row\. \(at \d+ clients`),
		regexp.MustCompile(`(?m)^server: a fresh embedded server per step$`),
	} {
		if !want.Match(b.Bytes()) {
			t.Errorf("summary lacks %s:\n%s", want, b.String())
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r.Result); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "lock-contention") || !strings.Contains(table.String(), "(confirm 2)") {
		t.Errorf("table lacks the top finding or the confirming runs:\n%s", table.String())
	}
}

// TestHTMLInBrowser opens capacity.html in headless Chromium and reads
// back what its script found drawn: each chart with its points, the SLO
// line on the latency chart, every step's row, no script error.
func TestHTMLInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	r := sampleReport(t)
	file := filepath.Join(t.TempDir(), HTMLFile)
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, chromium, "--virtual-time-budget=5000", "--window-size=1400,1000", "--dump-dom", "file://"+file)
	m := regexp.MustCompile(`(?s)<pre id="selftest">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil || m[1] == "" {
		t.Fatalf("the page's self-test wrote nothing:\n%s", lastChars(dom, 2000))
	}
	var st struct {
		Charts map[string]*struct{ Points, Drawn, Limits, Width int }
		Steps  int
		Errors []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &st); err != nil {
		t.Fatalf("self-test %q: %v", m[1], err)
	}
	if len(st.Errors) > 0 {
		t.Errorf("script errors: %v", st.Errors)
	}
	for _, id := range []string{"chart-throughput", "chart-latency", "chart-usl"} {
		c := st.Charts[id]
		if c == nil || c.Points == 0 || c.Drawn == 0 || c.Width < 300 {
			t.Errorf("%s: %+v, want points drawn at full width", id, c)
		}
	}
	if c := st.Charts["chart-latency"]; c == nil || c.Limits != 1 {
		t.Errorf("latency chart: %+v, want the SLO line", c)
	}
	if st.Steps != len(r.Result.Steps) {
		t.Errorf("%d step rows, want %d", st.Steps, len(r.Result.Steps))
	}
	if !strings.Contains(dom, html.EscapeString("Row lock on stock sku=80")) || !strings.Contains(dom, "Spread the hot row.") {
		t.Errorf("the page does not name the binding finding and its remedy")
	}
}

func lastChars(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// findChromium returns the Chromium to drive: $FIREDRILL_CHROMIUM or one
// on PATH; CI installs it (report's browser tests install it as root).
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FIREDRILL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: install it with `apt-get install -y chromium` or set FIREDRILL_CHROMIUM")
	return ""
}

// runChromium runs one headless Chromium in its own process group with a
// throwaway profile, and kills the group when done or after 2 minutes.
func runChromium(t *testing.T, chromium string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, lastChars(stderr.String(), 2000))
	}
	return stdout.String()
}
