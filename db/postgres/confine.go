package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/backend"
	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/db/postgres/pgevent"
	"github.com/firedrill/firedrill/scenario"
)

// On a given server (--dsn or target.dsn) firedrill keeps to its own
// schema (setup.schema, default "firedrill"): setup, workloads and events
// search only that schema, so unqualified names (pgbench's "drop table if
// exists pgbench_accounts", a setup file's "DROP TABLE customers") resolve
// there and never to the user's tables; SQL that names anything a search
// path cannot confine (another schema's objects, the search path itself,
// roles, databases, extensions, ALTER SYSTEM) is refused before anything
// runs; settings events are restored at the end; and the objects outside
// the schema are compared before and after, so that whatever slipped past
// (dynamic SQL) is at least said.

// confined reports whether this run must keep to its schema: a given
// server whose scenario did not opt out with setup.schema: public.
func (tg *target) confined() bool {
	return tg.inst == nil && tg.schema != "" && tg.schema != "public"
}

// ConfinementProblems lists every place in sc's setup SQL, workload
// scripts and event SQL that would reach outside sc's schema on a given
// server, each as "file:line:col: what (hint)". others are the server's
// other schemas (nil: just public, for validate without a server).
func ConfinementProblems(sc *scenario.Scenario, others []string) []string {
	problems, _ := confinementCheck(sc, others)
	return problems
}

// confinementCheck is ConfinementProblems, and the places whose reach
// cannot be judged from the text (dynamic SQL), as warnings.
func confinementCheck(sc *scenario.Scenario, others []string) (problems, unseen []string) {
	c := pgtarget.Confinement{Schema: sc.Setup.Schema, Others: others}
	if c.Schema == "" {
		c.Schema = scenario.DefaultSchema
	}
	report := func(at func(line, col int) string, sql string) {
		for _, e := range c.Escapes(sql) {
			line := fmt.Sprintf("%s: %s %s", at(e.Line, e.Col), e.Object, e.Why)
			if e.Unseen {
				unseen = append(unseen, line)
			} else {
				problems = append(problems, line)
			}
		}
	}
	backend.EachSQL(sc, report, func(problem string) { problems = append(problems, problem) })
	if len(problems) > 0 {
		problems = append(problems, fmt.Sprintf("(firedrill keeps to the schema %s on a given server; qualify your own objects with %s. "+
			"or leave them unqualified, or run with --allow-outside-schema if you mean to change the rest of the database)", c.Schema, c.Schema))
	}
	return problems, unseen
}

