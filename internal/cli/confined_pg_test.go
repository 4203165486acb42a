package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
)

// The proof of issue 20 for PostgreSQL: on a given server the scenario's
// SQL runs as a role that the server itself confines to firedrill's
// schema. These tests switch the lexical check off (PrivilegesOnly), so
// that the privileges alone must hold.

// moreUserData adds to startUserServer's what an application has beside
// tables: another schema, a function, a trigger, a view, a large object,
// another role with a password and a setting of its own.
func moreUserData(t *testing.T, u *userServer) {
	t.Helper()
	u.exec(t, `
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int PRIMARY KEY, amount numeric NOT NULL);
INSERT INTO billing.invoices SELECT g, g * 10.5 FROM generate_series(1, 20) g;
CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 42';
CREATE FUNCTION public.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.note := 'touched'; RETURN NEW; END $$;
CREATE TRIGGER items_touch BEFORE UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION public.touch();
CREATE VIEW public.v AS SELECT id, name FROM public.customers WHERE id < 10;
SELECT lo_from_bytea(424242, 'the user''s blob');
CREATE ROLE app LOGIN PASSWORD 'app-secret-1';
ALTER ROLE app SET statement_timeout = '7s';
GRANT SELECT ON public.customers TO app;`)
}

// fingerprint is every user object, row, role, grant, large object and
// setting that a confined run must leave as found (u.state and more).
func fingerprint(t *testing.T, u *userServer) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(u.state(t))
	res, err := u.admin.Exec(context.Background(), `
SELECT 'role ' || rolname || ' ' || rolsuper || rolcreaterole || rolcreatedb || rolcanlogin || rolreplication || rolbypassrls || ' ' || md5(coalesce(rolpassword, ''))
FROM pg_authid WHERE rolname NOT LIKE 'pg\_%' AND rolname NOT LIKE 'firedrill\_%'
UNION ALL SELECT 'member ' || roleid::regrole || ' ' || member::regrole FROM pg_auth_members
  WHERE member::regrole::text NOT LIKE 'firedrill\_%' AND roleid::regrole::text NOT LIKE 'firedrill\_%'
UNION ALL SELECT 'role setting ' || coalesce(setrole::regrole::text, '-') || ' ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
  WHERE setrole::regrole::text NOT LIKE 'firedrill\_%'
UNION ALL SELECT 'function ' || p.oid::regprocedure || ' ' || md5(prosrc) || ' ' || proowner::regrole || ' ' || coalesce(proacl::text, '')
FROM pg_proc p WHERE pronamespace IN ('public'::regnamespace, 'billing'::regnamespace)
UNION ALL SELECT 'trigger ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
UNION ALL SELECT 'view ' || viewname || ' ' || md5(definition) FROM pg_views WHERE schemaname = 'public'
UNION ALL SELECT 'acl ' || c.oid::regclass || ' ' || c.relowner::regrole || ' ' || coalesce(c.relacl::text, '') || ' ' || c.relhastriggers
FROM pg_class c WHERE c.relnamespace IN ('public'::regnamespace, 'billing'::regnamespace)
UNION ALL SELECT 'schema ' || nspname || ' ' || nspowner::regrole || ' ' || coalesce(nspacl::text, '') FROM pg_namespace
  WHERE nspname NOT LIKE 'pg\_%' AND nspname NOT IN ('firedrill')
UNION ALL SELECT 'database ' || datname || ' ' || datdba::regrole || ' ' || coalesce(datacl::text, '') FROM pg_database
UNION ALL SELECT 'large object ' || m.oid || ' ' || m.lomowner::regrole || ' ' || md5(lo_get(m.oid)) FROM pg_largeobject_metadata m
UNION ALL SELECT 'invoices ' || count(*) || ' ' || md5(string_agg(i::text, ',' ORDER BY id)) FROM billing.invoices i
UNION ALL SELECT 'setting ' || name || ' ' || setting FROM pg_settings WHERE name IN ('work_mem', 'max_connections', 'log_statement')
UNION ALL SELECT 'comment ' || obj_description('public.items'::regclass, 'pg_class')
ORDER BY 1`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res[0].Rows {
		fmt.Fprintf(&b, "%s\n", row[0])
	}
	return b.String()
}

