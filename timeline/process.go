package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process identifies the firedrill process writing a run, so that a later
// firedrill can tell a run still going on from one whose process was
// killed (SIGKILL, the OOM killer, a power cut) and left it "running". A
// pid alone is reused; with the boot and the process's start time it is
// not.
type Process struct {
	PID      int    `json:"pid"`
	Hostname string `json:"hostname"`
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id).
	BootID string `json:"boot_id,omitempty"`
	// StartTicks is the process's start time in clock ticks since boot
	// (/proc/PID/stat, field 22).
	StartTicks uint64 `json:"start_ticks,omitempty"`
}

// CurrentProcess describes this process.
func CurrentProcess() *Process {
	p := &Process{PID: os.Getpid(), BootID: bootID()}
	p.Hostname, _ = os.Hostname()
	p.StartTicks, _, _ = startTicks(p.PID)
	return p
}

// Gone reports whether p has certainly ended: it ran on this machine
// (same hostname) and either the machine has rebooted since or no process
// with its pid and start time exists. A process of another machine, or one
// this machine cannot check, is not gone.
func (p *Process) Gone() bool {
	if p == nil || p.PID <= 0 {
		return false
	}
	if host, _ := os.Hostname(); host != p.Hostname {
		return false
	}
	if boot := bootID(); p.BootID != "" && boot != "" && boot != p.BootID {
		return true
	}
	ticks, zombie, err := startTicks(p.PID)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	return zombie || p.StartTicks != 0 && ticks != p.StartTicks
}

// KilledError is the manifest's error of a run whose process ended
// without finishing it.
func KilledError(p *Process) string {
	return fmt.Sprintf("the firedrill process (pid %d) ended without finishing the run: it was killed "+
		"(SIGKILL, out of memory) or the machine stopped; the timeline holds what was measured until then", p.PID)
}

// SettleKilled marks the run in dir as killed when its manifest still
// says running but the process that wrote it is gone (see Process.Gone):
// status StatusKilled, no end time (unknown). It reports whether it did.
// A directory that is not a run, or a run of another status, is left
// alone.
func SettleKilled(dir string) (bool, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	var man Manifest
	if err := json.Unmarshal(b, &man); err != nil || man.Status != StatusRunning || !man.Process.Gone() {
		return false, nil // not ours to judge, or still running
	}
	man.Status, man.Error = StatusKilled, KilledError(man.Process)
	if err := WriteJSON(dir, ManifestFile, &man); err != nil {
		return false, err
	}
	return true, nil
}

// SettleKilledUnder applies SettleKilled to every directory in out (the
// run directories of --out) and returns those it marked killed.
func SettleKilledUnder(out string) ([]string, error) {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", out, err)
	}
	var killed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(out, e.Name())
		marked, err := SettleKilled(dir)
		if err != nil {
			errs = append(errs, err)
		}
		if marked {
			killed = append(killed, dir)
		}
	}
	return killed, errors.Join(errs...)
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// startTicks reads a process's start time from /proc/PID/stat, and
// whether it has exited (a zombie its parent has not reaped yet); an error
// wrapping os.ErrNotExist means there is no such process.
func startTicks(pid int) (ticks uint64, zombie bool, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// or parentheses itself: the fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	ticks, err = strconv.ParseUint(fields[19], 10, 64)
	return ticks, fields[0] == "Z" || fields[0] == "X", err
}
