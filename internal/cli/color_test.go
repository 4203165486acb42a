package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
)

// paintLine colours verdicts, severities and statuses in the lines report,
// live and drill print, and nothing else.
func TestPaintLine(t *testing.T) {
	t.Parallel()
	red, green, yellow, cyan, dim, bold := "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m", "\x1b[2m", "\x1b[1m"
	tests := []struct {
		line string
		want []string // escape sequence + the word it colours
	}{
		{"  ok   oltp.p99 < 50ms: 12 ms", []string{green + "ok"}},
		{"  FAIL oltp.p99 < 1ms: 28.66 ms", []string{red + "FAIL"}},
		{"  PASS  broken   finding deadlock reported: yes", []string{green + "PASS"}},
		{"  SKIP  fixed    tps ratio: fixed did not run", []string{dim + "SKIP"}},
		{"[CRITICAL] Deadlocks every 2 s  (deadlock, 10–40 s)", []string{red + "[CRITICAL]", bold + "Deadlocks every 2 s", dim + "  (deadlock, 10–40 s)"}},
		{"[WARNING] Lock waits  (lock-contention, 0–6 s)", []string{yellow + "[WARNING]"}},
		{"[INFO] Commits wait for the WAL flush  (commit-bound, 0–6 s)", []string{cyan + "[INFO]"}},
		{"   12.0 s  CRITICAL  Deadlocks — sort the keys.  (deadlock)", []string{red + "CRITICAL"}},
		{"   14.0 s  now WARNING  Lock waits — …  (lock-contention)", []string{yellow + "now WARNING"}},
		{"   20.0 s  resolved: Lock waits  (lock-contention)", []string{green + "resolved:"}},
		{"run oltp: completed (runs/x), PostgreSQL 15", []string{green + "completed"}},
		{"run oltp: degraded (runs/x), PostgreSQL 15", []string{red + "degraded"}},
		{"1 of 2 thresholds failed", []string{red + "1 of 2 thresholds failed"}},
		{"all 9 expectations hold", []string{green + "all 9 expectations hold"}},
	}
	for _, tt := range tests {
		got := paintLine(tt.line)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("paintLine(%q) = %q, want %q in it", tt.line, got, w)
			}
		}
		if plain := strings.NewReplacer(red, "", green, "", yellow, "", cyan, "", dim, "", bold, "", "\x1b[1;31m", "", "\x1b[0m", "").Replace(got); plain != tt.line {
			t.Errorf("paintLine(%q) changed the text: %q", tt.line, plain)
		}
	}
	for _, line := range []string{
		`    "status": "FAIL ",`, // JSON on stdout (--json -)
		"oltp          1506  251.0",
		"  \x1b[32mPASS\x1b[0m  broken   painted by drill itself",
		"ok  this is not indented",
	} {
		if got := paintLine(line); got != line {
			t.Errorf("paintLine(%q) = %q, want it untouched", line, got)
		}
	}
}

// On a terminal (a pty made by script(1)) firedrill's output is coloured;
// piped, with NO_COLOR set or with --no-color it is not.
func TestColorOnATerminalOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed: no pty to test with")
	}
	runDir := "../../report/testdata/compare/base-1"
	run := func(pty bool, extraEnv []string, args ...string) string {
		t.Helper()
		self := "'" + os.Args[0] + "' -test.run='^TestCLIHelperProcess$'"
		var cmd *exec.Cmd
		if pty {
			cmd = exec.Command("script", "-qec", self, "/dev/null")
		} else {
			cmd = exec.Command("sh", "-c", self)
		}
		// The last of a name wins: extraEnv may replace TERM.
		cmd.Env = append(os.Environ(), "TERM=xterm", cliHelperEnv+"="+strings.Join(args, "\x1f"))
		cmd.Env = append(cmd.Env, extraEnv...)
		cmd.Env = withoutEnv(cmd.Env, "NO_COLOR", extraEnv)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "run cmp-base: ") {
			t.Fatalf("%v: no summary:\n%s", args, out)
		}
		return string(out)
	}
	if out := run(true, nil, "report", runDir); !strings.Contains(out, "\x1b[32mcompleted\x1b[0m") {
		t.Errorf("on a terminal, no colour:\n%q", firstLines(out, 3))
	}
	for name, out := range map[string]string{
		"piped":      run(false, nil, "report", runDir),
		"NO_COLOR=1": run(true, []string{"NO_COLOR=1"}, "report", runDir),
		"--no-color": run(true, nil, "report", runDir, "--no-color"),
		"TERM=dumb":  run(true, []string{"TERM=dumb"}, "report", runDir),
	} {
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%s: coloured:\n%q", name, firstLines(out, 3))
		}
	}
}

// withoutEnv drops name from env unless extra sets it, so the test's own
// NO_COLOR does not leak into the children.
func withoutEnv(env []string, name string, extra []string) []string {
	for _, e := range extra {
		if strings.HasPrefix(e, name+"=") {
			return env
		}
	}
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// The colour decision: a terminal, no NO_COLOR, no --no-color; standard
// error decides for itself.
func TestEnvColor(t *testing.T) {
	t.Parallel()
	env, _, _ := clikit.MemoryEnv("")
	env.Getenv = func(string) string { return "" }
	env.StdoutTerminal = true
	if !env.Color() || env.StderrColor() {
		t.Errorf("stdout a terminal, stderr not: Color %v, StderrColor %v", env.Color(), env.StderrColor())
	}
	env.NoColor = true
	if env.Color() {
		t.Error("--no-color: still coloured")
	}
}
