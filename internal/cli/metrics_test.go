package cli

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// A busy --metrics-addr is refused before anything runs, naming the
// address; --metrics-linger alone is a usage error.
func TestRunMetricsAddrBusy(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte("name: s\nduration: 2s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: \"SELECT 1;\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-addr", busy}, "--metrics-addr " + busy + ": cannot listen"},
		{[]string{"--metrics-addr", "9464"}, "give host:port"},
		{[]string{"--metrics-linger", "5s"}, "--metrics-linger needs --metrics-addr"},
	} {
		env, _, stderr := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), append([]string{"run", sc, "--out", runs}, c.args...))
		if code != clikit.ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, clikit.ExitUsage, c.want)
		}
	}
	if entries, _ := os.ReadDir(runs); len(entries) > 0 {
		t.Errorf("a run directory was made before the refusal: %v", entries)
	}
	// drill takes the same flags, refused before its first variant runs.
	env, _, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"drill", "stock", "--quick", "--out", filepath.Join(dir, "drills"), "--metrics-addr", busy}); code != clikit.ExitUsage ||
		!strings.Contains(stderr.String(), "--metrics-addr "+busy+": cannot listen") || strings.Contains(stderr.String(), "[1/") {
		t.Errorf("drill --metrics-addr %s: exit %d, stderr %q", busy, code, stderr)
	}
}

// firedrill run --metrics-addr serves /metrics while the run goes on,
// the final values for --metrics-linger after it, and then stops.
func TestRunServesMetricsAndLingers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // free again for the child; a race with another process is unlikely
	tmp := privateTmp(t)
	sc := filepath.Join(tmp, "s.yaml")
	if err := os.WriteFile(sc, []byte(`name: live
duration: 4s
sample_interval: 500ms
workloads:
  - name: w
    clients: 2
    scripts: [{inline: "SELECT pg_sleep(0.001);"}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startCLI(t, tmp, "run", sc, "--out", filepath.Join(tmp, "runs"), "--metrics-addr", addr, "--metrics-linger", "4s", "-q")
	url := "http://" + addr + "/metrics"
	get := func() (string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if !waitUntil(90*time.Second, func() bool {
		body, err := get()
		return err == nil && strings.Contains(body, `firedrill_transactions_total{`) && strings.Contains(body, "firedrill_run_finished{") &&
			strings.Contains(body, `scenario="live"`)
	}) {
		t.Fatalf("no transactions served at %s during the run\n%s", url, out)
	}
	if !waitUntil(60*time.Second, func() bool { return strings.Contains(out.String(), "run directory:") }) {
		t.Fatalf("the run did not end\n%s", out)
	}
	body, err := get()
	if err != nil || !strings.Contains(body, "firedrill_run_finished{") || !strings.Contains(body, "} 1\n") {
		t.Errorf("after the run, during --metrics-linger: %v\n%s", err, body)
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "firedrill_run_finished{") && !strings.HasSuffix(line, " 1") {
			t.Errorf("after the run: %s, want 1", line)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("firedrill run: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("firedrill run still going 30 s after its run ended (linger 4s)\n%s", out)
	}
	if _, err := get(); err == nil {
		t.Errorf("%s still answers after firedrill exited", url)
	}
	if !strings.Contains(out.String(), "serving the final metrics at "+url) {
		t.Errorf("no linger message:\n%s", out)
	}
}
