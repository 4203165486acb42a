package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Shutdown escalation: fast shutdown (roll back, checkpoint, exit) gets
// long enough for a checkpoint after a heavy run; immediate shutdown (no
// checkpoint, crash recovery at next start) is quick; then SIGKILL to the
// whole process group.
const (
	fastShutdownWait      = 30 * time.Second
	immediateShutdownWait = 5 * time.Second
	killWait              = 5 * time.Second
)

// childProcess is one run of initdb or of the postmaster, from start to exit.
type childProcess struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // Wait's result; read only after exited is closed
}

// spawn starts cmd (with a Pdeathsig) from a goroutine locked to its OS thread, and keeps that
// goroutine (so that thread) alive until the process exits.
//
// Pdeathsig is sent when the *thread* that forked the child dies, not the
// process (go.dev/issue/27505). Go retires a thread when a goroutine locked
// to it exits; if the fork happened on an ordinary thread that some other
// goroutine later locked and exited on, the server would receive SIGQUIT in
// the middle of a run. A locked thread is never shared, and this one lives
// exactly as long as the server.
func spawn(cmd *exec.Cmd) (*childProcess, error) {
	process := &childProcess{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is retired when this goroutine
		// returns, which is after the server has exited.
		closeInheritedOnExec()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		process.err = cmd.Wait()
		close(process.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	process.pid = cmd.Process.Pid
	return process, nil
}

// running reports whether the postmaster has not exited yet.
func (p *childProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// shutdown stops the postmaster: fast shutdown, then immediate, then
// SIGKILL to its process group. It returns once the postmaster has exited.
func (p *childProcess) shutdown() error {
	steps := []struct {
		signal syscall.Signal
		wait   time.Duration
	}{
		{syscall.SIGINT, fastShutdownWait},
		{syscall.SIGQUIT, immediateShutdownWait},
		{syscall.SIGKILL, killWait},
	}
	// A server stopped with SIGSTOP (a drill of a frozen server) would
	// keep each signal pending and be waited for in vain until SIGKILL:
	// let it run again so that it shuts down as asked.
	for _, pid := range ServerProcesses(p.pid) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	for _, step := range steps {
		if !p.running() {
			break
		}
		if step.signal == syscall.SIGKILL {
			p.killGroup()
		} else if err := p.cmd.Process.Signal(step.signal); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("send %v to postmaster %d: %w", step.signal, p.pid, err)
		}
		timer := time.NewTimer(step.wait)
		select {
		case <-p.exited:
		case <-timer.C:
		}
		timer.Stop()
	}
	if p.running() {
		return fmt.Errorf("postmaster %d still running after SIGKILL", p.pid)
	}
	// Backends normally exit before the postmaster does; this catches any
	// left behind when the postmaster itself had to be killed. The group
	// keeps the postmaster's pid while any member lives, so this cannot hit
	// an unrelated process.
	p.killGroup()
	return nil
}

// killGroup sends SIGKILL to the postmaster's whole process group.
func (p *childProcess) killGroup() {
	// ESRCH (group already empty) is the normal outcome, and there is no
	// other error kill(2) can return for a group of our own child.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// logTail returns the last lines written to the log at path since offset,
// for error messages; never more than maxLines lines or a few kilobytes.
func logTail(path string, offset int64) string {
	const maxBytes, maxLines = 8 << 10, 25
	file, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	start := max(offset, info.Size()-maxBytes, 0)
	data, err := io.ReadAll(io.NewSectionReader(file, start, info.Size()-start))
	if err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	text := strings.TrimRight(string(data), "\n")
	if text == "" {
		return fmt.Sprintf("(server log %s is empty)", path)
	}
	lines := strings.Split(text, "\n")
	if start > offset && len(lines) > 1 {
		lines = lines[1:] // the first line was cut by the byte limit
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return "server log " + path + ":\n  " + strings.Join(lines, "\n  ")
}

// ServerProcesses lists a running server's processes: the postmaster and
// its children (backends, background workers), found by their parent in
// /proc since each child is the leader of a session of its own (the
// postmaster's process group does not hold them).
func ServerProcesses(postmaster int) []int {
	pids := []int{postmaster}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// The fields after the command name, which may hold spaces and
		// parentheses: state, then the parent's pid.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(postmaster) {
			pids = append(pids, pid)
		}
	}
	return pids
}
