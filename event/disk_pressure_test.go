package event

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: size, Path: dir})
		var path string
		outcome, detail, err := ev.Run(t.Context(), &Env{}, func(d map[string]any) {
			path = d["path"].(string)
			if info, err := os.Stat(path); err != nil || info.Size() != 0 {
				t.Errorf("at start, the file %s: %v %v", path, info, err)
			}
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		if filepath.Dir(path) != dir {
			t.Errorf("wrote %s, not under %s", path, dir)
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
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 2 << 20})
		if err := ev.(Checker).Check(env); err != nil {
			t.Fatalf("Check: %v", err)
		}
		var path string
		if _, _, err := ev.Run(t.Context(), env, func(d map[string]any) { path = d["path"].(string) }); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if filepath.Dir(path) != filepath.Dir(inst.DataDir()) {
			t.Errorf("wrote %s, want a file beside %s", path, inst.DataDir())
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", path, err)
		}

		inside := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 1, Path: filepath.Join(inst.DataDir(), "base")})
		if _, _, err := inside.Run(t.Context(), env, nil); err == nil || !strings.Contains(err.Error(), "inside the data directory") {
			t.Errorf("Run with a path in the data directory: %v", err)
		}
	})

	t.Run("needs a path on a non-embedded target", func(t *testing.T) {
		t.Parallel()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 1})
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
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 3 << 20, Rate: 2 << 20, Path: dir})
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
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 1 << 30, Rate: 1 << 20,
			Duration: 300 * time.Millisecond, Path: dir})
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
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 64 << 10,
			Duration: 500 * time.Millisecond, Path: dir})
		var path string
		outcome, detail, err := ev.Run(t.Context(), &Env{}, func(d map[string]any) { path = d["path"].(string) })
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		written := detail["bytes"].(int64)
		// More than one pass unless the first fsync outlasted the duration.
		if written < 64<<10 || written > 64<<10 && !strings.Contains(outcome, " passes over a 64 KiB file") {
			t.Errorf("wrote %d bytes: %s", written, outcome)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", path, err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "dp", Kind: "disk_pressure", Size: 1 << 30, Rate: 1 << 20, Path: dir})
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, ev, &Env{})
		waitStarted(t, started, done)
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.err)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left behind: %v", names)
		}
	})
}