// runRoles lists the login roles of runs on the server.
func runRoles(t *testing.T, u *userServer) []string {
	t.Helper()
	res, err := u.admin.Exec(context.Background(), `SELECT rolname FROM pg_roles WHERE rolname LIKE 'firedrill\_run\_%' ORDER BY 1`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, row := range res[0].Rows {
		out = append(out, string(row[0]))
	}
	return out
}

// escapes are the PostgreSQL escapes and more, each run as one
// sql event, and as one workload script; allowedNoOp ones the server
// answers with a warning and no change rather than an error.
var escapes = []struct {
	sql         string
	allowedNoOp bool
}{
	{sql: "DROP TABLE public.customers"},
	{sql: "TRUNCATE public.items"},
	{sql: "UPDATE public.items SET qty = 0"},
	{sql: "DELETE FROM billing.invoices"},
	{sql: "INSERT INTO public.customers VALUES (9999, 'intruder')"},
	{sql: "ALTER TABLE public.items RENAME TO stolen"},
	{sql: "ALTER TABLE public.items DISABLE TRIGGER ALL"},
	{sql: "DROP TRIGGER items_touch ON public.items"},
	{sql: "CREATE OR REPLACE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 666'"},
	{sql: "CREATE OR REPLACE VIEW public.v AS SELECT 1 AS id, 'x'::text AS name"},
	{sql: "CREATE TABLE public.trojan (id int)"},
	{sql: "COMMENT ON TABLE public.items IS 'mine now'"},
	{sql: "DROP SCHEMA public CASCADE"},
	{sql: "DROP SCHEMA billing CASCADE"},
	{sql: "ALTER ROLE app PASSWORD 'stolen'"},
	{sql: "ALTER ROLE app NOLOGIN"},
	{sql: "ALTER ROLE app SET statement_timeout = 0"},
	{sql: "DROP ROLE app"},
	{sql: "CREATE ROLE evil SUPERUSER LOGIN"},
	{sql: "GRANT app TO CURRENT_USER"},
	{sql: "GRANT ALL ON public.customers TO PUBLIC", allowedNoOp: true},
	{sql: "REVOKE SELECT ON public.customers FROM app", allowedNoOp: true},
	{sql: "ALTER SYSTEM SET work_mem = '1GB'"},
	{sql: "SELECT pg_reload_conf()"},
	{sql: "COPY (SELECT 1) TO PROGRAM 'touch /tmp/firedrill-pwned'"},
	{sql: "COPY public.customers TO '/tmp/firedrill-stolen.csv'"},
	{sql: "SELECT pg_read_file('postgresql.auto.conf')"},
	{sql: "SELECT lo_unlink(424242)"},
	{sql: "SELECT lo_put(424242, 0, 'overwritten')"},
	{sql: "SELECT lo_export(424242, '/tmp/firedrill-blob')"},
	{sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'test-admin'"},
	{sql: "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'test-admin'"},
	{sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'app'"},
	{sql: "SET ROLE ADMIN_ROLE"},
	{sql: "SET SESSION AUTHORIZATION ADMIN_ROLE"},
	{sql: "SELECT set_config('role', 'ADMIN_ROLE', false)"},
	{sql: "REASSIGN OWNED BY ADMIN_ROLE TO CURRENT_USER"},
	{sql: "DROP OWNED BY ADMIN_ROLE"},
	{sql: "DROP DATABASE postgres"},
	{sql: "UPDATE pg_catalog.pg_authid SET rolsuper = true WHERE rolname = current_user"},
	{sql: "ALTER FUNCTION public.f() OWNER TO CURRENT_USER"},
	{sql: "VACUUM FULL public.items", allowedNoOp: true},
	{sql: "DO $$ BEGIN EXECUTE 'DROP TABLE public.' || 'customers'; END $$"},
	{sql: "SELECT evil()"}, // made in setup: a function in firedrill's schema that drops the user's table
	{sql: "ALTER TABLE firedrill.mine SET SCHEMA public"},
	{sql: "ALTER ROLE firedrill_owner_firedrill SUPERUSER"},
}

// permissionError is what the server says when privileges refuse a
// statement.
var permissionError = regexp.MustCompile(`permission denied|must be (owner|superuser|member|able to SET ROLE)|SQLSTATE 42501|only superuser`)

func confinedScenario(t *testing.T, dir string, setup string, withEscapes bool) *scenario.Scenario {
	t.Helper()
	var events, scripts strings.Builder
	if withEscapes {
		for i, e := range escapes {
			sql := strings.ReplaceAll(e.sql, "ADMIN_ROLE", "firedrill")
			fmt.Fprintf(&events, "  - {name: e%02d, kind: sql, at: %dms, sql: [%q]}\n", i, 500+20*i, sql)
			if !e.allowedNoOp && !strings.Contains(sql, "pg_terminate") { // a script's terminate would go on killing
				fmt.Fprintf(&scripts, "      - {inline: %q}\n", sql+";")
			}
		}
		fmt.Fprintf(&events, "  - {name: held, kind: hold_transaction, at: 300ms, duration: 300ms, sql: [%q]}\n", "DELETE FROM public.customers")
	}
	yaml := fmt.Sprintf(`name: confined
duration: 3s
setup:
  sql: [%q]
workloads:
  - {name: own, clients: 1, scripts: [{inline: "UPDATE mine SET n = n + 1;"}]}
`, setup)
	if withEscapes {
		yaml += "  - name: escapes\n    clients: 2\n    scripts:\n" + scripts.String()
		yaml += "events:\n" + events.String()
	}
	path := filepath.Join(dir, "confined.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return sc
}

// cleanSetup is what a scenario that keeps to its schema sets up;
// ownSetup adds a function that reaches out, for the tests without the
// lexical check.
const cleanSetup = `CREATE TABLE IF NOT EXISTS mine (id int PRIMARY KEY, n int NOT NULL); INSERT INTO mine VALUES (1, 0) ON CONFLICT DO NOTHING`

const ownSetup = cleanSetup + `;
CREATE FUNCTION evil() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DROP TABLE public.customers; END $$`

// Every escape, in sql events, a hold_transaction and workload scripts,
// with the lexical check off: the server refuses each for want of
// privilege, and nothing of the user's changes. The run's role exists
// during the run only.
func TestConfinedRoleHoldsWithoutTheLexicalCheck(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	moreUserData(t, u)
	// The application is connected: its session must outlive the run.
	app, aerr := pgconn.Connect(context.Background(), u.inst.ConnString()+" user=app password=app-secret-1 application_name=the-app")
	if aerr != nil {
		t.Fatal(aerr)
	}
	defer app.Close(context.Background())
	appPID := app.PID()
	before := fingerprint(t, u)
	tmp := privateTmp(t)
	sc := confinedScenario(t, tmp, ownSetup, true)
	var log bytes.Buffer
	var during []string
	res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: u.inst.ConnString(), RunDir: filepath.Join(tmp, "run"),
		PrivilegesOnly: true, Log: &log, NoSamplers: true,
		OnStart: func(string) { during = runRoles(t, u) }})
	if err != nil && res == nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if after := fingerprint(t, u); after != before {
		t.Errorf("the user's server changed:\n--- before\n%s\n--- after\n%s\n--- log\n%s", before, after, log.String())
	}
	if len(during) != 1 {
		t.Errorf("run roles during the run: %v, want one", during)
	}
	if left := runRoles(t, u); len(left) != 0 {
		t.Errorf("run roles after the run: %v", left)
	}
	for i, e := range escapes {
		line := eventLine(log.String(), fmt.Sprintf("e%02d", i))
		switch {
		case line == "":
			t.Errorf("escape %q: no outcome in the log", e.sql)
		case e.allowedNoOp:
		case !permissionError.MatchString(line):
			t.Errorf("escape %q: not refused for privileges: %s", e.sql, line)
		}
	}
	if os.Getenv("FD_DEBUG") != "" {
		t.Log(log.String())
	}
	if line := eventLine(log.String(), "held"); !permissionError.MatchString(line) {
		t.Errorf("hold_transaction's DELETE: %s", line)
	}
	for _, w := range res.Summary.Workloads {
		switch w.Name {
		case "own":
			if w.Count == 0 || w.Failed != 0 {
				t.Errorf("the run's own workload: %d done, %d failed\n%s", w.Count, w.Failed, log.String())
			}
		case "escapes":
			if w.Count != 0 || w.Failed == 0 {
				t.Errorf("escape scripts: %d succeeded, %d failed", w.Count, w.Failed)
			}
			for _, e := range w.Errors {
				if !permissionError.MatchString(e.Message) && !strings.Contains(e.Code, "42501") {
					t.Errorf("escape script failed otherwise than for privileges: %+v", e)
				}
			}
		}
	}
	if n := queryCount(t, u.admin, "SELECT n FROM firedrill.mine WHERE id = 1"); n == 0 {
		t.Errorf("the run's own workload changed nothing in its schema")
	}
	if err := app.Ping(context.Background()); err != nil || queryCount(t, u.admin, fmt.Sprintf("SELECT count(*) FROM pg_stat_activity WHERE pid = %d", appPID)) != 1 {
		t.Errorf("the application's session did not survive the run: %v", err)
	}
	if _, err := os.Stat("/tmp/firedrill-pwned"); err == nil {
		t.Errorf("COPY TO PROGRAM ran")
	}
}

// eventLine is the log's line for the event named name.
func eventLine(log, name string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "event "+name+" (") {
			return line
		}
	}
	return ""
}

