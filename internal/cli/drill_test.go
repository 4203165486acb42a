package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// TestDrillsList: `firedrill drills` names every drill and its variants.
func TestDrillsList(t *testing.T) {
	t.Parallel()
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"drills"}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	for _, d := range drills.List() {
		if !strings.Contains(out.String(), d.Name+" — "+d.Title) {
			t.Errorf("no line for drill %s:\n%s", d.Name, out)
		}
		for _, v := range d.Variants {
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(v.Name) + ` +` + regexp.QuoteMeta(v.Summary) + `$`).MatchString(out.String()) {
				t.Errorf("no line for %s's variant %s:\n%s", d.Name, v.Name, out)
			}
		}
	}
}

// TestDrillUsage: mistakes exit 1 before any server starts, and say what
// would have been right; --help teaches drills, variants, quick and where
// runs go.
func TestDrillUsage(t *testing.T) {
	t.Parallel()
	var names []string
	for _, d := range drills.List() {
		names = append(names, d.Name)
	}
	stock, err := drills.Get("stock")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"drill", "nope"}, clikit.ExitUsage, `no drill "nope" (drills: ` + strings.Join(names, ", ") + ")"},
		{[]string{"drill", "stock", "--variant", "fixed-9"}, clikit.ExitUsage, "variants: " + strings.Join(stock.VariantNames(), ", ")},
		{[]string{"drill"}, clikit.ExitUsage, "firedrill drill needs NAME"},
		{[]string{"drill", "stock", "--check", "/nonexistent"}, clikit.ExitUsage, "not a drill run directory"},
	}
	for _, tt := range tests {
		env, _, errb := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), tt.args); code != tt.code {
			t.Errorf("%v: exit %d, want %d\n%s", tt.args, code, tt.code, errb)
		}
		if !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tt.args, tt.want, errb)
		}
	}
	env, out, _ := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"drill", "--help"}); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"broken", "fixed", "--quick", "time scale", "runs/<time>-drill-<name>", "99", "--variant", "fresh throwaway server"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

// quickDrillLimit is the Done-when limit for one quick drill.
const quickDrillLimit = 4 * time.Minute

// TestDrillQuick is the Done-when test: every drill's quick version,
// run as `firedrill drill NAME --quick`, finishes within 4 minutes and
// passes its expectations (the expected findings, no unexpected warning
// or critical one, its metrics). It needs the PostgreSQL server binaries
// and about 3 minutes per drill, so -short skips it.
func TestDrillQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every quick drill (minutes each); skipped with -short")
	}
	// About 12 minutes of load that measures throughput on a 2-core
	// machine: not part of `make test` (the packages' own tests run in
	// parallel beside it and would distort it); `make test-drills` runs it.
	if os.Getenv("FIREDRILL_DRILL_TESTS") == "" {
		t.Skip("set FIREDRILL_DRILL_TESTS=1 (make test-drills) to run every quick drill")
	}
	for _, d := range drills.List() {
		t.Run(d.Name, func(t *testing.T) {
			// Not parallel: the drills measure throughput on a 2-core machine.
			out := t.TempDir()
			env, stdout, stderr := clikit.MemoryEnv("")
			start := time.Now()
			code := Main(env, kinds.Registry(), []string{"drill", d.Name, "--quick", "--out", out, "--progress", "30s"})
			elapsed := time.Since(start)
			t.Logf("drill %s --quick: exit %d in %.0f s\n%s", d.Name, code, elapsed.Seconds(), stdout)
			if code != clikit.ExitOK {
				t.Errorf("exit %d, want 0; expectations that failed:\n%s\nstderr:\n%s",
					code, failedLines(stdout.String()), tail(stderr.String(), 40))
			}
			if elapsed > quickDrillLimit {
				t.Errorf("took %v, more than %v", elapsed.Round(time.Second), quickDrillLimit)
			}
			// Every variant left a run directory with its findings.
			dirs, _ := filepath.Glob(filepath.Join(out, "*-drill-"+d.Name+"-quick", "*", "findings.json"))
			if len(dirs) != len(d.Variants) {
				t.Errorf("%d variant run directories with findings.json, want %d", len(dirs), len(d.Variants))
			}
			drillDir := filepath.Dir(filepath.Dir(firstOr(dirs, out)))
			if _, err := os.Stat(filepath.Join(drillDir, "drill.json")); err != nil {
				t.Errorf("no drill.json: %v", err)
			}
			// Each variant wrote its report.html and printed its path;
			// broken and fixed have a compare page.
			for _, v := range d.Variants {
				rep := filepath.Join(drillDir, v.Name, "report.html")
				if _, err := os.Stat(rep); err != nil {
					t.Errorf("variant %s: %v", v.Name, err)
				}
				if !strings.Contains(stdout.String(), "  "+v.Name+": ") || !strings.Contains(stdout.String(), "report.html") {
					t.Errorf("variant %s: its report's path is not printed", v.Name)
				}
				// run.json records the command as typed, not a made-up one.
				if run, err := timeline.Open(filepath.Join(drillDir, v.Name)); err != nil {
					t.Errorf("variant %s: %v", v.Name, err)
				} else if want := []string{"firedrill", "drill", d.Name, "--quick", "--out", out, "--progress", "30s"}; !slices.Equal(run.Manifest.Command, want) {
					t.Errorf("variant %s: run.json command %q, want %q", v.Name, run.Manifest.Command, want)
				}
			}
			if _, err := os.Stat(filepath.Join(drillDir, drillCompareFile)); err != nil {
				t.Errorf("no compare page: %v", err)
			}
			if !strings.Contains(stdout.String(), "compare page (broken against fixed): ") {
				t.Error("the compare page's path is not printed")
			}
		})
	}
}

func failedLines(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FAIL") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func firstOr(list []string, otherwise string) string {
	if len(list) > 0 {
		return list[0]
	}
	return otherwise
}
