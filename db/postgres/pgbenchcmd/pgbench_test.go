package pgbenchcmd_test

// The tests run firedrill pgbench as the user does, through the command
// line that the PostgreSQL backend registers it with.

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/db/postgres/pgbenchcmd"
	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// TestPgbenchEmbedded runs the whole command on an embedded server: it must
// print pgbench's summary plus percentiles, write valid JSON, and remove
// the server afterwards.
func TestPgbenchEmbedded(t *testing.T) {
	t.Parallel()
	env, out, errb := clikit.MemoryEnv("")
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	code := cli.Main(env, kinds.Registry(), []string{"pgbench", "-S", "-c", "2", "-t", "25", "-r", "-M", "prepared", "--json", jsonPath})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	for _, want := range []string{
		"transaction type: <builtin: select only>\n",
		"query mode: prepared\n",
		"number of clients: 2\n",
		"number of transactions actually processed: 50/50\n",
		"number of failed transactions: 0 (0.000%)\n",
		"tps = ",
		"statement latencies in milliseconds and failures:\n",
		"SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
		"latency percentiles: p50 = ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	var doc pgbenchcmd.JSON
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b)
	}
	if doc.Schema != "firedrill.pgbench/v1" || doc.Totals.Transactions != 50 || len(doc.Scripts) != 1 || len(doc.Scripts[0].Commands) != 2 {
		t.Errorf("unexpected JSON: %+v", doc)
	}
	if p := doc.Totals.Percentiles; !(p.P50 > 0 && p.P50 <= p.P99 && p.P99 <= p.Max) {
		t.Errorf("percentiles out of order: %+v", p)
	}
	// The server's directory, as its start message names it, must be gone.
	m := regexp.MustCompile(`socket in (/\S+?)[,)]`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no start message naming the server directory:\n%s", errb)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("embedded server directory left behind: %s (%v)", m[1], err)
	}
}

// TestPgbenchBadScript: a script error names file:line:col and starts no
// server.
func TestPgbenchBadScript(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("\\set a 1\n\\set b 2\n\\set c (1 + \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, out, errb := clikit.MemoryEnv("")
	code := cli.Main(env, kinds.Registry(), []string{"pgbench", "-f", bad, "-t", "1"})
	if code != clikit.ExitUsage {
		t.Fatalf("exit %d, want %d\n%s%s", code, clikit.ExitUsage, out, errb)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(bad) + `:3:\d+: `).MatchString(errb.String()) {
		t.Errorf("error does not name %s:3:col:\n%s", bad, errb)
	}
	if strings.Contains(errb.String(), "started PostgreSQL") {
		t.Errorf("a server was started for a bad script:\n%s", errb)
	}
}

// TestPgbenchRefused: a connection refused names host:port and says what to do.
func TestPgbenchRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	env, out, errb := clikit.MemoryEnv("")
	code := cli.Main(env, kinds.Registry(), []string{"pgbench", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-S", "-t", "1", "postgres"})
	if code != clikit.ExitUsage {
		t.Fatalf("exit %d, want %d\n%s%s", code, clikit.ExitUsage, out, errb)
	}
	if !strings.Contains(errb.String(), "127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(errb.String(), "Is the server running") {
		t.Errorf("error does not name the address and a hint:\n%s", errb)
	}
}

var digits = regexp.MustCompile(`[0-9.]+`)

// summaryKeys returns the labels of pgbench's summary lines ("tps",
// "latency average" …), the part a scraper matches on.
func summaryKeys(s string) []string {
	var keys []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "pgbench (") || strings.HasPrefix(line, "latency percentiles") || line == "" {
			continue
		}
		if strings.HasPrefix(line, "   ") && !strings.HasPrefix(line, "   -") {
			// a per-command line: its columns are the key; their widths
			// move with the figures (3.230 or 13.145 ms), so runs of
			// spaces count as one
			keys = append(keys, strings.Join(strings.Fields(digits.ReplaceAllString(line, "#")), " "))
			continue
		}
		if i := strings.IndexAny(line, ":="); i > 0 {
			keys = append(keys, digits.ReplaceAllString(strings.TrimSpace(line[:i]), "#"))
		}
	}
	return keys
}

// TestPgbenchSummaryMatchesPgbench runs the real pgbench and firedrill with
// the same options on one server: every summary line pgbench prints must
// be printed by firedrill too, in the same order.
func TestPgbenchSummaryMatchesPgbench(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	pgbench := filepath.Join(inst.BinDir(), "pgbench")
	conn := []string{"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User()}
	if out, err := exec.Command(pgbench, append(append([]string{"-i", "-q"}, conn...), "postgres")...).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"-c", "2", "-t", "20"},
		{"-c", "2", "-t", "20", "-r", "-b", "simple-update@2", "-b", "select-only@1", "--max-tries", "3", "--failures-detailed"},
		{"-c", "2", "-T", "1", "-R", "200", "-L", "50", "-S", "-P", "1"},
	} {
		full := append(append(append([]string{}, args...), conn...), "postgres")
		want, err := exec.Command(pgbench, full...).Output()
		if err != nil {
			t.Fatalf("pgbench %v: %v", args, err)
		}
		env, out, errb := clikit.MemoryEnv("")
		if code := cli.Main(env, kinds.Registry(), append([]string{"pgbench"}, full...)); code != 0 {
			t.Fatalf("firedrill pgbench %v: exit %d\n%s", args, code, errb)
		}
		wk, gk := summaryKeys(string(want)), summaryKeys(out.String())
		if len(gk) < len(wk) {
			t.Errorf("%v: firedrill prints fewer summary lines\npgbench:\n%s\nfiredrill:\n%s", args, want, out)
			continue
		}
		for i := range wk {
			if wk[i] != gk[i] {
				t.Errorf("%v: line %d is %q, pgbench prints %q\npgbench:\n%s\nfiredrill:\n%s", args, i, gk[i], wk[i], want, out)
				break
			}
		}
	}
}
