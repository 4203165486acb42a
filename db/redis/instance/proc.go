package redis

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/instance/serverproc"
)

// reaper removes the instance directories of dead owners, killing a
// redis-server still running in one.
var reaper = serverproc.Reaper{Prefix: dirPrefix, ServerPID: serverIn}

// serverIn finds the redis-server still running in an instance directory:
// the pid in its pid file, if that process really is a redis-server
// working in the directory's data dir. serverproc.PIDFile cannot tell, as
// Redis rewrites its command line to "redis-server 127.0.0.1:<port>".
//
// A child the server forked (a BGSAVE, an AOF rewrite) outlives a server
// killed outright until its work is done, writing into the directory: it
// is found by its working directory, the server's data dir.
func serverIn(dir string) (int, bool) {
	dataDir := filepath.Join(dir, dataDirName)
	if pid, ok := pidFromFile(filepath.Join(dir, pidFileName)); ok && isServerOf(pid, dataDir) {
		return pid, true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && isServerOf(pid, dataDir) {
			return pid, true
		}
	}
	return 0, false
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

// isServerOf checks /proc that pid is a redis-server (by its executable)
// working in dataDir (it chdirs to its `dir`), so that a recycled pid, or
// a Redis of someone else's, never gets killed.
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