// checkConfinement refuses a run whose SQL would reach outside its schema,
// before anything is run, unless --allow-outside-schema (or a test that
// proves the privileges alone hold: PrivilegesOnly).
func (tg *target) checkConfinement(ctx context.Context, conn *pgconn.PgConn) error {
	if !tg.confined() || tg.spec.AllowOutsideSchema || tg.spec.PrivilegesOnly {
		return nil
	}
	res := conn.ExecParams(ctx, `SELECT nspname FROM pg_catalog.pg_namespace
WHERE nspname <> $1 AND nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'`,
		[][]byte{[]byte(tg.schema)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("list the server's schemas: %w", res.Err)
	}
	others := []string{"public"}
	for _, row := range res.Rows {
		if name := string(row[0]); !slices.Contains(others, name) {
			others = append(others, name)
		}
	}
	problems, unseen := confinementCheck(tg.sc, others)
	if len(problems) > 0 {
		return fmt.Errorf("refusing to run: on a given server this scenario would reach outside the schema %s:\n  %s",
			tg.schema, joinLines(problems))
	}
	for _, u := range unseen {
		tg.logf("note: %s (the run's role's privileges confine it)", u)
	}
	return nil
}

// openConfined decides, at Open on a given server, who runs the
// scenario's SQL: the --run-as account, else (confined, and not
// --allow-outside-schema) a role the run makes now, else the DSN's own.
// The lexical check runs first, so a refused scenario changes nothing.
func (tg *target) openConfined(ctx context.Context) error {
	tg.userConnString = tg.connString
	if tg.spec.RunAs != "" {
		if err := checkRunAs(ctx, tg.spec.RunAs, tg.schema); err != nil {
			return err
		}
		tg.userConnString = tg.spec.RunAs
	}
	if !tg.confined() {
		return nil
	}
	conn, cfg, err := adminConn(ctx, tg.connString, "firedrill-setup")
	if err != nil {
		return err
	}
	defer closeQuietly(conn)
	if err := tg.checkConfinement(ctx, conn); err != nil {
		return err
	}
	if tg.spec.RunAs != "" || tg.spec.AllowOutsideSchema {
		return nil
	}
	role, err := tg.makeRunRole(ctx, conn, cfg)
	if errors.Is(err, errCannotCreateRole) {
		grant, gerr := Backend{}.Grant(tg.connString, tg.schema)
		if gerr != nil {
			return gerr
		}
		return fmt.Errorf("refusing to run on %s:%d: the DSN's role %s cannot create roles, and on a given server firedrill runs the scenario's SQL "+
			"as a role it makes for the run, which can touch only the schema %s.\nEither have an administrator make such an account once:\n\n%s\n"+
			"and pass --run-as with it, or pass --allow-outside-schema to run everything as the DSN's role (no confinement by privileges)",
			cfg.Host, cfg.Port, cfg.User, tg.schema, grant)
	}
	if err != nil {
		return fmt.Errorf("on %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	tg.role = role
	tg.userConnString = withUser(tg.connString, role.name, role.password)
	tg.logf("the scenario's SQL runs as the role %s (a member of %s, which owns only the schema %s)", role.name, role.group, tg.schema)
	return nil
}

// byPrivileges says whether the scenario's SQL runs as a confined
// account (made by the run or --run-as) rather than as the DSN's role.
func (tg *target) byPrivileges() bool { return tg.role != nil || tg.spec.RunAs != "" && tg.inst == nil }

// sessionsRole is the role whose members' sessions are firedrill's on a
// given server (what terminate events may end): the run's group, or the
// --run-as account; "" when the DSN's role runs everything.
func (tg *target) sessionsRole() string {
	switch {
	case tg.role != nil:
		return tg.role.group
	case tg.spec.RunAs != "":
		if cfg, err := pgconn.ParseConfig(tg.spec.RunAs); err == nil {
			return cfg.User
		}
	}
	return ""
}

// outsideObjectsSQL fingerprints what lives outside the schema $1: each
// relation (a TRUNCATE, VACUUM FULL or rewrite changes its file node),
// function, trigger, schema and extension.
const outsideObjectsSQL = `SELECT 'relation ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       c.relkind::text || ' file ' || c.relfilenode || ' columns ' || c.relnatts
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname <> $1 AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', '` + pgevent.RestoreSchema + `')
  AND n.nspname NOT LIKE 'pg\_temp\_%' AND n.nspname NOT LIKE 'pg\_toast\_temp\_%'
UNION ALL
SELECT 'function ' || quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')',
       md5(coalesce(p.prosrc, ''))
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname <> $1 AND n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text, t.tgenabled::text
FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname <> $1 AND NOT t.tgisinternal
UNION ALL
SELECT 'schema ' || quote_ident(nspname), nspowner::text FROM pg_catalog.pg_namespace
WHERE nspname <> $1 AND nspname <> '` + pgevent.RestoreSchema + `' AND nspname NOT LIKE 'pg\_temp\_%' AND nspname NOT LIKE 'pg\_toast\_temp\_%'
UNION ALL
SELECT 'extension ' || extname, extversion FROM pg_catalog.pg_extension`

// outsideObjects reads the fingerprint of everything outside the schema.
func (tg *target) outsideObjects(ctx context.Context) (map[string]string, error) {
	conn, err := tg.connectAs(ctx, "firedrill-setup")
	if err != nil {
		return nil, err
	}
	defer closeQuietly(conn)
	res := conn.ExecParams(ctx, outsideObjectsSQL, [][]byte{[]byte(tg.schema)}, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, fmt.Errorf("read the objects outside the schema %s: %w", tg.schema, res.Err)
	}
	objects := make(map[string]string, len(res.Rows))
	for _, row := range res.Rows {
		objects[string(row[0])] = string(row[1])
	}
	return objects, nil
}

// connectAs opens a plain session on the target.
func (tg *target) connectAs(ctx context.Context, appName string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(tg.connString)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	cfg.RuntimeParams["application_name"] = appName
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}

func closeQuietly(conn *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = conn.Close(ctx) // the session is done; an error saying goodbye changes nothing
}

// How long restoring settings may take: at most a few statements and a
// reload; on a server found frozen, one short try.
const (
	restoreWait       = 20 * time.Second
	frozenRestoreWait = 3 * time.Second
)

// restoreSettings puts back what settings events of this run, or of an
// earlier one that was killed, changed on the given server. It runs with
// its own deadline so that it also runs after Ctrl-C.
func (tg *target) restoreSettings(when string, wait time.Duration) error {
	if !tg.confined() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	restored, err := pgevent.RestoreSettings(ctx, tg.connString, tg.schema)
	for _, s := range restored {
		tg.logf("%s: restored setting %s", when, s)
	}
	if err != nil {
		return fmt.Errorf("%w\nThe server keeps settings this run changed; run 'firedrill restore' with the same --dsn once it answers", err)
	}
	return nil
}

// errOutside is returned when setup changed objects outside the schema.
var errOutside = errors.New("setup changed objects outside its schema")

// checkOutsideAfter says, at the end of a confined run, whether anything
// outside the schema changed while it ran (by this run's dynamic SQL or by
// another session: the fingerprint cannot tell which).
func (tg *target) checkOutsideAfter() {
	if !tg.confined() || tg.outsideBefore == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	backend.WarnChangedOutside(tg.logf, "the schema "+tg.schema, tg.outsideBefore, func() (map[string]string, error) { return tg.outsideObjects(ctx) })
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  ") }