// Setup SQL that reaches out fails the run at once, for privileges, and
// changes nothing; the role goes with it.
func TestConfinedSetupIsRefusedByPrivileges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	moreUserData(t, u)
	before := fingerprint(t, u)
	tmp := privateTmp(t)
	for i, bad := range []string{"DROP TABLE public.customers", "CREATE OR REPLACE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 0'",
		"SELECT lo_unlink(424242)", "ALTER ROLE app PASSWORD 'x'", "SET ROLE firedrill; DROP TABLE public.items"} {
		dir := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sc := confinedScenario(t, dir, "CREATE TABLE IF NOT EXISTS mine (id int PRIMARY KEY, n int NOT NULL); "+bad, false)
		var log bytes.Buffer
		_, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: u.inst.ConnString(), RunDir: filepath.Join(dir, "run"),
			PrivilegesOnly: true, Log: &log, NoSamplers: true})
		if err == nil || !permissionError.MatchString(err.Error()) {
			t.Errorf("setup %q: %v\n%s", bad, err, log.String())
		}
		if left := runRoles(t, u); len(left) != 0 {
			t.Errorf("run roles after a failed setup: %v", left)
		}
	}
	if after := fingerprint(t, u); after != before {
		t.Errorf("the user's server changed:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// Ctrl-C (the run's context cancelled) drops the role too.
func TestConfinedRoleGoesAfterInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	tmp := privateTmp(t)
	sc := confinedScenario(t, tmp, cleanSetup, false)
	sc.Duration = 60 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var during []string
	var log bytes.Buffer
	_, err := runner.Run(ctx, runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: u.inst.ConnString(), RunDir: filepath.Join(tmp, "run"), Log: &log, NoSamplers: true,
		OnStart: func(string) {
			during = runRoles(t, u)
			time.AfterFunc(500*time.Millisecond, cancel)
		}})
	if err == nil {
		t.Fatalf("an interrupted run returned no error\n%s", log.String())
	}
	if len(during) != 1 {
		t.Errorf("run roles during the run: %v", during)
	}
	if left := runRoles(t, u); len(left) != 0 {
		t.Errorf("run roles after Ctrl-C: %v\n%s", left, log.String())
	}
}

