package postgres

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestPostmasterPIDRejectsOtherProcesses(t *testing.T) {
	t.Parallel()
	// The test binary is alive but is no postgres, and a dead pid is no
	// one: a recycled pid in a stale postmaster.pid must never get a
	// process killed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	for _, pid := range []int{os.Getpid(), dead.Process.Pid} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, dataDirName), 0o700); err != nil {
			t.Fatal(err)
		}
		content := []byte(strconv.Itoa(pid) + "\n" + dir + "/data\n")
		if err := os.WriteFile(filepath.Join(dir, dataDirName, "postmaster.pid"), content, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, ok := postmasterPID(dir); ok {
			t.Errorf("pid %d was taken for the postmaster of %s (%d)", pid, dir, got)
		}
	}
}
