package serverproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// OwnerFileName holds "<pid> <start time>" of the process that owns an
	// instance directory.
	OwnerFileName = "firedrill.owner"
	// ownerlessGrace is how long a directory without a readable owner file
	// is assumed to be in creation (the owner file is written right after
	// the directory) before it is treated as stale.
	ownerlessGrace = 10 * time.Minute
	// staleServerWait bounds the wait for a killed stale server.
	staleServerWait = 5 * time.Second
)

// WriteOwnerFile records the current process as the owner of dir. The
// process start time is recorded too, so that a recycled pid is not taken
// for a live owner.
func WriteOwnerFile(dir string) error {
	pid := os.Getpid()
	content := strconv.Itoa(pid)
	if start, ok := processStartTime(pid); ok {
		content += " " + start
	}
	path := filepath.Join(dir, OwnerFileName)
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		return fmt.Errorf("write owner file %s: %w", path, err)
	}
	return nil
}

// Reaper finds and removes the instance directories of one kind of server
// whose owner is gone.
type Reaper struct {
	// Prefix names every instance directory of this kind in the temp dir
	// ("firedrill-pg-"), so that stale ones can be found.
	Prefix string
	// ServerPID returns the pid of the server still running in a stale
	// instance directory, if any. It must check that the pid really is
	// that server (its command line names the directory), so that a
	// recycled pid never gets a process killed; PIDFile does so.
	ServerPID func(dir string) (int, bool)
}

// PIDFile returns a Reaper.ServerPID that reads the pid on the first line
// of the file at rel (relative to the instance directory) and accepts it
// when the process's program is one of programs and an argument of its
// command line contains the instance directory.
func PIDFile(rel string, programs ...string) func(dir string) (int, bool) {
	return func(dir string) (int, bool) {
		content, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return 0, false
		}
		firstLine, _, _ := strings.Cut(string(content), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(firstLine))
		if err != nil || pid <= 0 {
			return 0, false
		}
		return pid, IsServerIn(pid, dir, programs...)
	}
}

// IsServerIn reports whether pid runs one of programs (by base name) with
// an argument inside dir.
func IsServerIn(pid int, dir string, programs ...string) bool {
	args := Args(pid)
	if len(args) == 0 {
		return false
	}
	name := filepath.Base(args[0])
	known := false
	for _, program := range programs {
		known = known || name == program
	}
	if !known {
		return false
	}
	dir = filepath.Clean(dir)
	for _, arg := range args[1:] {
		if _, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
			arg = value // --datadir=/tmp/…
		}
		if clean := filepath.Clean(arg); clean == dir || strings.HasPrefix(clean, dir+"/") {
			return true
		}
	}
	return false
}

// ReapStale removes the instance directories in tempRoot whose owner
// process is gone, killing a server still running in one. Directories of
// live owners are never touched. Every directory is tried; the errors of
// those that could not be reaped are returned together. progress, if not
// nil, hears of each directory removed.
func (r Reaper) ReapStale(tempRoot string, progress func(string, ...any)) error {
	dirs, err := filepath.Glob(filepath.Join(tempRoot, r.Prefix+"*"))
	if err != nil {
		return fmt.Errorf("list %s: %w", tempRoot, err)
	}
	var errs []error
	for _, dir := range dirs {
		info, err := os.Lstat(dir)
		if err != nil || !info.IsDir() { // vanished meanwhile, or not ours (a symlink, a file)
			continue
		}
		stale, why := isStale(dir, info)
		if !stale {
			continue
		}
		if err := r.reapDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale instance %s (%s): %w", dir, why, err))
			continue
		}
		if progress != nil {
			progress("removed stale %s (%s)", dir, why)
		}
	}
	return errors.Join(errs...)
}

// isStale decides whether dir's owner is gone, and says why.
func isStale(dir string, info fs.FileInfo) (bool, string) {
	content, err := os.ReadFile(filepath.Join(dir, OwnerFileName))
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
	if Alive(pid, recordedStart) {
		return false, ""
	}
	return true, fmt.Sprintf("owner pid %d is gone", pid)
}

// Alive reports whether pid runs and, if recordedStart (its start time as
// WriteOwnerFile records it) is known, is the very process that was
// recorded, not a later one given the same pid.
func Alive(pid int, recordedStart string) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if State(pid) == 'Z' {
		return false
	}
	if recordedStart == "" {
		return true
	}
	start, ok := processStartTime(pid)
	if !ok {
		return true // cannot tell: never touch a directory that may be in use
	}
	return start == recordedStart
}

// reapDir kills the server of a stale instance if it still runs, then
// removes the directory.
func (r Reaper) reapDir(dir string) error {
	if r.ServerPID != nil {
		if pid, ok := r.ServerPID(dir); ok {
			target := pid
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				target = -pid // the server leads its own group: take its children too
			}
			if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill server %d: %w", pid, err)
			}
			deadline := time.Now().Add(staleServerWait)
			for Alive(pid, "") {
				if time.Now().After(deadline) {
					return fmt.Errorf("server %d still running %v after SIGKILL", pid, staleServerWait)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return nil
}

// NewDir makes a fresh instance directory of r's kind in the temp
// directory, after reaping the stale ones there; a failure to reap is only
// said: someone else's leftovers must not stop this run.
func (r Reaper) NewDir(progress func(string, ...any)) (string, error) {
	tempRoot := os.TempDir()
	if err := r.ReapStale(tempRoot, progress); err != nil {
		progress("warning: %v", err)
	}
	dir, err := os.MkdirTemp(tempRoot, r.Prefix)
	if err != nil {
		return "", fmt.Errorf("create instance directory in %s: %w", tempRoot, err)
	}
	return dir, nil
}
