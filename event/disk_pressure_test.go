package event

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/slowdisk"
	"github.com/firedrill/firedrill/scenario"
)

// dirEntries lists dir's names, failing the test on error.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	return names
}

func TestDiskPressure(t *testing.T) {
	t.Parallel()

	t.Run("writes, fsyncs and removes its file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		size := int64(9<<20 + 123<<10) // a partial last chunk
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: size, Path: dir}})
		var where string
		outcome, detail, err := ev.Run(t.Context(), &Env{}, func(d map[string]any) {
			where = d["dir"].(string)
			// The file has no name, even while it is written.
			if names := dirEntries(t, dir); len(names) != 0 {
				t.Errorf("at start, %s holds %v", dir, names)
			}
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		if where != dir {
			t.Errorf("wrote in %s, not in %s", where, dir)
		}
		// One fsync at 8 MiB, one at the end.
		if detail["bytes"] != size || detail["fsyncs"] != 2 {
			t.Errorf("detail = %v, want bytes %d, fsyncs 2", detail, size)
		}
		mustContain(t, "outcome", outcome, "wrote 9.1 MiB in ", ", 2 fsyncs, slowest fsync ")
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})

	t.Run("beside the embedded server's data directory", func(t *testing.T) {
		t.Parallel()
		inst := startServer(t)
		env := envFor(inst)
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 2 << 20}})
		if err := ev.(Checker).Check(env); err != nil {
			t.Fatalf("Check: %v", err)
		}
		var where string
		before := dirEntries(t, filepath.Dir(inst.DataDir()))
		if _, _, err := ev.Run(t.Context(), env, func(d map[string]any) { where = d["dir"].(string) }); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if where != filepath.Dir(inst.DataDir()) {
			t.Errorf("wrote in %s, want beside %s", where, inst.DataDir())
		}
		if after := dirEntries(t, where); len(after) != len(before) {
			t.Errorf("%s held %v before, %v after", where, before, after)
		}

		inside := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 1, Path: filepath.Join(inst.DataDir(), "base")}})
		if _, _, err := inside.Run(t.Context(), env, nil); err == nil || !strings.Contains(err.Error(), "inside the data directory") {
			t.Errorf("Run with a path in the data directory: %v", err)
		}
	})

	t.Run("needs a path on a non-embedded target", func(t *testing.T) {
		t.Parallel()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 1}})
		_, _, err := ev.Run(t.Context(), &Env{ConnString: "host=elsewhere"}, nil)
		if err == nil || !strings.Contains(err.Error(), "disk_pressure needs path: on a non-embedded target") {
			t.Errorf("Run: %v", err)
		}
	})

	// Timing is only bounded from below, which pacing guarantees however
	// slow the machine is: the third MiB is not due before 1 s at 2 MiB/s.
	t.Run("paced to the rate", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 3 << 20, Rate: 2 << 20, Path: dir}})
		begin := time.Now()
		_, detail, err := ev.Run(t.Context(), &Env{}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if elapsed := time.Since(begin); elapsed < 900*time.Millisecond {
			t.Errorf("3 MiB at 2 MiB/s took %s", elapsed)
		}
		if detail["bytes"] != int64(3<<20) {
			t.Errorf("detail = %v, want bytes %d", detail, 3<<20)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})

	t.Run("the duration ends before the size", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 1 << 30, Rate: 1 << 20,
			Duration: 300 * time.Millisecond, Path: dir}})
		outcome, detail, err := ev.Run(t.Context(), &Env{}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		if written := detail["bytes"].(int64); written <= 0 || written >= 1<<30 {
			t.Errorf("wrote %d bytes", written)
		}
		mustContain(t, "outcome", outcome, "; the duration ended before 1 GiB")
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})

	t.Run("rewrites the file until the duration ends", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 64 << 10,
			Duration: 500 * time.Millisecond, Path: dir}})
		outcome, detail, err := ev.Run(t.Context(), &Env{}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		written := detail["bytes"].(int64)
		// More than one pass unless the first fsync outlasted the duration.
		if written < 64<<10 || written > 64<<10 && !strings.Contains(outcome, " passes over a 64 KiB file") {
			t.Errorf("wrote %d bytes: %s", written, outcome)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 1 << 30, Rate: 1 << 20, Path: dir}})
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, ev, &Env{})
		waitStarted(t, started, done)
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})
}

// The child process of TestDiskPressureKilled: it runs a disk_pressure
// event in the directory the parent names and waits to be killed.
func TestDiskPressureKilledChild(t *testing.T) {
	dir := os.Getenv("FIREDRILL_TEST_DISK_PRESSURE_DIR")
	if dir == "" {
		t.Skip("run by TestDiskPressureKilled")
	}
	ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 16 << 20, Rate: 8 << 20,
		Duration: time.Minute, Path: dir}})
	_, _, err := ev.Run(t.Context(), &Env{}, func(map[string]any) { fmt.Println("started") })
	t.Fatalf("Run returned before the kill: %v", err)
}

