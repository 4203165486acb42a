package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// recordedStockDrill lays the recorded stock runs of diagnose/testdata
// out as a drill run directory: stock-deadlock as broken, stock-sorted
// (the keys sorted, the fixed variant's remedy) as fixed.
func recordedStockDrill(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for variant, rec := range map[string]string{"broken": "stock-deadlock", "fixed": "stock-sorted"} {
		copyTree(t, filepath.Join("..", "..", "diagnose", "testdata", rec), filepath.Join(dir, variant))
	}
	man := `{"drill":"stock","quick":false,"variants":["broken","fixed"],"started":"2026-11-21T17:27:20Z"}`
	if err := os.WriteFile(filepath.Join(dir, drillManifestFile), []byte(man), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDrillOutputRecorded: the drill's output on the recorded stock runs.
// The side-by-side table shows what p99 hid (p99.9 and max in seconds for
// broken), errors and failed connections; a warning an expectation
// allows is marked so in the table and said with its reason in the
// checks; each variant's top finding is printed with its fix.
func TestDrillOutputRecorded(t *testing.T) {
	t.Parallel()
	dir := recordedStockDrill(t)
	env, out, errb := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), []string{"drill", "stock", "--check", dir})
	// The sorted recording predates the commit-bound rule's calibration:
	// fixed's "finding commit-bound reported" fails, and only that.
	if code != ExitExpectationFailed {
		t.Fatalf("exit %d, want %d:\n%s\n%s", code, ExitExpectationFailed, out, errb)
	}
	text := out.String()
	if fails := failedLines(text); strings.Count(fails, "FAIL") != 1 || !strings.Contains(fails, "commit-bound") {
		t.Errorf("failed expectations:\n%s", fails)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^p99, whole run +[0-9.]+ s +[0-9.]+ ms +$`),
		regexp.MustCompile(`(?m)^p99\.9, whole run +[0-9.]+ s +[0-9.]+ ms +$`),
		regexp.MustCompile(`(?m)^max, whole run +[0-9.]+ s +[0-9.]+ ms +$`),
		regexp.MustCompile(`(?m)^errors \(failed tries\) +54 +0 +$`),
		regexp.MustCompile(`(?m)^failed connections +0 +0 +$`),
		regexp.MustCompile(`(?m)^findings: warning +lock-contention \(allowed\) +lock-contention \(allowed\) +$`),
		regexp.MustCompile(`(?m)^  PASS  broken   no other warning or critical finding: none; allowed: lock-contention \(warning, because 40 % of the items come from 100 hot SKUs`),
		regexp.MustCompile(`(?m)^  broken: no report\.html yet`),
		regexp.MustCompile(`(?m)^    CRITICAL deadlock: 55 deadlocks in 40 s: `),
		regexp.MustCompile(`(?m)^    fix: Take stock rows in one global order: sort the keys`),
		regexp.MustCompile(`(?m)^    allowed in fixed: 40 % of the items`),
		regexp.MustCompile(`(?m)^compare page: run 'firedrill compare .*/broken .*/fixed --html FILE'$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("output lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("colour codes on a stdout that is no terminal")
	}
	// --check writes nothing.
	for _, f := range []string{filepath.Join(dir, "broken", timeline.ReportFile), filepath.Join(dir, drillCompareFile)} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("--check wrote %s", f)
		}
	}
}

// TestDrillWritesReports: what a drill writes after its runs, on the
// recorded stock runs: each variant's report.html, then compare.html
// between broken and fixed in the drill's directory, naming the variants
// and linking their reports; the reports section then prints the paths.
func TestDrillWritesReports(t *testing.T) {
	t.Parallel()
	dir := recordedStockDrill(t)
	d, err := drills.Get("stock")
	if err != nil {
		t.Fatal(err)
	}
	var runs []variantRun
	for _, name := range []string{"broken", "fixed"} {
		v, err := d.Variant(name)
		if err != nil {
			t.Fatal(err)
		}
		run, err := timeline.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		findings := diagnoseRun(kinds.Registry(), run)
		rep, err := writeVariantReport(run, findings, presentation(kinds.Registry()))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(rep); err != nil || !bytes.Contains(b, []byte("<html")) {
			t.Errorf("%s: report %s: %v", name, rep, err)
		}
		runs = append(runs, variantRun{variant: v, run: run, findings: findings})
	}
	page, err := writeDrillCompare(dir, runs, presentation(kinds.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	if page != filepath.Join(dir, drillCompareFile) {
		t.Errorf("compare page at %q", page)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Verdict: <span class="side-b">fixed</span> against <span class="side-a">broken</span>`,
		`<a href="broken/report.html">report</a>`,
		`<tr class="better"><td>tps</td>`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
	var out bytes.Buffer
	printVariantReports(&out, runs, false)
	if !strings.Contains(out.String(), "  broken: "+filepath.Join(dir, "broken", timeline.ReportFile)+"\n") {
		t.Errorf("reports section:\n%s", out.String())
	}
	// Only broken and fixed are compared; without both, no page.
	if p, err := writeDrillCompare(t.TempDir(), runs[:1], presentation(kinds.Registry())); p != "" || err != nil {
		t.Errorf("one variant: page %q, %v", p, err)
	}
}

// TestFixLine: a remedy's first sentence, not cut inside `code`, and
// bounded.
func TestFixLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ remedy, want string }{
		{"Add an index. Then vacuum.", "Add an index."},
		{"Run `SELECT 1; SELECT 2;` first; then wait.", "Run `SELECT 1; SELECT 2;` first;"},
		{"No period at all", "No period at all"},
		{"Make it fast (see the index; EXPLAIN it), then size the pool. More.", "Make it fast (see the index; EXPLAIN it), then size the pool."},
		{strings.Repeat("word ", 60) + "end.", strings.TrimSpace(strings.Repeat("word ", 40)) + " …"},
	} {
		if got := fixLine(c.remedy); got != c.want {
			t.Errorf("fixLine(%q) = %q, want %q", c.remedy, got, c.want)
		}
	}
}
