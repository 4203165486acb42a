package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// readStatus reads a run directory's manifest from disk, as written.
func readStatus(t *testing.T, dir string) timeline.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, timeline.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m timeline.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A firedrill killed with SIGKILL leaves its run directory "running"; the
// next run under the same --out marks it killed, and report reads it so.
func TestKilledRunIsMarkedKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and a child process")
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte(`name: killed
duration: 60s
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT pg_sleep(0.01);"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	// killRun starts a run, SIGKILLs it once the load is on, and returns its
	// run directory, checked to say "running" with the child's pid.
	killRun := func() string {
		before, _ := filepath.Glob(filepath.Join(runs, "*"))
		cmd, out := startCLI(t, privateTmp(t), "run", sc, "--out", runs, "--progress", "1s")
		if !waitUntil(60*time.Second, func() bool { return strings.Contains(out.String(), " tps ") }) {
			t.Fatalf("no progress line; output:\n%s", out)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		after, _ := filepath.Glob(filepath.Join(runs, "*"))
		if len(after) != len(before)+1 {
			t.Fatalf("run directories %v, then %v", before, after)
		}
		var runDir string
		for _, d := range after {
			if !slices.Contains(before, d) {
				runDir = d
			}
		}
		m := readStatus(t, runDir)
		if m.Status != timeline.StatusRunning || m.Process == nil || m.Process.PID != cmd.Process.Pid {
			t.Fatalf("after SIGKILL: status %q, process %+v, want running by pid %d", m.Status, m.Process, cmd.Process.Pid)
		}
		return runDir
	}
	wantKilled := func(dir, by string) {
		t.Helper()
		m := readStatus(t, dir)
		if m.Status != timeline.StatusKilled || !strings.Contains(m.Error, fmt.Sprintf("pid %d", m.Process.PID)) || !m.Ended.IsZero() {
			t.Errorf("after %s: status %q, error %q, ended %v", by, m.Status, m.Error, m.Ended)
		}
	}

	// report marks the run it opens.
	first := killRun()
	env, stdout, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"report", first}); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "run killed: killed (") {
		t.Errorf("report does not say killed:\n%s", stdout)
	}
	wantKilled(first, "report")

	second := killRun()
	// The next run under the same --out, even one that fails at once
	// (nothing listens on port 1), marks it.
	env, _, stderr = clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"run", sc, "--out", runs, "--dsn", "postgres://nobody@127.0.0.1:1/db"}); code == 0 {
		t.Fatalf("a run against port 1 exited 0: %s", stderr)
	}
	if !strings.Contains(stderr.String(), second+": its firedrill process is gone (killed?); marked killed") {
		t.Errorf("the next run did not say it marked the killed run: %s", stderr)
	}
	wantKilled(second, "the next run")
}