// A firedrill killed with SIGKILL during a disk_pressure event runs no
// cleanup: the space it took must come back anyway, and no file may be
// left in the directory.
func TestDiskPressureKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskPressureKilledChild$", "-test.v")
	cmd.Env = append(os.Environ(), "FIREDRILL_TEST_DISK_PRESSURE_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "started" {
	}

	// The child's file: open, unnamed, in dir, and filling the disk.
	fdDir := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
	var held string
	deadline := time.Now().Add(15 * time.Second)
	for held == "" && time.Now().Before(deadline) {
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			target, _ := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if !strings.HasPrefix(target, dir+"/") || !strings.HasSuffix(target, "(deleted)") {
				continue
			}
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(fdDir, fd.Name()), &st); err == nil && st.Blocks*512 >= 4<<20 {
				held = target
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if held == "" {
		t.Fatalf("the child holds no unlinked file of 4 MiB or more in %s", dir)
	}
	t.Logf("the child writes %s", held)
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("while writing, %s holds %v", dir, names)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("after SIGKILL, left behind: %v", names)
	}
}

// The slow mode switches the server's slow disk on while it runs (the
// control file holds the delay) and off when it ends or is cancelled; the
// library's effect on a real server is proven in internal/slowdisk.
func TestDiskPressureSlow(t *testing.T) {
	t.Parallel()

	slowEvent := func(dir string, duration time.Duration) Event {
		return mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Config: diskPressureConfig{Size: 1 << 20, Rate: 1 << 20,
			Duration: duration, Path: dir, Mode: modeSlow, FsyncDelay: 2500 * time.Millisecond}})
	}

	t.Run("on while it runs, off after", func(t *testing.T) {
		t.Parallel()
		dir, dataDir := t.TempDir(), t.TempDir()
		control := slowdisk.ControlIn(dataDir)
		var during string
		outcome, detail, err := slowEvent(dir, 300*time.Millisecond).Run(t.Context(), &Env{SlowDisk: control}, func(map[string]any) {
			text, err := os.ReadFile(string(control))
			if err != nil {
				t.Errorf("at start, the slow disk is not on: %v", err)
			}
			during = string(text)
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		if during != "fsync_delay_us=2500000\n" {
			t.Errorf("the control file held %q while the event ran", during)
		}
		if _, err := os.Stat(string(control)); !os.IsNotExist(err) {
			t.Errorf("the slow disk is still on after the event: %v", err)
		}
		if detail["fsync_delay_ms"] != int64(2500) || detail["mode"] != "slow" {
			t.Errorf("detail = %v", detail)
		}
		mustContain(t, "outcome", outcome, "; slow disk: every fsync of the server took 2.5 s more")
		if names := dirEntries(t, dataDir); len(names) != 0 {
			t.Errorf("left in the data directory: %v", names)
		}
	})

	t.Run("off after a cancel", func(t *testing.T) {
		t.Parallel()
		dir, dataDir := t.TempDir(), t.TempDir()
		control := slowdisk.ControlIn(dataDir)
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, slowEvent(dir, time.Minute), &Env{SlowDisk: control})
		waitStarted(t, started, done)
		if _, err := os.Stat(string(control)); err != nil {
			t.Errorf("the slow disk is not on: %v", err)
		}
		cancel()
		if result := waitDone(t, done, 15*time.Second); !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		if names := dirEntries(t, dataDir); len(names) != 0 {
			t.Errorf("left in the data directory: %v", names)
		}
	})

	// A server firedrill did not start cannot load the library: the
	// event writes its file as in mode write and says so.
	t.Run("no slow disk on a server without the library", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		outcome, detail, err := slowEvent(dir, 0).Run(t.Context(), &Env{ConnString: "redis://elsewhere:6379"}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if detail["bytes"] != int64(1<<20) || detail["slow_disk"] != "unavailable" {
			t.Errorf("detail = %v", detail)
		}
		mustContain(t, "outcome", outcome, "; no slow disk: only a server firedrill starts with its slow-disk library can have one")
	})
}

func TestWantsSlowDisk(t *testing.T) {
	t.Parallel()
	slow := scenario.Event{Kind: "disk_pressure", Config: diskPressureConfig{Size: 1, Mode: modeSlow}}
	write := scenario.Event{Kind: "disk_pressure", Config: diskPressureConfig{Size: 1}}
	shell := scenario.Event{Kind: "shell", Config: shellConfig{Command: "true"}}
	if WantsSlowDisk([]scenario.Event{write, shell}) {
		t.Error("WantsSlowDisk without a slow disk_pressure event")
	}
	if !WantsSlowDisk([]scenario.Event{shell, slow}) {
		t.Error("not WantsSlowDisk with a slow disk_pressure event")
	}
}
