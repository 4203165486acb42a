package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// validateScenario has a shell event and a restarting settings event:
// what run refuses without --allow-shell, and on a given server.
const validateScenario = `name: refused
duration: 5s
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {kind: shell, at: 1s, command: "true"}
  - {kind: settings, at: 2s, settings: {shared_buffers: 64MB}, restart: true}
`

// validate and run judge the events alike: each refusal with
// file:line:col, exit code 1, and run refuses before it makes a run
// directory or contacts the server.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "refused.yaml")
	if err := os.WriteFile(path, []byte(validateScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: a run that got as far as connecting
	// would fail with another error.
	dsn := "postgres://nobody@127.0.0.1:1/db"
	shell := path + ":8:5: shell shell-1: shell events need --allow-shell"
	restart := path + ":9:5: settings settings-2: restart needs the embedded server"
	tests := []struct {
		args []string
		want []string // refusals; none means valid
	}{
		{args: []string{"validate", path}, want: []string{shell}},
		{args: []string{"validate", "--allow-shell", path}},
		{args: []string{"validate", "--dsn", dsn, path}, want: []string{shell, restart}},
		{args: []string{"validate", "--dsn", dsn, "--allow-shell", path}, want: []string{restart}},
		{args: []string{"run", "--out", filepath.Join(dir, "runs"), path}, want: []string{shell}},
		{args: []string{"run", "--out", filepath.Join(dir, "runs"), "--dsn", dsn, "--allow-shell", path}, want: []string{restart}},
	}
	for _, tt := range tests {
		env, stdout, stderr := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), tt.args)
		if len(tt.want) == 0 {
			if code != 0 || !strings.Contains(stdout.String(), path+": ok") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", tt.args, code, stdout, stderr)
			}
			continue
		}
		if code != clikit.ExitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, clikit.ExitUsage)
		}
		for _, want := range tt.want {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%v: stderr %q lacks %q", tt.args, stderr, want)
			}
		}
		if got := strings.Count(stderr.String(), path+":"); got != len(tt.want) {
			t.Errorf("%v: %d refusals, want %d: %q", tt.args, got, len(tt.want), stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("a refused run made its output directory (%v)", err)
	}
}

// validate reads each workload's scripts in its target's dialect, whichever
// way the kind is given, and tells a script's problem at its
// file:line:col; run refuses the same scenario before it makes a run
// directory.
func TestValidateParsesInTheTargetsDialect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unterminated := write("unterminated.redis", "GET firedrill:a\nSET firedrill:b \"open\n")
	junk := write("junk.redis", "PING\n\x01\xff\xfe\x7fGET k\n")
	nul := write("nul.redis", "PING\nSET firedrill:k \x00\n")
	write("flush.redis", "SET firedrill:k 1\nFLUSHDB\n")
	write("stock.sql", "SELECT `a` FROM stock WHERE b = 'it\\'s \\n'; # don't \\o/\nSELECT 1; -- fine\n")
	scenario := func(name, target, scripts string) string {
		// target after the workloads: the kind is known last.
		return write(name, "name: d\nduration: 1s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: ["+scripts+"]\n"+target)
	}
	redisKind := scenario("redis-kind.yaml", "target: {kind: redis}\n", "unterminated.redis")
	redisDSN := scenario("redis-dsn.yaml", "target: {dsn: \"redis://127.0.0.1:1/0\"}\n", "junk.redis")
	redisNone := scenario("redis-none.yaml", "", "unterminated.redis")
	redisNul := scenario("redis-nul.yaml", "", "nul.redis")
	inline := scenario("redis-inline.yaml", "target: {kind: redis}\n", `{inline: 'SET firedrill:k "v'}`)
	mysqlKind := scenario("mysql-kind.yaml", "target: {kind: mariadb}\n", "stock.sql")
	mysqlNone := scenario("mysql-none.yaml", "", "stock.sql")
	flush := scenario("flush.yaml", "target: {kind: redis}\n", "flush.redis")
	const redisURL, mysqlURL = "redis://127.0.0.1:1/0", "mysql://app@127.0.0.1:1/shop"
	unterminatedAt := unterminated + ":2:17: unterminated quoted string"
	tests := []struct {
		args []string
		want string // the refusal; "" = valid
	}{
		{[]string{"validate", redisKind}, unterminatedAt},
		{[]string{"validate", "--dsn", redisURL, redisKind}, unterminatedAt},
		{[]string{"validate", "--dsn", redisURL, redisNone}, unterminatedAt},
		{[]string{"validate", redisDSN}, junk + `:2:1: "\x01\xff\xfe\x7fGET" is not a Redis command name`},
		{[]string{"validate", "--dsn", "rediss://127.0.0.1:1/0", redisNul}, nul + ":2:17: a NUL byte"},
		{[]string{"validate", inline}, inline + ":6:41: unterminated quoted string"},
		{[]string{"run", "--out", filepath.Join(dir, "runs"), "--dsn", redisURL, redisNone}, unterminatedAt},
		// A PostgreSQL target reads the Redis script as SQL, which pgbench
		// takes to its end: firedrill:a reads a variable a, which nothing
		// sets (a Redis reading would stop at the open quote).
		{[]string{"validate", redisNone}, unterminated + ":1:1: variable :a is read but never set"},
		// MySQL's backticks, backslash escapes and # comments.
		{[]string{"validate", mysqlKind}, ""},
		{[]string{"validate", "--dsn", mysqlURL, mysqlNone}, ""},
		{[]string{"validate", "--dsn", "mariadb://app@127.0.0.1:1/shop", mysqlKind}, ""},
		{[]string{"validate", mysqlNone}, filepath.Join(dir, "stock.sql") + ":1:40: invalid command \\n';"},
		// FLUSHDB is a Redis command: the dialect reads it, and an
		// embedded server's run may flush its own database.
		{[]string{"validate", flush}, ""},
		// On a given server it reaches past firedrill's keys: validate
		// says so without the server, as run would before any load.
		{[]string{"validate", "--dsn", redisURL, flush}, filepath.Join(dir, "flush.redis") + ":2:1: FLUSHDB"},
	}
	for _, tt := range tests {
		env, stdout, stderr := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), tt.args)
		if tt.want == "" {
			if code != 0 || !strings.Contains(stdout.String(), ": ok") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", tt.args, code, stdout, stderr)
			}
			continue
		}
		if code != clikit.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("a refused run made its output directory (%v)", err)
	}
}

