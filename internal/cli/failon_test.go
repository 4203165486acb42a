package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// --fail-on takes warning or critical and picks the findings that
// severe or worse; without it nothing fails.
func TestFailOnFlag(t *testing.T) {
	t.Parallel()
	findings := []diagnose.Finding{
		{Rule: "a", Severity: diagnose.Info},
		{Rule: "b", Severity: diagnose.Warning},
		{Rule: "c", Severity: diagnose.Critical},
	}
	for _, c := range []struct {
		flag string
		want []string // rules that fail
	}{
		{"", nil},                       // no flag: nothing fails
		{"warning", []string{"b", "c"}}, // warning and worse
		{"CRITICAL", []string{"c"}},     // case does not matter
		{" critical ", []string{"c"}},   // nor spaces
	} {
		var f failOnFlag
		if c.flag != "" {
			if err := f.Set(c.flag); err != nil {
				t.Fatalf("--fail-on %q: %v", c.flag, err)
			}
		}
		var got []string
		for _, fd := range f.failing(findings) {
			got = append(got, fd.Rule)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("--fail-on %q: %v, want %v", c.flag, got, c.want)
		}
		err := f.check("", findings)
		var ee *clikit.ExitError
		if (err != nil) != (len(c.want) > 0) || (err != nil && (!errors.As(err, &ee) || ee.Code != ExitFindings)) {
			t.Errorf("--fail-on %q: check %v", c.flag, err)
		}
	}
	for _, bad := range []string{"info", "error", ""} {
		var f failOnFlag
		if err := f.Set(bad); err == nil {
			t.Errorf("--fail-on %q accepted", bad)
		}
	}
}

// A real run whose event holds a row it updated, idle in transaction
// after taking a transaction id: the idle-in-transaction finding names
// the event's UPDATE, not the id probe the session ran last; the start
// of the event prints in words; and --fail-on warning turns the
// finding into exit 99, naming the rule.
func TestRunFailOnIdleBlocker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "idle.yaml")
	if err := os.WriteFile(sc, []byte(`name: idle
duration: 9s
sample_interval: 500ms
setup:
  sql: ["CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)"]
workloads:
  - name: w
    clients: 2
    scripts: [{inline: "UPDATE hot SET n = n + 1 WHERE id = 1;"}]
events:
  - {name: forgotten, kind: hold_transaction, at: 1s, duration: 6s, xid: true, sql: "UPDATE hot SET n = n WHERE id = 1"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", sc, "--out", filepath.Join(dir, "runs"), "--progress", "30s", "--fail-on", "warning"}
	env, stdout, stderr := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), args)
	out := stdout.String() + stderr.String()
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d (--fail-on warning, an idle-in-transaction blocker)\n%s", code, ExitFindings, tail(out, 40))
	}
	if !strings.Contains(stderr.String(), "--fail-on warning: ") || !strings.Contains(stderr.String(), "idle-in-transaction-blocker") {
		t.Errorf("the error does not name --fail-on and the rule:\n%s", tail(stderr.String(), 10))
	}
	var headline string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.Contains(line, "A session idle in transaction heads the lock chain") {
			headline = line
		}
	}
	if !strings.Contains(headline, "ran `UPDATE hot SET n = n WHERE id = 1`") || strings.Contains(headline, "txid_current") {
		t.Errorf("the idle-in-transaction finding should name the event's UPDATE: %q\n%s", headline, tail(stdout.String(), 40))
	}
	if strings.Contains(stdout.String(), `started {"`) || !strings.Contains(stdout.String(), "started: pid ") {
		t.Errorf("the event's start should print in words:\n%s", tail(stdout.String(), 40))
	}
}

// On a drill --fail-on counts a variant's findings its expectations do
// not require: the broken variant's point does not fail the drill, an
// allowed or unexpected finding that severe does; an expectation that
// failed keeps its code and gains the findings in its message.
func TestDrillFailOnVariants(t *testing.T) {
	t.Parallel()
	broken := variantRun{variant: drills.Variant{Name: "broken", Expect: drills.Expect{Findings: []string{"aof-fsync-stall"}}},
		findings: []diagnose.Finding{{Rule: "aof-fsync-stall", Severity: diagnose.Critical}}}
	fixed := variantRun{variant: drills.Variant{Name: "fixed", Expect: drills.Expect{Allow: []drills.Allowance{{Rule: "slow-commands", Why: "the load"}}}},
		findings: []diagnose.Finding{{Rule: "slow-commands", Severity: diagnose.Warning}, {Rule: "x", Severity: diagnose.Info}}}
	code := func(err error) int {
		var ee *clikit.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.Code
		}
		return -1
	}
	for _, c := range []struct {
		name     string
		severity string
		runs     []variantRun
		outcome  error
		wantCode int
		wantText string
	}{
		{"the broken variant's required finding", "critical", []variantRun{broken}, nil, 0, ""},
		{"no flag", "", []variantRun{broken, fixed}, nil, 0, ""},
		{"an allowed warning fails --fail-on warning", "warning", []variantRun{broken, fixed}, nil, ExitFindings, "variant fixed: 1 finding(s): WARNING slow-commands"},
		{"but not --fail-on critical", "critical", []variantRun{broken, fixed}, nil, 0, ""},
		{"a failed expectation keeps its code", "warning", []variantRun{fixed}, clikit.WithCode(ExitExpectationFailed, errors.New("drill aof: 1 expectation(s) failed")),
			ExitExpectationFailed, "1 expectation(s) failed; --fail-on warning: variant fixed"},
	} {
		o := &drillOpts{}
		if c.severity != "" {
			if err := o.failOn.Set(c.severity); err != nil {
				t.Fatal(err)
			}
		}
		err := o.failOnVariants(c.outcome, c.runs)
		if code(err) != c.wantCode || (c.wantText != "" && !strings.Contains(err.Error(), c.wantText)) {
			t.Errorf("%s: %v (exit %d), want exit %d and %q", c.name, err, code(err), c.wantCode, c.wantText)
		}
	}
}
