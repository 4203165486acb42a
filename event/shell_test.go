package event

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// processGone reports whether pid has exited (a zombie nobody reaped
// counts as gone: it runs nothing).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// readPID waits for a command to write a pid into path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 30*time.Second, "the command writes "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

func TestShell(t *testing.T) {
	t.Parallel()
	env := &Env{ConnString: "host=/nowhere", AllowShell: true}

	t.Run("refused without --allow-shell", func(t *testing.T) {
		t.Parallel()
		ev := mustNew(t, scenario.Event{Name: "sh", Kind: "shell", Config: shellConfig{Command: "touch " + filepath.Join(t.TempDir(), "ran")}})
		refused := &Env{}
		if err := ev.(Checker).Check(refused); err == nil {
			t.Error("Check accepted a shell event without AllowShell")
		}
		_, _, err := ev.Run(t.Context(), refused, nil)
		if err == nil || !strings.Contains(err.Error(), "shell events need --allow-shell") {
			t.Errorf("Run: %v", err)
		}
	})

	t.Run("runs", func(t *testing.T) {
		t.Parallel()
		ev := mustNew(t, scenario.Event{Name: "greet", Kind: "shell", Config: shellConfig{Command: `echo first; echo "$FIREDRILL_EVENT $FIREDRILL_CONNSTRING" >&2`}})
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := "exit status 0: greet host=/nowhere"; outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		if detail["exit_code"] != 0 {
			t.Errorf("detail = %v", detail)
		}
	})

	t.Run("nonzero exit is an error", func(t *testing.T) {
		t.Parallel()
		ev := mustNew(t, scenario.Event{Name: "fail", Kind: "shell", Config: shellConfig{Command: "echo oops; exit 3"}})
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		if err == nil {
			t.Fatalf("Run succeeded: %s", outcome)
		}
		mustContain(t, "error", err.Error(), "exit status 3: oops")
		if detail["exit_code"] != 3 {
			t.Errorf("detail = %v", detail)
		}
	})

	t.Run("killed with its children on cancel", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "sleepy", Kind: "shell", Config: shellConfig{Command: "sleep 600 & echo $! > " + dir + "/child; echo $$ > " + dir + "/shell; wait"}})
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, ev, env)
		waitStarted(t, started, done)
		child, shell := readPID(t, dir+"/child"), readPID(t, dir+"/shell")
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		eventually(t, 10*time.Second, "the shell and its child are gone", func() bool {
			return processGone(child) && processGone(shell)
		})
	})

	// Nothing outlives the event: what the command left in the background
	// is killed when it exits.
	t.Run("background processes are killed at exit", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ev := mustNew(t, scenario.Event{Name: "leaver", Kind: "shell", Config: shellConfig{Command: "sleep 600 & echo $! > " + dir + "/child; echo left"}})
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := "exit status 0: left"; outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		child := readPID(t, dir+"/child")
		eventually(t, 10*time.Second, "the background child is gone", func() bool { return processGone(child) })
	})
}
