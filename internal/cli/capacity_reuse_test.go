package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// interruptAt is a standard error that cancels the command's context a
// moment after the line that starts step n is written: Ctrl-C in the
// middle of that step's run.
type interruptAt struct {
	mu     sync.Mutex
	b      strings.Builder
	step   string
	after  time.Duration
	cancel context.CancelFunc
	armed  bool
}

func (w *interruptAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.armed && strings.Contains(w.b.String(), w.step) {
		w.armed = true
		time.AfterFunc(w.after, w.cancel)
	}
	return len(p), nil
}

func (w *interruptAt) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestCapacityReuseServer: with --reuse-server the steps share one
// embedded Redis (the same server directory in every step's run.json,
// setup run once), the output says so, and Ctrl-C in the
// middle of a later step stops that server: nothing is left of it.
func TestCapacityReuseServer(t *testing.T) {
	t.Parallel()
	tmp := privateTmp(t)
	path := writeScenario(t, tmp, `name: reuse
target: {kind: redis}
setup: {keys: {count: 100, size: 16}}
workloads:
  - name: get
    rate: 100
    scripts:
      - inline: |
          \set id random(1, 100)
          GET firedrill:key::id
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, out, _ := clikit.MemoryEnv("")
	errw := &interruptAt{step: "step 3: ", after: 1500 * time.Millisecond, cancel: cancel}
	env.Stderr = errw
	env.Context = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	args := []string{"capacity", path, "--reuse-server", "--step", "3s", "--warmup", "1s", "--confirm", "0", "--max-steps", "4", "-v",
		"--out", filepath.Join(tmp, "runs"), "--json", "-"}
	if code := Main(env, kinds.Registry(), args); code != clikit.ExitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted)\n%s\n%s", code, clikit.ExitInterrupted, out, errw)
	}
	var res capacityJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--json -: %v\n%s", err, out)
	}
	if !strings.Contains(res.Server, "one embedded server for all steps") {
		t.Errorf("server %q does not say the steps shared one server", res.Server)
	}
	if !strings.Contains(errw.String(), "on one embedded server for all steps (--reuse-server)") {
		t.Errorf("the opening line does not say the steps share a server:\n%s", errw)
	}
	if log := errw.String(); !strings.Contains(log, "reusing the Redis the run before kept") || !strings.Contains(log, "setup: skipped") {
		t.Errorf("no later step says it reused the server and skipped the setup done:\n%s", log)
	}
	var dataDirs []string
	for _, s := range res.Steps {
		if s.RunDir == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.RunDir, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m timeline.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if !m.Target.Embedded || m.Target.DataDir == "" {
			t.Fatalf("step at %v: target %+v, want the embedded server with its data directory", s.Level, m.Target)
		}
		dataDirs = append(dataDirs, m.Target.DataDir)
	}
	if len(dataDirs) < 2 {
		t.Fatalf("%d steps with a run directory, want at least 2 before the interruption\n%s", len(dataDirs), errw)
	}
	for _, d := range dataDirs[1:] {
		if d != dataDirs[0] {
			t.Errorf("the steps ran on different servers: %v", dataDirs)
		}
	}
	if _, err := os.Stat(dataDirs[0]); !os.IsNotExist(err) {
		t.Errorf("the kept server's data directory %s is still there after the command: %v", dataDirs[0], err)
	}
	if pids := serverProcessesIn(t, filepath.Dir(dataDirs[0])); len(pids) > 0 {
		t.Errorf("server processes of %s still run after the command: %v", dataDirs[0], pids)
	}
}

// serverProcessesIn lists the processes whose command line names dir
// (a throwaway server started there).
func serverProcessesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
