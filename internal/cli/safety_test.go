package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// userServer is a server of "the user's" with their own data in public:
// tables named as pgbench's and as the scenario's, with rows and indexes,
// and a setting of their own in postgresql.auto.conf.
type userServer struct {
	inst  *postgres.Instance
	admin *pgconn.PgConn
}

func startUserServer(t *testing.T) *userServer {
	t.Helper()
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	admin, err := pgconn.Connect(context.Background(), inst.ConnString()+" application_name=test-admin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	u := &userServer{inst: inst, admin: admin}
	u.exec(t, `
CREATE TABLE public.pgbench_branches (bid int PRIMARY KEY, bbalance int, filler char(88));
CREATE TABLE public.pgbench_tellers (tid int PRIMARY KEY, bid int, tbalance int, filler char(84));
CREATE TABLE public.pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
CREATE TABLE public.pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
INSERT INTO public.pgbench_branches VALUES (1, 111, 'mine');
INSERT INTO public.pgbench_tellers SELECT g, 1, g * 7, 'mine' FROM generate_series(1, 10) g;
INSERT INTO public.pgbench_accounts SELECT g, 1, g * 3, 'my account' FROM generate_series(1, 500) g;
INSERT INTO public.pgbench_history VALUES (1, 1, 1, 42, '2026-01-01', 'mine');
CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO public.customers SELECT g, 'customer ' || g FROM generate_series(1, 50) g;
CREATE TABLE public.items (id int PRIMARY KEY, qty int NOT NULL, note text);
CREATE INDEX items_note ON public.items (note);
INSERT INTO public.items SELECT g, g, 'mine' FROM generate_series(1, 100) g;`)
	u.exec(t, "ALTER SYSTEM SET work_mem = '5MB'")
	u.exec(t, "SELECT pg_reload_conf()")
	return u
}

func (u *userServer) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := u.admin.Exec(context.Background(), sql).ReadAll(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// state is everything of the user's that firedrill must leave as found:
// every table, row, index and constraint outside firedrill's schema,
// postgresql.auto.conf, and what waits for a restart.
func (u *userServer) state(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	res, err := u.admin.Exec(context.Background(), `
SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || c.relfilenode
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'firedrill') AND n.nspname NOT LIKE 'pg_temp%'
UNION ALL SELECT 'index ' || schemaname || ' ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
UNION ALL SELECT 'constraint ' || c.relname || ' ' || pg_get_constraintdef(k.oid) FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE k.connamespace = 'public'::regnamespace
UNION ALL SELECT 'pending ' || name FROM pg_settings WHERE pending_restart
UNION ALL SELECT 'schema ' || nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' AND nspname <> 'firedrill'
ORDER BY 1`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res[0].Rows {
		fmt.Fprintf(&b, "%s\n", row[0])
	}
	for _, table := range []string{"pgbench_branches", "pgbench_tellers", "pgbench_accounts", "pgbench_history", "customers", "items"} {
		res := u.admin.ExecParams(context.Background(),
			fmt.Sprintf("SELECT count(*) || ' rows, md5 ' || md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM public.%s t", table),
			nil, nil, nil, nil).Read()
		if res.Err != nil {
			fmt.Fprintf(&b, "table public.%s: %v\n", table, res.Err)
			continue
		}
		fmt.Fprintf(&b, "table public.%s: %s\n", table, res.Rows[0][0])
	}
	auto, err := os.ReadFile(filepath.Join(u.inst.DataDir(), "postgresql.auto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("postgresql.auto.conf:\n" + string(auto))
	return b.String()
}

func (u *userServer) autoConf(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(u.inst.DataDir(), "postgresql.auto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// safetyScenario writes a scenario that uses the user's table names
// unqualified everywhere and every event kind.
func safetyScenario(t *testing.T, dir string, duration string) string {
	t.Helper()
	files := map[string]string{
		"setup.sql": `DROP TABLE IF EXISTS customers;
CREATE TABLE customers (id int PRIMARY KEY, name text);
INSERT INTO customers SELECT g, 'drill ' || g FROM generate_series(1, 100) g;
DROP TABLE IF EXISTS items;
CREATE TABLE items (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO items SELECT g, 0 FROM generate_series(1, 100) g;
`,
		"items.sql": `\set id random(1, 100)
UPDATE items SET qty = qty + 1 WHERE id = :id;
SELECT name FROM customers WHERE id = :id;
DELETE FROM customers WHERE id = :id + 1000;
`,
		"safety.yaml": fmt.Sprintf(`name: safety
duration: %s
setup:
  pgbench: {scale: 1}
  sql: [{file: setup.sql}]
workloads:
  - {name: oltp, scripts: [tpcb-like], clients: 2}
  - {name: items, scripts: [items.sql], clients: 2}
events:
  - {name: hold, kind: hold_transaction, at: 1s, duration: 2s, xid: true, sql: ["UPDATE items SET qty = -1 WHERE id = 1"]}
  - {name: knobs, kind: settings, at: 1s, settings: {work_mem: 64MB, idle_in_transaction_session_timeout: 5min, log_min_duration_statement: "0"}}
  - {name: big, kind: settings, at: 1500ms, settings: {shared_buffers: 256MB}}
  - {name: index, kind: sql, at: 2s, sql: ["CREATE INDEX CONCURRENTLY IF NOT EXISTS items_qty ON items (qty)", "UPDATE items SET qty = 0 WHERE id = 2", "TRUNCATE pgbench_history"]}
  - {name: kick, kind: terminate, at: 3s, workload: items}
  - {name: disk, kind: disk_pressure, at: 2s, size: 8MB, duration: 1s, path: %s}
  - {name: sh, kind: shell, at: 3s, command: "true"}
`, duration, dir),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "safety.yaml")
}

// A run on a given server with the user's own tables in public, named as
// pgbench's and the scenario's, drops, changes and indexes only its own
// schema's copies, and leaves every setting as found.
func TestGivenServerIsLeftAsFound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	before := u.state(t)
	tmp := privateTmp(t)
	path := safetyScenario(t, tmp, "6s")
	var stdout, stderr bytes.Buffer
	env := &clikit.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" },
		Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }}
	code := Main(env, kinds.Registry(), []string{"run", path, "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs"), "--allow-shell"})
	log := stdout.String() + stderr.String()
	if code != clikit.ExitOK {
		t.Fatalf("run: exit %d\n%s", code, log)
	}
	if after := u.state(t); after != before {
		t.Errorf("the user's server changed:\n--- before\n%s\n--- after\n%s\n--- log\n%s", before, after, log)
	}
	// The work happened, in firedrill's schema.
	if n := queryCount(t, u.admin, "SELECT count(*) FROM firedrill.items WHERE qty > 0"); n == 0 {
		t.Errorf("the workload did not update firedrill.items\n%s", log)
	}
	if n := queryCount(t, u.admin, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'firedrill' AND indexname = 'items_qty'"); n != 1 {
		t.Errorf("the sql event's index is not in firedrill's schema\n%s", log)
	}
	for _, want := range []string{"restored setting work_mem: set back to 5MB", "restored setting shared_buffers: reset"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}

// SQL that names the user's objects is refused before anything runs, with
// its place; nothing is created, not even firedrill's schema.
func TestGivenServerRefusesSQLOutsideTheSchema(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	before := u.state(t)
	tmp := privateTmp(t)
	if err := os.WriteFile(filepath.Join(tmp, "setup.sql"), []byte("CREATE TABLE mine (id int);\nDROP TABLE IF EXISTS public.customers;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenarioPath := filepath.Join(tmp, "bad.yaml")
	if err := os.WriteFile(scenarioPath, []byte(`name: bad
duration: 2s
setup: {sql: [{file: setup.sql}]}
workloads: [{name: w, scripts: [{inline: "SELECT 1;"}], clients: 1}]
events:
  - {kind: sql, at: 1s, sql: ["UPDATE public.items SET qty = 0"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" },
		Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }}
	code := Main(env, kinds.Registry(), []string{"run", scenarioPath, "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs")})
	if code == clikit.ExitOK {
		t.Fatalf("a setup that drops public.customers ran:\n%s", out.String())
	}
	for _, want := range []string{filepath.Join(tmp, "setup.sql") + ":2:22: public.customers", "bad.yaml:6:5 (event sql-1, statement 1, its line 1 col 8): public.items", "--allow-outside-schema"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the error does not say %q:\n%s", want, out.String())
		}
	}
	if after := u.state(t); after != before {
		t.Errorf("the user's server changed:\n--- before\n%s\n--- after\n%s", before, after)
	}
	if n := queryCount(t, u.admin, "SELECT count(*) FROM pg_namespace WHERE nspname = 'firedrill'"); n != 0 {
		t.Errorf("the refused run created firedrill's schema")
	}
}

// Ctrl-C restores the settings before exiting; a SIGKILL cannot, so the
// next run against the server restores them first, and 'firedrill
// restore' does it on demand.
func TestGivenServerSettingsSurviveSignals(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	u := startUserServer(t)
	before := u.state(t)
	tmp := privateTmp(t)
	path := safetyScenario(t, tmp, "60s")
	runArgs := []string{"run", path, "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs"), "--allow-shell"}
	changed := func() bool { return strings.Contains(u.autoConf(t), "64MB") }

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL, syscall.SIGKILL} {
		cmd, out := startCLI(t, tmp, runArgs...)
		if !waitUntil(60*time.Second, changed) {
			t.Fatalf("the settings event never changed postgresql.auto.conf:\n%s", out.String())
		}
		time.Sleep(700 * time.Millisecond) // let the restart-only setting be written too
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if sig == syscall.SIGINT {
			if after := u.state(t); after != before {
				t.Fatalf("after SIGINT the server is not as found:\n--- before\n%s\n--- after\n%s\n--- log\n%s", before, after, out.String())
			}
			continue
		}
		if !changed() {
			t.Fatalf("SIGKILL: expected the change to survive the kill")
		}
		break
	}
	// The next run restores first.
	var outBuf bytes.Buffer
	env := &clikit.Env{Stdout: &outBuf, Stderr: &outBuf, Getenv: func(string) string { return "" },
		Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }}
	short := safetyScenario(t, t.TempDir(), "5s")
	if code := Main(env, kinds.Registry(), []string{"run", short, "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs"), "--allow-shell"}); code != clikit.ExitOK {
		t.Fatalf("next run: exit %d\n%s", code, outBuf.String())
	}
	if !strings.Contains(outBuf.String(), "before the run: restored setting work_mem: set back to 5MB") {
		t.Errorf("the next run did not say it restored the killed run's settings:\n%s", outBuf.String())
	}
	if after := u.state(t); after != before {
		t.Fatalf("after SIGKILL and the next run the server is not as found:\n--- before\n%s\n--- after\n%s", before, after)
	}

	// Killed again: 'firedrill restore' puts it back on demand.
	cmd, out := startCLI(t, tmp, runArgs...)
	if !waitUntil(60*time.Second, changed) {
		t.Fatalf("the settings event never changed postgresql.auto.conf:\n%s", out.String())
	}
	time.Sleep(700 * time.Millisecond)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	outBuf.Reset()
	if code := Main(env, kinds.Registry(), []string{"restore", "--dsn", u.inst.ConnString()}); code != clikit.ExitOK {
		t.Fatalf("restore: exit %d\n%s", code, outBuf.String())
	}
	if !strings.Contains(outBuf.String(), "work_mem: set back to 5MB") {
		t.Errorf("restore did not say what it restored:\n%s", outBuf.String())
	}
	if after := u.state(t); after != before {
		t.Fatalf("after 'firedrill restore' the server is not as found:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// validate judges the SQL as run will on a given server, without one.
func TestValidateRefusesSQLOutsideTheSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(path, []byte(`name: v
duration: 5s
setup: {sql: ["DROP TABLE public.customers"]}
workloads: [{name: w, scripts: [{inline: "SELECT 1;"}], clients: 1}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	validate := func(args ...string) (int, string) {
		var out bytes.Buffer
		env := &clikit.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" },
			Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }}
		return Main(env, kinds.Registry(), append([]string{"validate", path}, args...)), out.String()
	}
	if code, out := validate(); code != clikit.ExitOK {
		t.Errorf("on the embedded server anything goes: exit %d\n%s", code, out)
	}
	if code, out := validate("--dsn", "postgres://db/app"); code != clikit.ExitUsage || !strings.Contains(out, "v.yaml:3:15 (inline setup SQL, its line 1 col 12): public.customers") {
		t.Errorf("on a given server: exit %d\n%s", code, out)
	}
	if code, out := validate("--dsn", "postgres://db/app", "--allow-outside-schema"); code != clikit.ExitOK {
		t.Errorf("with --allow-outside-schema: exit %d\n%s", code, out)
	}
}
