package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// memHelperEnv makes the test binary run firedrill and then print its own
// peak resident memory (see TestMemoryHelperProcess).
const memHelperEnv = "FIREDRILL_MEMORY_TEST_ARGS"

// TestMemoryHelperProcess is not a test: in a child process it runs Main
// with the arguments from the environment, prints the process's peak
// resident set size (VmHWM) on stderr and exits with Main's code.
func TestMemoryHelperProcess(t *testing.T) {
	args := os.Getenv(memHelperEnv)
	if args == "" {
		t.Skip("helper process for the memory tests")
	}
	code := Main(clikit.OSEnv(), kinds.Registry(), strings.Split(args, "\x1f"))
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading /proc/self/status:", err)
		os.Exit(3)
	}
	if m := regexp.MustCompile(`(?m)^VmHWM:\s+\d+ kB$`).Find(status); m != nil {
		fmt.Fprintf(os.Stderr, "\n%s\n", m)
	}
	os.Exit(code)
}

// peakRSS runs firedrill with args in a child process and returns its
// peak resident memory in MB with its output.
func peakRSS(t *testing.T, tmp string, args ...string) (float64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryHelperProcess$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), memHelperEnv+"="+strings.Join(args, "\x1f"), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("firedrill %s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 60))
	}
	m := regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the child printed no VmHWM:\n%s", tail(out.String(), 60))
	}
	kb, _ := strconv.Atoi(m[1])
	return float64(kb) / 1024, out.String()
}

// longScript writes a script of n commands: \set and a query in turn, so
// that a transaction takes about a second and every command is measured.
func longScript(t *testing.T, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n/2; i++ {
		fmt.Fprintf(&b, "\\set v%d random(1, 1000)\nSELECT :v%d + %d;\n", i%50, i%50, i)
	}
	path := filepath.Join(dir, "long.sql")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// maxLongScriptRSS is the bound issue 14 sets for a 100,000-command script;
// it used to take ~570 kB a command (57 GB: killed by the kernel).
const maxLongScriptRSS = 200 // MB

// maxLongRunRSS is the same bound for `run`, whose load phase is close to
// pgbench -r's and whose writing and diagnosing of the run (summary.json
// streamed, the rules parsing only scripts they can conclude from) now
// stays below it: 133–160 MB measured on a busy 2-core machine.
const maxLongRunRSS = maxLongScriptRSS

// A script of 100,000 commands runs in bounded memory, in a scenario run
// (per-command statistics are always kept) and in pgbench -r, and every
// command's statistics still come out.
func TestLongScriptMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory; make test-memory measures it without")
	}
	const commands = 100_000
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	dir := t.TempDir()
	script := longScript(t, dir, commands)

	t.Run("run", func(t *testing.T) {
		sc := filepath.Join(dir, "long.yaml")
		os.WriteFile(sc, []byte(fmt.Sprintf(`name: long-script
target: {dsn: %q}
duration: 4s
workloads:
  - name: long
    clients: 2
    scripts: [{file: long.sql}]
`, inst.ConnString())), 0o644)
		runs := filepath.Join(dir, "runs")
		start := time.Now()
		mb, out := peakRSS(t, privateTmp(t), "run", sc, "--out", runs)
		t.Logf("run of %d commands: peak RSS %.0f MB, %v", commands, mb, time.Since(start).Round(time.Second))
		if mb > maxLongRunRSS {
			t.Errorf("run of a %d-command script peaked at %.0f MB of memory, want < %d MB", commands, mb, maxLongRunRSS)
		}
		if !strings.Contains(out, "per-command statistics cost memory") {
			t.Errorf("run did not warn about the long script:\n%s", tail(out, 40))
		}
		dirs, _ := filepath.Glob(filepath.Join(runs, "*"))
		if len(dirs) != 1 {
			t.Fatalf("run directories: %v", dirs)
		}
		b, err := os.ReadFile(filepath.Join(dirs[0], timeline.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var sum timeline.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		cmds := sum.Workloads[0].Scripts[0].Commands
		if len(cmds) != commands {
			t.Fatalf("summary has %d commands, want %d", len(cmds), commands)
		}
		if c := cmds[1]; c.Count == 0 || c.LatencyPct.P50 <= 0 || c.LatencyPct.Max < c.LatencyPct.P50 {
			t.Errorf("the first query's statistics are empty or inconsistent: %+v", c)
		}
		// The page lists the costliest commands, not 100,000 rows.
		html, err := os.ReadFile(filepath.Join(dirs[0], timeline.ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(html) > 5<<20 || !strings.Contains(string(html), "more commands with less time spent in them are not listed") {
			t.Errorf("report.html is %d bytes and does not say it left commands out", len(html))
		}
	})

	t.Run("pgbench -r", func(t *testing.T) {
		start := time.Now()
		mb, out := peakRSS(t, privateTmp(t), "pgbench", "-n", "-r", "-c", "2", "-T", "4", "-f", script,
			"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User(), inst.Database())
		t.Logf("pgbench -r of %d commands: peak RSS %.0f MB, %v", commands, mb, time.Since(start).Round(time.Second))
		if mb > maxLongScriptRSS {
			t.Errorf("pgbench -r of a %d-command script peaked at %.0f MB of memory, want < %d MB", commands, mb, maxLongScriptRSS)
		}
		// Commands that ran print a mean latency and percentiles.
		if !regexp.MustCompile(`(?m)^\s+\d+\.\d{3}\s+0\s+SELECT :v0 \+ 0;$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^(\s+\d+\.\d{3}){5}\s+SELECT :v0 \+ 0;$`).MatchString(out) {
			t.Errorf("no per-command latency or percentiles for the first query:\n%s", tail(out, 60))
		}
	})
}
