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
	"github.com/firedrill/firedrill/backend/postgres/pgevent"
	"github.com/firedrill/firedrill/scenario"
	pgtarget "github.com/firedrill/firedrill/target/postgres"
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
	c := pgtarget.Confinement{Schema: sc.Setup.Schema, Others: others}
	if c.Schema == "" {
		c.Schema = scenario.DefaultSchema
	}
	var problems []string
	report := func(at func(line, col int) string, sql string) {
		for _, e := range c.Escapes(sql) {
			problems = append(problems, fmt.Sprintf("%s: %s %s", at(e.Line, e.Col), e.Object, e.Why))
		}
	}
	backend.EachSQL(sc, pgevent.Statements, report, func(problem string) { problems = append(problems, problem) })
	if len(problems) > 0 {
		problems = append(problems, fmt.Sprintf("(firedrill keeps to the schema %s on a given server; qualify your own objects with %s. "+
			"or leave them unqualified, or run with --allow-outside-schema if you mean to change the rest of the database)", c.Schema, c.Schema))
	}
	return problems
}

// checkConfinement refuses a run whose SQL would reach outside its schema,
// before anything is run, unless --allow-outside-schema.
func (tg *target) checkConfinement(ctx context.Context, conn *pgconn.PgConn) error {
	if !tg.confined() || tg.spec.AllowOutsideSchema {
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
	if problems := ConfinementProblems(tg.sc, others); len(problems) > 0 {
		return fmt.Errorf("refusing to run: on a given server this scenario would reach outside the schema %s:\n  %s",
			tg.schema, joinLines(problems))
	}
	return nil
}

// outsideObjectsSQL fingerprints what lives outside the schema $1: each
// relation (a TRUNCATE, VACUUM FULL or rewrite changes its file node),
// function, trigger, schema and extension.
const outsideObjectsSQL = `SELECT 'relation ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       c.relkind::text || ' file ' || c.relfilenode || ' columns ' || c.relnatts
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname <> $1 AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
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
WHERE nspname <> $1 AND nspname NOT LIKE 'pg\_temp\_%' AND nspname NOT LIKE 'pg\_toast\_temp\_%'
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
