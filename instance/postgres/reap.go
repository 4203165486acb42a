package postgres

import (
	"bytes"
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
	// dirPrefix names every instance directory in the temp dir, so that
	// stale ones can be found.
	dirPrefix = "firedrill-pg-"
	// ownerFileName holds "<pid> <start time>" of the process that owns an
	// instance directory.
	ownerFileName = "firedrill.owner"
	// ownerlessGrace is how long a directory without a readable owner file
	// is assumed to be in creation (the owner file is written right after
	// the directory) before it is treated as stale.
	ownerlessGrace = 10 * time.Minute
	// stalePostmasterWait bounds the wait for a killed stale postmaster.
	stalePostmasterWait = 5 * time.Second
)

// writeOwnerFile records the current process as the owner of dir. The
// process start time is recorded too, so that a recycled pid is not taken
// for a live owner.
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

// reapStale removes the instance directories in tempRoot whose owner
// process is gone, killing a postmaster still running in one. Directories
// of live owners are never touched. Every directory is tried; the errors of
// those that could not be reaped are returned together.
func reapStale(tempRoot string, progress func(string, ...any)) error {
	dirs, err := filepath.Glob(filepath.Join(tempRoot, dirPrefix+"*"))
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
		if err := reapDir(dir); err != nil {
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
// is the very process that was recorded (not a later one given the same pid).
func processAlive(pid int, recordedStart string) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if processState(pid) == 'Z' {
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

// reapDir kills the postmaster of a stale instance if it still runs, then
// removes the directory.
func reapDir(dir string) error {
	dataDir := filepath.Join(dir, "data")
	if pid, ok := postmasterPID(dataDir); ok && isPostmasterOf(pid, dataDir) {
		target := pid
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			target = -pid // the postmaster leads its own group: take its backends too
		}
		if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill postmaster %d: %w", pid, err)
		}
		deadline := time.Now().Add(stalePostmasterWait)
		for processAlive(pid, "") {
			if time.Now().After(deadline) {
				return fmt.Errorf("postmaster %d still running %v after SIGKILL", pid, stalePostmasterWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return nil
}

// postmasterPID reads the pid on the first line of dataDir/postmaster.pid.
func postmasterPID(dataDir string) (int, bool) {
	content, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	firstLine, _, _ := strings.Cut(string(content), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(firstLine))
	return pid, err == nil && pid > 0
}

// isPostmasterOf checks /proc that pid is a postgres server started on
// dataDir, so that a recycled pid never gets a process killed.
func isPostmasterOf(pid int, dataDir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if name := filepath.Base(args[0]); name != "postgres" && name != "postmaster" {
		return false
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "-D" && filepath.Clean(args[i+1]) == filepath.Clean(dataDir) {
			return true
		}
	}
	return false
}

// processStat returns the fields of /proc/<pid>/stat after the command
// name, which may itself contain spaces and parentheses.
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

// processState is the one-letter state of pid ('R', 'S', 'Z' …), or 0 if unknown.
func processState(pid int) byte {
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
