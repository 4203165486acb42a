package serverproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// After its leader is killed, a group's other members are waited for:
// Stop returns only once none is alive (a restart right after then finds
// what they held free: PostgreSQL's shared memory after a crash).
func TestWaitGroupGoneWaitsForTheMembers(t *testing.T) {
	t.Parallel()
	// A leader of its own group with a child that ignores nothing and
	// sleeps: SIGKILL to the group ends both.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for len(groupMembers(pgid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the group has %v, want the shell and its sleep", groupMembers(pgid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if left := waitGroupGone(pgid, 5*time.Second); len(left) > 0 {
		t.Fatalf("group members %v still alive after SIGKILL", left)
	}
	_ = cmd.Wait()
	if left := groupMembers(pgid); len(left) > 0 {
		t.Errorf("members %v listed after they exited", left)
	}
}
