package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// Three times more clients than the embedded server's max_connections
// (issue 11): the refused clients retry with backoff instead of ending
// the run, which completes with exit 0; the refusals are counted on the
// timeline, and the top finding is connection-saturation naming the
// limit and how many clients got no connection.
func TestRunWithMoreClientsThanMaxConnections(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "saturate.yaml")
	if err := os.WriteFile(sc, []byte(`name: saturate
duration: 8s
sample_interval: 1s
target:
  settings: {max_connections: 8}
workloads:
  - name: app
    clients: 24
    scripts:
      - inline: |
          SELECT pg_sleep(0.005);
`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	env, stdout, stderr := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), []string{"run", sc, "--out", runs, "--progress", "30s"})
	if code != clikit.ExitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, tail(stderr.String(), 30))
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "*-saturate"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	run, err := timeline.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Status != timeline.StatusCompleted {
		t.Errorf("status %s (%s), want completed", run.Manifest.Status, run.Manifest.Error)
	}
	// The refusals are data: counted by code in the intervals, from the
	// start to the end, and the clients that could not get in are waiting.
	var refused, waitingAtEnd int64
	var ok int64
	for _, iv := range run.WorkloadIntervals("app") {
		refused += iv.Refused["53300"]
		ok += iv.Count
		if iv.Refused["53300"] > iv.Errors["53300"] {
			t.Errorf("interval %.0f s: %d refused of %d errors", iv.End, iv.Refused["53300"], iv.Errors["53300"])
		}
		waitingAtEnd = int64(iv.Unconnected)
	}
	ws := run.Summary.Workloads[0]
	t.Logf("%d transactions, %d refused attempts, %d clients refused, %d waiting at the end, %.1f s waited before retrying",
		ok, refused, ws.RefusedClients, waitingAtEnd, ws.ReconnectWait)
	if ok == 0 || refused == 0 {
		t.Errorf("%d transactions, %d refusals: want both", ok, refused)
	}
	// 24 clients, 8 slots (the samplers take some): at least 16 refused.
	if ws.RefusedClients < 16 || waitingAtEnd < 16 {
		t.Errorf("%d clients refused, %d waiting at the end; want at least 16", ws.RefusedClients, waitingAtEnd)
	}
	// Backoff: each refused client retries at most every second once
	// the delay has grown, not in a tight loop (10 ms → 1 s: about 10
	// tries in the first 2 s, then one a second).
	if perClient := float64(refused) / float64(ws.RefusedClients); perClient > 20 || perClient < 3 {
		t.Errorf("%.1f refused attempts per refused client in 8 s; want the backoff's 3–20", perClient)
	}
	fs, _, err := diagnose.Read(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) == 0 {
		t.Fatal("no findings")
	}
	top := fs[0]
	t.Logf("top finding: %s %s: %s", top.Severity, top.Rule, top.Headline)
	if top.Rule != "connection-saturation" || top.Severity != diagnose.Critical {
		t.Fatalf("top finding %s %s, want CRITICAL connection-saturation", top.Severity, top.Rule)
	}
	for _, want := range []string{"max_connections 8", "53300", "clients of app got no connection"} {
		if !strings.Contains(top.Headline, want) {
			t.Errorf("headline lacks %q: %s", want, top.Headline)
		}
	}
}
