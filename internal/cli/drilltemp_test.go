package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
)

// A drill that was killed leaves its folder of variants behind; the next
// drill removes it, and leaves alone the folder of a drill still running.
func TestDrillTempOfAKilledDrillIsReaped(t *testing.T) {
	// Not parallel: it sets TMPDIR for the process.
	root := t.TempDir()
	t.Setenv("TMPDIR", root)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "firedrill-drill-111")
	live := filepath.Join(root, "firedrill-drill-222")
	for dir, pid := range map[string]int{stale: dead.Process.Pid, live: os.Getpid()} {
		if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "firedrill.owner"), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env, _, stderr := clikit.MemoryEnv("")
	dir, err := newDrillTemp(env)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed drill's folder is still there (%v)", err)
	}
	if !strings.Contains(stderr.String(), "removed stale "+stale) {
		t.Errorf("stderr %q does not say what was removed", stderr)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live drill's folder was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "firedrill.owner")); err != nil || !strings.HasPrefix(filepath.Base(dir), "firedrill-drill-") {
		t.Errorf("new folder %s has no owner file (%v)", dir, err)
	}
}
