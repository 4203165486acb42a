package slowdisk_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/slowdisk"
)

// buildLibrary compiles the library into a temp dir.
func buildLibrary(t *testing.T) (lib, dir string) {
	t.Helper()
	dir = t.TempDir()
	lib, err := slowdisk.Build(t.Context(), dir)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("Build left %v in its directory, want only the library", entries)
	}
	return lib, dir
}

// holdWrite runs testdata/holdwrite.c with the library: a sync in one
// thread, a write to the same file and one to a pipe in another while it
// is in flight; it returns the three durations in ms.
func holdWrite(t *testing.T, lib string, control slowdisk.Control) (syncMS, writeMS, pipeMS float64) {
	t.Helper()
	dir := t.TempDir()
	program := filepath.Join(dir, "holdwrite")
	if out, err := exec.Command("cc", "-O2", "-pthread", "-o", program, "testdata/holdwrite.c").CombinedOutput(); err != nil {
		t.Fatalf("compile holdwrite: %v\n%s", err, out)
	}
	cmd := exec.Command(program, filepath.Join(dir, "file"))
	cmd.Env = append(os.Environ(), slowdisk.Env(lib, control)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("holdwrite: %v\n%s", err, out)
	}
	if _, err := fmt.Sscanf(string(out), "sync=%g write=%g pipe=%g", &syncMS, &writeMS, &pipeMS); err != nil {
		t.Fatalf("holdwrite printed %q: %v", out, err)
	}
	return syncMS, writeMS, pipeMS
}

// A sync takes the delay, a write to its file waits for it, a write to a
// pipe does not; with the disk switched off nothing waits.
// The proof on a real server, redis-server's own AOF stall, is in
// db/redis/instance (TestSlowDiskStallsTheAOF).
func TestHoldsWritesBehindSync(t *testing.T) {
	t.Parallel()
	lib, dir := buildLibrary(t)
	control := slowdisk.ControlIn(dir)

	if err := control.On(400 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	syncMS, writeMS, pipeMS := holdWrite(t, lib, control)
	t.Logf("slow: sync %.0f ms, write %.0f ms, pipe %.0f ms", syncMS, writeMS, pipeMS)
	if syncMS < 400 {
		t.Errorf("the sync took %.0f ms, want at least the 400 ms delay", syncMS)
	}
	// The write starts 50 ms into the sync and must wait for its end.
	if writeMS < 300 {
		t.Errorf("the write to the syncing file took %.0f ms, want it held until the sync returned (~350 ms)", writeMS)
	}
	if pipeMS > 100 {
		t.Errorf("the write to a pipe took %.0f ms: only the syncing file's writes may wait", pipeMS)
	}

	if err := control.Off(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(string(control)); !os.IsNotExist(err) {
		t.Errorf("Off left the control file: %v", err)
	}
	syncMS, writeMS, _ = holdWrite(t, lib, control)
	t.Logf("off: sync %.0f ms, write %.0f ms", syncMS, writeMS)
	if syncMS >= 400 || writeMS >= 300 {
		t.Errorf("switched off, the sync took %.0f ms and the write %.0f ms", syncMS, writeMS)
	}
	if err := control.Off(); err != nil {
		t.Errorf("Off twice: %v", err)
	}
}
