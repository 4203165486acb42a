package serverproc

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

// Process is one run of a server or of its initializer, from start to exit.
type Process struct {
	cmd    *exec.Cmd
	name   string // the program's base name, for messages
	pid    int
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // Wait's result; read only after exited is closed
}

// Spawn starts cmd (give it a ProcAttr) from a goroutine locked to its OS
// thread, and keeps that goroutine (so that thread) alive until the process
// exits. No descriptor of ours above stderr reaches the child.
//
// Pdeathsig is sent when the *thread* that forked the child dies, not the
// process (go.dev/issue/27505). Go retires a thread when a goroutine locked
// to it exits; if the fork happened on an ordinary thread that some other
// goroutine later locked and exited on, the server would receive its
// parent-death signal in the middle of a run. A locked thread is never
// shared, and this one lives exactly as long as the server.
func Spawn(cmd *exec.Cmd) (*Process, error) {
	process := &Process{cmd: cmd, name: filepath.Base(cmd.Path), exited: make(chan struct{})}
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

// PID is the process id.
func (p *Process) PID() int { return p.pid }

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (exec.Cmd.Wait's result); only meaningful
// once Exited is closed.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Step is one stage of a shutdown: a signal, and how long to wait for the
// process to exit after it.
type Step struct {
	Signal syscall.Signal
	Wait   time.Duration
}

// Stop shuts the process down by steps (say, a clean shutdown, then a
// quick one, then SIGKILL) and returns once it has exited. A SIGKILL step
// goes to the whole process group. Whatever the steps, the group is killed
// last, so that no child of the server is left behind.
func (p *Process) Stop(steps ...Step) error {
	// A server stopped with SIGSTOP (a drill of a frozen server) would
	// keep each signal pending and be waited for in vain until SIGKILL:
	// let it run again so that it shuts down as asked.
	for _, pid := range Tree(p.pid) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	for _, step := range steps {
		if !p.Running() {
			break
		}
		if step.Signal == syscall.SIGKILL {
			p.KillGroup()
		} else if err := p.cmd.Process.Signal(step.Signal); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("send %v to %s %d: %w", step.Signal, p.name, p.pid, err)
		}
		timer := time.NewTimer(step.Wait)
		select {
		case <-p.exited:
		case <-timer.C:
		}
		timer.Stop()
	}
	if p.Running() {
		return fmt.Errorf("%s %d still running after %d shutdown steps", p.name, p.pid, len(steps))
	}
	// Children normally exit before the server does; this catches any left
	// behind when the server itself had to be killed. The group keeps the
	// server's pid while any member lives, so this cannot hit an unrelated
	// process.
	p.KillGroup()
	// A killed child still holds what it held (PostgreSQL's shared
	// memory, a socket, the data directory) until it has exited: wait,
	// so that a restart right after finds them free.
	if left := waitGroupGone(p.pid, groupExitWait); len(left) > 0 {
		return fmt.Errorf("%s %d: processes %v of its group still running %v after SIGKILL", p.name, p.pid, left, groupExitWait)
	}
	return nil
}

// groupExitWait bounds the wait for a killed group's members to exit.
const groupExitWait = 5 * time.Second

// waitGroupGone waits until no process of group pgid is alive (zombies,
// which hold nothing, do not count) and returns those still alive when
// the wait ends.
func waitGroupGone(pgid int, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupMembers lists the live (not zombie) processes of group pgid, from
// /proc.
func groupMembers(pgid int) []int {
	group := strconv.Itoa(pgid)
	return procPIDs(func(pid int) bool {
		// fields[0] is the state, fields[2] the process group.
		fields, ok := processStat(pid)
		return ok && len(fields) > 2 && fields[2] == group && fields[0] != "Z" && fields[0] != "X"
	})
}

// procPIDs lists the processes in /proc that keep says to, this one
// left out.
func procPIDs(keep func(pid int) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if keep(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillGroup sends SIGKILL to the process's whole process group.
func (p *Process) KillGroup() {
	// ESRCH (group already empty) is the normal outcome, and there is no
	// other error kill(2) can return for a group of our own child.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// Tree lists a running server's processes: the server and its children
// (PostgreSQL's backends, background workers), found by their parent in
// /proc since a child may lead a session of its own (out of the server's
// process group).
func Tree(server int) []int {
	pids := []int{server}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == server {
			continue
		}
		if fields, ok := processStat(pid); ok && len(fields) > 1 && fields[1] == strconv.Itoa(server) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// LogTail returns the last lines written to the log at path since offset,
// for error messages; never more than 25 lines or a few kilobytes.
func LogTail(path string, offset int64) string {
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

// processStat returns the fields of /proc/<pid>/stat after the command
// name, which may itself contain spaces and parentheses: fields[0] is the
// state, fields[1] the parent's pid.
func processStat(pid int) ([]string, bool) {
	content, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	end := bytes.LastIndexByte(content, ')')
	if end < 0 {
		return nil, false
	}
	return strings.Fields(string(content[end+1:])), true
}

// State is the one-letter state of pid ('R', 'S', 'Z' …), or 0 if unknown.
func State(pid int) byte {
	fields, ok := processStat(pid)
	if !ok || len(fields) == 0 || fields[0] == "" {
		return 0
	}
	return fields[0][0]
}

// processStartTime is pid's start time in clock ticks since boot (field
// 22 of /proc/<pid>/stat), as text.
func processStartTime(pid int) (string, bool) {
	fields, ok := processStat(pid)
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if !ok || len(fields) < 20 {
		return "", false
	}
	return fields[19], true
}

// Args is pid's command line, or nil if it cannot be read (gone, or not Linux).
func Args(pid int) []string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
}

// RunsAsNote tells, in a server's start line, that it runs as another
// user (cred is not nil).
func RunsAsNote(cred *syscall.Credential) string {
	if cred == nil {
		return ""
	}
	return ", running as user " + OSUser
}

// Say writes one progress line to w, if anyone listens (w is not nil).
func Say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// KillIn kills the processes working in dir (their current directory is
// dir or below it) and waits up to wait for them to exit; it returns
// those still alive then. PostgreSQL's backends lead process groups of
// their own and work in the data directory: after the postmaster was
// killed, they are found this way, not by group or parent.
func KillIn(dir string, wait time.Duration) []int {
	dir = filepath.Clean(dir)
	in := func() []int {
		return procPIDs(func(pid int) bool {
			cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
			if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
				return false
			}
			st := State(pid)
			return st != 'Z' && st != 'X' && st != 0
		})
	}
	deadline := time.Now().Add(wait)
	for {
		left := in()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
