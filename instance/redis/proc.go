package redis

// The pieces every throwaway server needs (a child process with a
// parent-death signal, no inherited descriptors, an unprivileged user,
// owner files and reaping, a free port). instance/serverproc is to hold
// them for every kind; until it is on main, this is Redis's thin copy.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// serverOSUser is the account the server runs as when firedrill runs as root.
	serverOSUser = "firedrill"
	// ownerFileName holds "<pid> <start time>" of the process that owns an
	// instance directory.
	ownerFileName = "firedrill.owner"
	// ownerlessGrace is how long a directory without a readable owner file
	// is taken to be in creation before it is treated as stale.
	ownerlessGrace = 10 * time.Minute
	// killWait bounds the wait for a killed server to exit.
	killWait = 5 * time.Second
)

// child is one run of the server, from start to exit.
type child struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // Wait's result; read only after exited is closed
}

// spawn starts cmd from a goroutine locked to its OS thread and keeps that
// thread alive until the process exits: Pdeathsig fires when the thread
// that forked the child ends, not the process (go.dev/issue/27505).
func spawn(cmd *exec.Cmd) (*child, error) {
	process := &child{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
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

// running reports whether the server has not exited yet.
func (p *child) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends signal (SIGTERM: Redis's orderly shutdown) and waits up to
// wait, then kills the whole process group (the server and any child it
// forked for a save or an AOF rewrite). It returns once the server has
// exited.
func (p *child) stop(signal syscall.Signal, wait time.Duration) error {
	// A server stopped with SIGSTOP (a drill of a frozen server) would
	// keep the signal pending: let it run so that it can act on it.
	_ = syscall.Kill(-p.pid, syscall.SIGCONT)
	if signal != syscall.SIGKILL && p.running() {
		if err := p.cmd.Process.Signal(signal); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("send %v to redis-server %d: %w", signal, p.pid, err)
		}
		p.wait(wait)
	}
	p.killGroup()
	if !p.wait(killWait) {
		return fmt.Errorf("redis-server %d still running after SIGKILL", p.pid)
	}
	return nil
}

// wait waits up to d for the server to exit, and says whether it did.
func (p *child) wait(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// killGroup sends SIGKILL to the server's process group; ESRCH (the group
// is empty) is the normal outcome once the server has exited.
func (p *child) killGroup() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }

// procAttr makes the server die with firedrill (Pdeathsig), keeps it out
// of the terminal's process group (a Ctrl-C reaches firedrill, which stops
// it) and runs it as cred (nil: the current user).
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec
// before the server is started, so that one firedrill's caller passed down
// is not held by the server long after firedrill has ended.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// serverCredential is nil (the current user) unless firedrill runs as
// root, when it is the serverOSUser account, created on first use.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	account, err := user.Lookup(serverOSUser)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return nil, fmt.Errorf("look up user %s: %w", serverOSUser, err)
		}
		out, addErr := exec.Command("useradd", "--system", "--no-create-home",
			"--shell", "/usr/sbin/nologin", serverOSUser).CombinedOutput()
		if account, err = user.Lookup(serverOSUser); err != nil {
			return nil, fmt.Errorf("firedrill runs redis-server as the system user %q when run as root, "+
				"and could not create it (useradd: %v: %s); create it with "+
				"`useradd --system --no-create-home --shell /usr/sbin/nologin %s`",
				serverOSUser, addErr, strings.TrimSpace(string(out)), serverOSUser)
		}
	}
	uid, err := strconv.ParseUint(account.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q: %w", serverOSUser, account.Uid, err)
	}
	gid, err := strconv.ParseUint(account.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has a non-numeric gid %q: %w", serverOSUser, account.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// checkReachable reports whether the account in cred can walk down to dir.
func checkReachable(dir string, cred *syscall.Credential) error {
	for ancestor := filepath.Dir(dir); ; ancestor = filepath.Dir(ancestor) {
		info, err := os.Stat(ancestor)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", ancestor, err)
		}
		perm := info.Mode().Perm()
		allowed := perm&0o001 != 0
		if stat, ok := info.Sys().(*syscall.Stat_t); ok {
			switch {
			case stat.Uid == cred.Uid:
				allowed = perm&0o100 != 0
			case stat.Gid == cred.Gid:
				allowed = perm&0o010 != 0
			}
		}
		if !allowed {
			return fmt.Errorf("redis-server runs as user %s, which may not enter %s (mode %v); "+
				"set TMPDIR to a directory everyone may enter, such as /tmp", serverOSUser, ancestor, perm)
		}
		if parent := filepath.Dir(ancestor); parent == ancestor {
			return nil
		}
	}
}

