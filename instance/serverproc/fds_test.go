package serverproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A descriptor firedrill holds without close-on-exec (one its caller
// passed down, a lock file opened by raw syscall) must not reach a server:
// a server holding a caller's lock or socket would keep it past
// firedrill's end.
func TestSpawnPassesNoDescriptors(t *testing.T) {
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
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = ProcAttr(nil, syscall.SIGKILL)
	process, err := Spawn(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer process.Stop(Step{syscall.SIGKILL, 5 * time.Second})
	fdDir := filepath.Join("/proc", strconv.Itoa(process.PID()), "fd")
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("read %s: %v", fdDir, err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s is empty: the check is broken", fdDir)
	}
	for _, e := range entries {
		target, _ := os.Readlink(filepath.Join(fdDir, e.Name()))
		if strings.HasPrefix(target, lock) {
			t.Errorf("the child holds the caller's %s as fd %s", lock, e.Name())
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
