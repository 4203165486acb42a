// Package slowdisk makes an embedded server's disk slow the way a busy
// device is, for the slow mode of the disk_pressure event.
//
// # Why a preloaded library
//
// On a busy device (a backup copying a 10 GB file, another server writing
// its snapshot) an fsync waits behind the other writer's data, and a
// write() to a file whose pages are under writeback waits for that sync:
// that is what stops Redis in the aof incident (INCIDENTS.md §5). This
// machine's disk never shows it to plain competing writes, so firedrill
// brings its own slow device, as a small C library (lib/slowdisk.c) loaded into
// the server with LD_PRELOAD:
//
//   - fsync() and fdatasync() take the configured delay before the real
//     sync;
//   - a write(), writev() or pwrite() to a regular file whose sync is in
//     flight (in any thread of the process) waits until the sync returns;
//   - sockets and pipes never wait, and with the control file absent every
//     call goes straight to libc.
//
// The alternatives were weighed on this container: a cgroup v2 io.max
// limit needs the io controller, which is not enabled here (the unified
// hierarchy's cgroup.controllers is empty) and needs root where it is; the
// v1 blkio throttle needs root and, as INCIDENTS.md measured, slows every
// write evenly (16 ms stalls, not a sync that holds writes); a FUSE
// filesystem needs /dev/fuse and a mount, root again, and leaves a mount
// behind a killed run. The library needs neither privileges nor a mount,
// is built by firedrill itself with the system's C compiler, and goes away
// with the server's temp directory.
//
// # What it models and what it does not
//
// It models the two effects the incident turns on: a sync slowed by
// someone else's I/O, and writes to that file held behind the sync. It does
// not model bandwidth (writes that do not meet a sync are as fast as
// ever), reads, the page cache filling up, syncs issued without libc's
// wrappers (sync_file_range, syncfs, O_SYNC/O_DSYNC writes, io_uring), or
// writes glibc makes internally (fwrite's flush): Redis's AOF writes and
// syncs all go through write() and fdatasync(). The delay is the same for
// every sync, where a real device varies; the stall a Redis client sees is
// still Redis's own doing (it postpones the AOF write for up to 2 s while
// the previous fsync runs, then writes and blocks), so a delay just above
// 2 s gives the seed's stalls of a few hundred milliseconds about every
// 2 s. It cannot reach a server firedrill did not start (--dsn): no
// library can be preloaded into a running process.
package slowdisk

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// source is the library's C source, compiled at run time.
//
//go:embed lib/slowdisk.c
var source []byte

const (
	// LibraryName is the file Build writes in its directory.
	LibraryName = "firedrill-slowdisk.so"
	// ControlName is the control file's name in a server's data
	// directory: present (with a delay) means the disk is slow.
	ControlName = "firedrill-slowdisk.control"
	// controlEnv names the control file for the library.
	controlEnv = "FIREDRILL_SLOWDISK_CONTROL"
	// installHint tells a user without a C compiler what to do.
	installHint = "install gcc (apt-get install gcc libc6-dev, or run `make setup`)"
)

// Build compiles the library into dir (which must exist and outlive the
// server that loads it; the server's own temp directory is the place)
// and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	compiler, err := findCompiler()
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "firedrill-slowdisk.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("slow disk: write its source: %w", err)
	}
	defer os.Remove(src)
	lib := filepath.Join(dir, LibraryName)
	cmd := exec.CommandContext(ctx, compiler, "-shared", "-fPIC", "-O2", "-o", lib, src, "-ldl", "-lpthread")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("slow disk: compile its library with %s: %w\n%s", compiler, err, bytes.TrimSpace(output.Bytes()))
	}
	// The server may run as another user (db/redis/instance drops root).
	if err := os.Chmod(lib, 0o755); err != nil {
		return "", fmt.Errorf("slow disk: %w", err)
	}
	return lib, nil
}

// findCompiler is the system's C compiler: cc, else gcc.
func findCompiler() (string, error) {
	for _, name := range []string{"cc", "gcc"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("slow disk: no C compiler (cc or gcc) on PATH to build its library: " + installHint)
}

// Env is what a server's environment gets so that it loads the library
// and reads its control file. The control file need not exist yet.
func Env(library string, control Control) []string {
	return []string{"LD_PRELOAD=" + library, controlEnv + "=" + string(control)}
}

// Control is the path of the control file of one server; ControlIn
// gives it for a data directory.
type Control string

// ControlIn is the control file of a server whose data directory is dir.
func ControlIn(dir string) Control { return Control(filepath.Join(dir, ControlName)) }

// On makes every sync of the server take delay (at least a microsecond)
// from now on, until Off.
func (c Control) On(delay time.Duration) error {
	us := max(delay.Microseconds(), 1)
	// Written whole and renamed into place: the library reads it at
	// every sync and must never see half a line.
	tmp := string(c) + ".tmp"
	if err := os.WriteFile(tmp, []byte("fsync_delay_us="+strconv.FormatInt(us, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("slow disk: switch on: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // whatever the umask
		return errors.Join(fmt.Errorf("slow disk: switch on: %w", err), os.Remove(tmp))
	}
	if err := os.Rename(tmp, string(c)); err != nil {
		return errors.Join(fmt.Errorf("slow disk: switch on: %w", err), os.Remove(tmp))
	}
	return nil
}

// Off makes the disk fast again; syncs already delayed finish their
// delay. Off on a disk that is not slow does nothing.
func (c Control) Off() error {
	if err := os.Remove(string(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("slow disk: switch off: %w", err)
	}
	return nil
}