// writeOwnerFile records the current process (pid and start time, so that
// a recycled pid is not taken for a live owner) as the owner of dir.
func writeOwnerFile(dir string) error {
	pid := os.Getpid()
	content := strconv.Itoa(pid)
	if start, ok := processStartTime(pid); ok {
		content += " " + start
	}
	path := filepath.Join(dir, ownerFileName)
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		return fmt.Errorf("write owner file %s: %w", path, err)
	}
	return nil
}

// reapStale removes the instance directories in tempRoot whose owner is
// gone, killing a server still running in one. Those of live owners are
// never touched; every directory is tried and the failures returned together.
func reapStale(tempRoot string, progress func(string, ...any)) error {
	dirs, err := filepath.Glob(filepath.Join(tempRoot, dirPrefix+"*"))
	if err != nil {
		return fmt.Errorf("list %s: %w", tempRoot, err)
	}
	var errs []error
	for _, dir := range dirs {
		info, err := os.Lstat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		stale, why := isStale(dir, info)
		if !stale {
			continue
		}
		if err := reapDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale instance %s (%s): %w", dir, why, err))
			continue
		}
		progress("removed stale %s (%s)", dir, why)
	}
	return errors.Join(errs...)
}

// isStale decides whether dir's owner is gone, and says why.
func isStale(dir string, info fs.FileInfo) (bool, string) {
	content, err := os.ReadFile(filepath.Join(dir, ownerFileName))
	fields := strings.Fields(string(content))
	var pid int
	if err == nil && len(fields) > 0 {
		pid, err = strconv.Atoi(fields[0])
	}
	if err != nil || len(fields) == 0 || pid <= 0 {
		if time.Since(info.ModTime()) < ownerlessGrace {
			return false, ""
		}
		return true, "no owner file"
	}
	recordedStart := ""
	if len(fields) > 1 {
		recordedStart = fields[1]
	}
	if processAlive(pid, recordedStart) {
		return false, ""
	}
	return true, fmt.Sprintf("owner pid %d is gone", pid)
}

// processAlive reports whether pid runs and, if recordedStart is known,
// is the very process that was recorded.
func processAlive(pid int, recordedStart string) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	fields, ok := processStat(pid)
	if ok && len(fields) > 0 && fields[0] == "Z" {
		return false
	}
	if recordedStart == "" {
		return true
	}
	start, ok := processStartTime(pid)
	return !ok || start == recordedStart
}

// reapDir kills the server of a stale instance if it still runs (found by
// its pid file and checked in /proc, so that a recycled pid never gets a
// process killed), then removes the directory.
func reapDir(dir string) error {
	if pid, ok := pidFromFile(filepath.Join(dir, pidFileName)); ok && isServerOf(pid, filepath.Join(dir, dataDirName)) {
		target := pid
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			target = -pid // its group holds a forked save or rewrite too
		}
		if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill redis-server %d: %w", pid, err)
		}
		deadline := time.Now().Add(killWait)
		for processAlive(pid, "") {
			if time.Now().After(deadline) {
				return fmt.Errorf("redis-server %d still running %v after SIGKILL", pid, killWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return nil
}

// pidFromFile reads the pid redis-server wrote to its pid file.
func pidFromFile(path string) (int, bool) {
	content, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(content)))
	return pid, err == nil && pid > 0
}

// isServerOf checks /proc that pid is a redis-server working in dataDir
// (it chdirs to its `dir`; its title no longer names its config file).
func isServerOf(pid int, dataDir string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "redis-") {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false
	}
	cwd = strings.TrimSuffix(cwd, " (deleted)")
	return filepath.Clean(cwd) == filepath.Clean(dataDir)
}

// processStat returns the fields of /proc/<pid>/stat after the command name.
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

// processStartTime is pid's start time in clock ticks since boot (field 22
// of /proc/<pid>/stat), as text.
func processStartTime(pid int) (string, bool) {
	fields, ok := processStat(pid)
	if !ok || len(fields) < 20 {
		return "", false
	}
	return fields[19], true
}

// freePort asks the kernel for a free loopback port; another process may
// take it before the server binds it, which the caller retries.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if err := listener.Close(); err != nil {
		return 0, fmt.Errorf("release probe port %d: %w", port, err)
	}
	return port, nil
}
