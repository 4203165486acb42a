package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// The recorded runs of report's compare tests.
const (
	compareRunBase = "../../report/testdata/compare/base-1"
	compareRunSlow = "../../report/testdata/compare/slow"
)

func TestCompareCommand(t *testing.T) {
	t.Parallel()
	env, out, errb := clikit.MemoryEnv("")
	jsonPath := filepath.Join(t.TempDir(), "cmp.json")
	htmlPath := filepath.Join(t.TempDir(), "cmp.html")
	code := Main(env, kinds.Registry(), []string{"compare", compareRunBase, compareRunSlow, "--json", jsonPath, "--html", htmlPath, "--warmup", "5s", "--min-change", "5%"})
	if code != clikit.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"A: base-1 — " + compareRunBase, "workload oltp: ", "  script inline-1: 0 command(s) removed, 1 added\n    + SELECT pg_sleep(0.002);", "  tps ", "slower, p ", "verdict (slow vs base-1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format  string `json:"format"`
		Options struct {
			Warmup    float64 `json:"warmup_s"`
			MinChange float64 `json:"min_change"`
		} `json:"options"`
		Workloads []struct {
			Name    string `json:"name"`
			Metrics []struct {
				Metric  string `json:"metric"`
				Verdict string `json:"verdict"`
				Outcome string `json:"outcome"`
			} `json:"metrics"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if doc.Format != "firedrill.compare/v1" || doc.Options.Warmup != 5 || doc.Options.MinChange != 0.05 || len(doc.Workloads) != 1 || len(doc.Workloads[0].Metrics) == 0 ||
		doc.Workloads[0].Metrics[0].Outcome == "" || !strings.Contains(out.String(), doc.Workloads[0].Metrics[0].Outcome+", p") {
		t.Errorf("--json document: %s", b)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Error("colour codes written to a stdout that is no terminal")
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<th class="side-a">base-1</th><th class="side-b">slow</th>`, `<tr class="worse"><td>tps</td>`, `<details class="script"><summary>script inline-1:`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("--html page lacks %q", want)
		}
	}
}

func TestCompareCommandErrors(t *testing.T) {
	t.Parallel()
	notRun := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", compareRunBase}, "firedrill compare needs RUN_B"},
		{[]string{"compare", compareRunBase, notRun}, "not a firedrill run directory"},
		{[]string{"compare", compareRunBase, compareRunSlow, "--warmup", "ten"}, `--warmup "ten"`},
		{[]string{"compare", compareRunBase, compareRunSlow, "--warmup", "100%"}, `--warmup "100%"`},
		{[]string{"compare", compareRunBase, compareRunSlow, "--alpha", "5"}, "--alpha 5"},
		{[]string{"compare", compareRunBase, compareRunSlow, "--min-change", "10"}, `--min-change "10"`},
	} {
		env, _, errb := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), c.args); code != clikit.ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), clikit.ExitUsage, c.want)
		}
	}
}

func TestParseWarmup(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in                string
		seconds, fraction float64
	}{
		{"10%", 0, 0.10},
		{"0%", 0, 0},
		{"15s", 15, 0},
		{"1m30s", 90, 0},
		{"7.5", 7.5, 0},
	} {
		s, f, err := parseWarmup(c.in)
		if err != nil || s != c.seconds || f != c.fraction {
			t.Errorf("parseWarmup(%q) = %v, %v, %v; want %v, %v", c.in, s, f, err, c.seconds, c.fraction)
		}
	}
}

// TestCompareCommandColor: verdicts are coloured on a terminal, and not
// when NO_COLOR is set.
func TestCompareCommandColor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		noColor string
		want    bool
	}{{"", true}, {"1", false}} {
		env, out, errb := clikit.MemoryEnv("")
		env.StdoutTerminal = true
		env.Getenv = func(k string) string {
			if k == "NO_COLOR" {
				return c.noColor
			}
			return ""
		}
		if code := Main(env, kinds.Registry(), []string{"compare", compareRunBase, compareRunSlow, "--warmup", "5s"}); code != clikit.ExitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if got := strings.Contains(out.String(), "\x1b[31mslower, p"); got != c.want {
			t.Errorf("NO_COLOR=%q: red verdict %v, want %v:\n%q", c.noColor, got, c.want, out.String())
		}
	}
}
