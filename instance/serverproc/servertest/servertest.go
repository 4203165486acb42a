// Package servertest holds what the tests of every throwaway server's
// instance package check the same way: that no process is left running in
// an instance directory, and that the directory of an owner killed with
// SIGKILL is reaped by the next start. Only tests import it.
package servertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
)

// ProcessesIn lists live processes whose working directory is inside dir
// (servers chdir to their data directory, and their children inherit it),
// even after the directory has been removed, when the kernel appends
// " (deleted)".
func ProcessesIn(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", entry.Name(), "cwd"))
		if err != nil || serverproc.State(pid) == 'Z' {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") || strings.HasPrefix(cwd, dir+" ") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitNoProcessesIn fails the test if processes still run inside dir after timeout.
func WaitNoProcessesIn(t *testing.T, dir string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pids := ProcessesIn(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still run in %s", pids, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AssertGone fails the test if dir exists or has processes.
func AssertGone(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists (stat: %v)", dir, err)
	}
	WaitNoProcessesIn(t, dir, 2*time.Second)
}

// Owner is what KilledOwnerIsReaped needs of an instance package.
type Owner struct {
	// Env is the environment variable that makes the test binary the
	// owner (see Helper).
	Env string
	// Start starts an instance and returns its directory and how to stop it.
	Start func(ctx context.Context, progress io.Writer) (dir string, stop func() error, err error)
	// Server finds the server still running in an instance directory.
	Server func(dir string) (pid int, ok bool)
	// ProcessDir is where the server's processes work, below dir.
	ProcessDir func(dir string) string
	// Settle is how long the parent-death signal may take to end them.
	Settle time.Duration
}

// Helper, called by a test named TestHelperProcess, is no test: when
// KilledOwnerIsReaped runs the test binary in a child process with
// o.Env set, it starts an instance, prints its directory and waits to be
// killed; otherwise it skips.
func Helper(t *testing.T, o Owner) {
	if os.Getenv(o.Env) != "owner" {
		t.Skip("helper process for TestKilledOwnerIsReaped")
	}
	dir, _, err := o.Start(context.Background(), nil)
	if err != nil {
		fmt.Printf("error=%v\n", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	fmt.Printf("dir=%s\n", dir)
	time.Sleep(time.Hour)
}

// KilledOwnerIsReaped checks that the server of an owner killed with
// SIGKILL ends by its parent-death signal, and that the next start reaps
// the owner's directory and says so. The owner is the test binary run as
// TestHelperProcess (see Helper).
func KilledOwnerIsReaped(t *testing.T, o Owner) {
	// A private temp root: with the shared one, a parallel test's Start
	// may reap the killed owner's directory first and report it instead.
	// (t.Setenv also keeps this test out of the parallel phase.)
	root, err := os.MkdirTemp("/tmp", "fdreap-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o755); err != nil { // the server's user must reach its socket
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	child := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=5m")
	child.Env = append(os.Environ(), o.Env+"=owner")
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	defer func() { // in case the test fails before killing it
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	var dir string
	lines := bufio.NewScanner(stdout)
	for dir == "" && lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "error=") {
			t.Fatalf("helper: %s", line)
		}
		dir, _ = strings.CutPrefix(line, "dir=")
	}
	if dir == "" {
		t.Fatalf("helper printed no directory (%v)", lines.Err())
	}
	if server, ok := o.Server(dir); !ok {
		t.Fatalf("no running server in %s (pid %d)", dir, server)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill helper: %v", err)
	}
	_ = child.Wait() // "signal: killed" is the expected outcome

	// The parent-death signal ends the server without any help.
	WaitNoProcessesIn(t, o.ProcessDir(dir), o.Settle)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed owner's directory should still be there for the reaper: %v", err)
	}

	// The next Start reaps the directory of the dead owner.
	var progress strings.Builder
	_, stop, err := o.Start(t.Context(), &progress)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stale %s not reaped (stat: %v); progress:\n%s", dir, err, progress.String())
	}
	if !strings.Contains(progress.String(), "removed stale "+dir) {
		t.Errorf("progress does not report the reaping:\n%s", progress.String())
	}
}

// LogWriter sends an instance's progress lines to the test log.
func LogWriter(t testing.TB) io.Writer { return logWriter{t} }

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