// fiveMistakes has five different mistakes, each found by another check
// (the YAML's keys, the Redis dialect's commands, the scripts'
// variables, the events, the thresholds by the target's kind), and, with
// --dsn, a sixth (target.settings on a given server).
const fiveMistakes = `name: five
target:
  kind: redis
  settings: {maxmemory: 100mb}
duration: 10s
workloads:
  - name: cache
    clients: 2
    clientz: 3
    scripts:
      - inline: |
          \set id random(1, 100)
          SETT firedrill:k::id 1
          GET firedrill:k::idd
events:
  - name: sh
    kind: shell
    at: 2s
    command: "true"
thresholds:
  db.deadlocks: "< 1"
`

// validate lists every mistake of a file in one run, in file order: not
// the first check's alone, fix, run again.
func TestValidateOnePass(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "five.yaml")
	if err := os.WriteFile(path, []byte(fiveMistakes), 0o600); err != nil {
		t.Fatal(err)
	}
	five := []string{
		path + `:9:5: unknown key "clientz"; did you mean "clients"?`,
		path + `:13:11: unknown command "SETT"; did you mean SET?`,
		path + `:14:11: variable :idd is read but never set; did you mean :id?`,
		path + `:16:5: shell sh: shell events need --allow-shell`,
		path + `:21:3: thresholds: metric "db.deadlocks": the target (redis) has no database metrics`,
	}
	settings := path + `:4:13: target.settings apply only to the server firedrill starts, and --dsn gives the server`
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{args: []string{"validate", path}, want: five},
		{args: []string{"validate", "--dsn", "redis://127.0.0.1:1/0", path}, want: append([]string{settings}, five...)},
	} {
		env, stdout, stderr := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), tt.args); code != clikit.ExitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, clikit.ExitUsage)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != len(tt.want) {
			t.Errorf("%v: %d problems, want %d:\n%s", tt.args, len(lines), len(tt.want), stderr)
			continue
		}
		for i, want := range tt.want {
			if !strings.HasPrefix(lines[i], want) {
				t.Errorf("%v: problem %d\n got %s\nwant %s…", tt.args, i+1, lines[i], want)
			}
		}
		if strings.Contains(stdout.String(), "ok") {
			t.Errorf("%v: says ok: %s", tt.args, stdout)
		}
	}
}
