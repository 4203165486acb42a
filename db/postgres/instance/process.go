package postgres

import (
	"syscall"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
)

// shutdownSteps are how a postmaster is stopped, escalating: fast shutdown (roll back, checkpoint, exit) gets
// long enough for a checkpoint after a heavy run; immediate shutdown (no
// checkpoint, crash recovery at next start) is quick; then SIGKILL to the
// whole process group.
func shutdownSteps() []serverproc.Step {
	return []serverproc.Step{
		{Signal: syscall.SIGINT, Wait: 30 * time.Second},
		{Signal: syscall.SIGQUIT, Wait: 5 * time.Second},
		{Signal: syscall.SIGKILL, Wait: 5 * time.Second},
	}
}

// ServerProcesses lists a running server's processes: the postmaster and
// its children (backends, background workers), found by their parent in
// /proc since each child is the leader of a session of its own (the
// postmaster's process group does not hold them).
func ServerProcesses(postmaster int) []int { return serverproc.Tree(postmaster) }
