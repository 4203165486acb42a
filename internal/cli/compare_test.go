package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
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
	code := Main(env, []string{"compare", compareRunBase, compareRunSlow, "--json", jsonPath, "--warmup", "5s", "--min-change", "5%"})
	if code != clikit.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"A: " + compareRunBase, "workload oltp: ", "changed: + SELECT pg_sleep(0.002);", "  tps ", "slower, p "} {
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
			} `json:"metrics"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if doc.Format != "firedrill.compare/v1" || doc.Options.Warmup != 5 || doc.Options.MinChange != 0.05 || len(doc.Workloads) != 1 || len(doc.Workloads[0].Metrics) == 0 ||
		!strings.Contains(out.String(), doc.Workloads[0].Metrics[0].Verdict) {
		t.Errorf("--json document: %s", b)
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
		if code := Main(env, c.args); code != clikit.ExitUsage || !strings.Contains(errb.String(), c.want) {
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