// A SIGKILLed run leaves its role; the next run drops it before it
// starts, and so does 'firedrill restore'.
func TestConfinedRoleOfAKilledRunIsDropped(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	u := startUserServer(t)
	tmp := privateTmp(t)
	sc := confinedScenario(t, tmp, cleanSetup, false)
	long := strings.Replace(string(sc.Source), "duration: 3s", "duration: 60s", 1)
	longPath := filepath.Join(tmp, "long.yaml")
	if err := os.WriteFile(longPath, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	killed := func() string {
		cmd, out := startCLI(t, tmp, "run", longPath, "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs"), "--progress", "1s")
		if !waitUntil(60*time.Second, func() bool { return strings.Contains(out.String(), " tps ") }) {
			t.Fatalf("no progress line; output:\n%s", out)
		}
		roles := runRoles(t, u)
		if len(roles) != 1 {
			t.Fatalf("run roles during the run: %v", roles)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if left := runRoles(t, u); len(left) != 1 || left[0] != roles[0] {
			t.Fatalf("after SIGKILL: roles %v, want %v left", left, roles)
		}
		// The killed run's sessions end with it (the server notices).
		waitUntil(10*time.Second, func() bool {
			return queryCount(t, u.admin, "SELECT count(*) FROM pg_stat_activity WHERE usename LIKE 'firedrill\\_run\\_%'") == 0
		})
		return roles[0]
	}
	env := func(out *bytes.Buffer) *clikit.Env {
		return &clikit.Env{Stdout: out, Stderr: out, Getenv: func(string) string { return "" },
			Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }}
	}

	role := killed()
	var out bytes.Buffer
	if code := Main(env(&out), kinds.Registry(), []string{"run", filepath.Join(tmp, "confined.yaml"), "--dsn", u.inst.ConnString(), "--out", filepath.Join(tmp, "runs")}); code != clikit.ExitOK {
		t.Fatalf("next run: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "dropped the role "+role+" of a run that is gone") {
		t.Errorf("the next run did not say it dropped %s:\n%s", role, out.String())
	}
	if left := runRoles(t, u); len(left) != 0 {
		t.Errorf("after the next run: roles %v", left)
	}

	role = killed()
	out.Reset()
	if code := Main(env(&out), kinds.Registry(), []string{"restore", "--dsn", u.inst.ConnString()}); code != clikit.ExitOK {
		t.Fatalf("restore: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "dropped the role "+role) {
		t.Errorf("restore did not say it dropped %s:\n%s", role, out.String())
	}
	if left := runRoles(t, u); len(left) != 0 {
		t.Errorf("after restore: roles %v", left)
	}
}

// An admin DSN that cannot create roles is refused before anything runs,
// with the SQL to make an account by hand; that account, given with
// RunAs, runs the scenario, confined all the same.
func TestConfinedRunAsAHandMadeAccount(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	u := startUserServer(t)
	moreUserData(t, u)
	u.exec(t, "CREATE ROLE weak LOGIN PASSWORD 'weak-pw-3'")
	weak := u.inst.ConnString() + " user=weak password=weak-pw-3"
	tmp := privateTmp(t)
	sc := confinedScenario(t, tmp, cleanSetup, false)
	before := fingerprint(t, u)
	var log bytes.Buffer
	_, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: weak, RunDir: filepath.Join(tmp, "refused"), Log: &log, NoSamplers: true})
	if err == nil {
		t.Fatalf("a DSN without CREATEROLE ran:\n%s", log.String())
	}
	for _, want := range []string{"cannot create roles", "--run-as", "--allow-outside-schema", "CREATE ROLE \"firedrill_login_firedrill\" LOGIN PASSWORD 'PASSWORD'",
		fmt.Sprintf(":%d", u.inst.Port())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if after := fingerprint(t, u); after != before {
		t.Errorf("the refused run changed the server:\n--- before\n%s\n--- after\n%s", before, after)
	}
	// The administrator runs the printed SQL, with a password.
	if !strings.Contains(err.Error(), "-- as a superuser") || !strings.Contains(err.Error(), "-- then:") {
		t.FailNow()
	}
	grant := err.Error()[strings.Index(err.Error(), "-- as a superuser"):]
	grant = grant[:strings.Index(grant, "-- then:")]
	u.exec(t, strings.ReplaceAll(grant, "'PASSWORD'", "'hand-made-pw-7'"))
	runAs := u.inst.ConnString() + " user=firedrill_login_firedrill password=hand-made-pw-7"
	sc = confinedScenario(t, filepath.Join(tmp), ownSetup, true)
	before = fingerprint(t, u)
	log.Reset()
	res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: weak, RunAs: runAs, RunDir: filepath.Join(tmp, "run"),
		PrivilegesOnly: true, Log: &log, NoSamplers: true})
	if err != nil && res == nil {
		t.Fatalf("run as the hand-made account: %v\n%s", err, log.String())
	}
	if after := fingerprint(t, u); after != before {
		t.Errorf("the user's server changed:\n--- before\n%s\n--- after\n%s\n--- log\n%s", before, after, log.String())
	}
	if n := queryCount(t, u.admin, "SELECT n FROM firedrill.mine WHERE id = 1"); n == 0 {
		t.Errorf("the run as the hand-made account did nothing in its schema\n%s", log.String())
	}
	if n := queryCount(t, u.admin, "SELECT count(*) FROM pg_roles WHERE rolname = 'firedrill_login_firedrill'"); n != 1 {
		t.Errorf("the hand-made account is gone: a run must not drop what it did not make")
	}
}
