package postgres

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/firedrill/firedrill/instance/serverproc/servertest"
)

// A descriptor firedrill holds without close-on-exec (one its caller
// passed down, a lock file opened by raw syscall) must not reach the
// server: a postmaster holding a caller's lock or socket would keep it
// past firedrill's end.
func TestServerInheritsNoDescriptors(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "caller.lock")
	fd, err := syscall.Open(lock, syscall.O_CREAT|syscall.O_RDWR, 0o600) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if flags, err := fcntl(fd, syscall.F_GETFD); err != nil || flags&syscall.FD_CLOEXEC != 0 {
		t.Fatalf("the test's descriptor %d: flags %#x, %v; want it inheritable", fd, flags, err)
	}

	inst, err := Start(t.Context(), Options{Progress: servertest.LogWriter(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Stop()
	procs := ServerProcesses(inst.PID())
	if len(procs) < 2 {
		t.Fatalf("server processes %v: want the postmaster and its children", procs)
	}
	for _, pid := range procs {
		fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		entries, err := os.ReadDir(fdDir)
		if os.IsNotExist(err) {
			continue // a short-lived child, gone meanwhile
		}
		if err != nil {
			t.Fatalf("server process %d: %v", pid, err)
		}
		for _, e := range entries {
			target, _ := os.Readlink(filepath.Join(fdDir, e.Name()))
			if strings.HasPrefix(target, lock) {
				t.Errorf("server process %d holds the caller's %s as fd %s", pid, lock, e.Name())
			}
		}
	}
}

func fcntl(fd, cmd int) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}
