package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// cliHelperEnv makes the test binary act as the firedrill command (see
// TestCLIHelperProcess), so that tests can signal a real process.
const cliHelperEnv = "FIREDRILL_CLI_TEST_ARGS"

// TestCLIHelperProcess is not a test: in a child process it runs Main with
// the arguments from the environment and exits with its code.
func TestCLIHelperProcess(t *testing.T) {
	args := os.Getenv(cliHelperEnv)
	if args == "" {
		t.Skip("helper process for the signal tests")
	}
	os.Exit(Main(clikit.OSEnv(), kinds.Registry(), strings.Split(args, "\x1f")))
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startCLI(t *testing.T, tmp string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), cliHelperEnv+"="+strings.Join(args, "\x1f"), "TMPDIR="+tmp)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd, out
}

// privateTmp is a short temp root the server's user can reach (its socket
// lives there).
func privateTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "fdcli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func queryCount(t *testing.T, conn *pgconn.PgConn, sql string) int {
	t.Helper()
	res := conn.ExecParams(context.Background(), sql, nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 {
		t.Fatalf("%s: %v", sql, res.Err)
	}
	n, _ := strconv.Atoi(string(res.Rows[0][0]))
	return n
}

func waitUntil(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Killing firedrill mid-run (SIGINT, SIGTERM) leaves no open transaction
// and no session on a server it was given, the run directory says the run
// was interrupted, and the exit code is 130.
func TestRunInterruptedLeavesNothingOnTheTarget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers and child processes")
	}
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	admin, err := pgconn.Connect(context.Background(), inst.ConnString()+" application_name=test-admin")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			sc := filepath.Join(dir, "s.yaml")
			os.WriteFile(sc, []byte(fmt.Sprintf(`name: interrupted
target: {dsn: %q}
setup:
  sql: ["CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 0) ON CONFLICT DO NOTHING"]
duration: 60s
workloads:
  - name: w
    clients: 3
    scripts:
      - inline: |
          BEGIN;
          UPDATE t SET n = n + 1 WHERE id = 1;
          SELECT pg_sleep(0.05);
          COMMIT;
events:
  - {name: hold, kind: hold_transaction, at: 1s, duration: 50s, xid: true}
`, inst.ConnString())), 0o644)
			cmd, out := startCLI(t, privateTmp(t), "run", sc, "--out", filepath.Join(dir, "runs"))
			held := waitUntil(30*time.Second, func() bool {
				return queryCount(t, admin, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'firedrill-event:%' AND state = 'idle in transaction'") == 1
			})
			if !held {
				t.Fatalf("the hold never started; output:\n%s", out)
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != clikit.ExitInterrupted {
					t.Errorf("exit: %v, want code %d; output:\n%s", err, clikit.ExitInterrupted, out)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("firedrill did not stop within 30 s of %v; output:\n%s", sig, out)
			}
			// A backend takes a moment to exit after its client said goodbye.
			const leftSQL = "FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (application_name LIKE 'firedrill%' OR state LIKE 'idle in transaction%')"
			if !waitUntil(5*time.Second, func() bool { return queryCount(t, admin, "SELECT count(*) "+leftSQL) == 0 }) {
				res := admin.ExecParams(context.Background(), "SELECT application_name || ' ' || coalesce(state, '') || ' ' || query "+leftSQL, nil, nil, nil, nil).Read()
				for _, row := range res.Rows {
					t.Errorf("left on the target after %v: %s", sig, row[0])
				}
			}
			runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			b, _ := os.ReadFile(filepath.Join(runs[0], timeline.ManifestFile))
			var m timeline.Manifest
			if json.Unmarshal(b, &m) != nil || m.Status != timeline.StatusInterrupted {
				t.Errorf("manifest status %q, want interrupted", m.Status)
			}
		})
	}
}

// Interrupting a run on the embedded server removes the server: no
// process, no directory.
func TestRunInterruptedRemovesTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers and child processes")
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	os.WriteFile(sc, []byte(`name: embedded-interrupted
duration: 60s
workloads:
  - name: w
    clients: 2
    scripts: [{inline: "SELECT pg_sleep(0.01);"}]
`), 0o644)
	tmp := privateTmp(t)
	cmd, out := startCLI(t, tmp, "run", sc, "--out", filepath.Join(dir, "runs"), "--progress", "1s")
	if !waitUntil(40*time.Second, func() bool { return strings.Contains(out.String(), " tps ") }) {
		t.Fatalf("no progress line; output:\n%s", out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil {
		t.Errorf("exit 0 after SIGTERM; output:\n%s", out)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "firedrill-pg-*"))
	if len(left) != 0 {
		t.Errorf("embedded server directories left: %v\noutput:\n%s", left, out)
	}
	if b, err := exec.Command("pgrep", "-f", tmp).Output(); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		t.Errorf("processes still running in %s: %s", tmp, b)
	}
}
