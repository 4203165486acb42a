package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/mariadb/mdbevent"
	"github.com/firedrill/firedrill/scenario"
)

// On a given server (--dsn mysql://… or target.dsn) firedrill keeps to its
// own database (setup.schema, default "firedrill"). The server enforces it:
// setup, workloads and user-written SQL in events run as an account that
// has privileges on that database only (account.go). Before anything runs,
// SQL that names another database or changes the server (USE, CREATE
// DATABASE, GRANT, SET GLOBAL, executable comments, routines …) is refused
// too, as an early warning that needs no server (escapes.go). Global
// variables that settings events change are recorded, as the account of
// --dsn, in a database the confined account cannot reach
// (mdbevent.RecordsDatabase) and put back at the end, after Ctrl-C, and by
// the next run after a kill; and the other databases' tables are compared
// before and after, so that whatever changed them meanwhile is said.

// confined reports whether this run must keep to its database: a given
// server.
func (tg *target) confined() bool { return tg.inst == nil }

// Preflight refuses, before anything runs, SQL that would reach outside
// firedrill's database on a given server.
func (Backend) Preflight(spec backend.Spec) error {
	sc := spec.Scenario
	if err := checkModes(sc); err != nil {
		return err
	}
	given := spec.DSN != "" || !sc.Target.Embedded()
	if !given {
		return nil
	}
	if err := checkDatabaseName(sc); err != nil {
		return err
	}
	if spec.AllowOutsideSchema || spec.PrivilegesOnly {
		return nil
	}
	if problems := ConfinementProblems(sc); len(problems) > 0 {
		return fmt.Errorf("on a given server this scenario would reach outside the database %s:\n  %s",
			databaseOf(sc), strings.Join(problems, "\n  "))
	}
	return nil
}

// checkConfinement refuses a run whose SQL would reach outside its
// database, unless --allow-outside-schema, and says where SQL is built
// from strings that no check can read.
func (tg *target) checkConfinement() error {
	if tg.spec.AllowOutsideSchema || tg.spec.PrivilegesOnly {
		return nil
	}
	for _, note := range UnseenSQL(tg.sc) {
		tg.logf("note: %s", note)
	}
	if problems := ConfinementProblems(tg.sc); len(problems) > 0 {
		return fmt.Errorf("refusing to run: on a given server this scenario would reach outside the database %s:\n  %s",
			tg.database, strings.Join(problems, "\n  "))
	}
	return nil
}

// checkDatabaseName refuses setup.schema naming the database of
// firedrill's restore records, which the confined account must not reach.
func checkDatabaseName(sc *scenario.Scenario) error {
	if strings.EqualFold(databaseOf(sc), mdbevent.RecordsDatabase) {
		return &scenario.Error{File: sc.File, Pos: sc.Setup.Pos,
			Msg:  "setup.schema " + databaseOf(sc) + " is where firedrill keeps its restore records on a given server",
			Hint: "name another database"}
	}
	return nil
}

// UnseenSQL lists the places in sc's SQL that build SQL from strings
// (EXECUTE IMMEDIATE, PREPARE … FROM), which the lexical check cannot
// read: the confined account's privileges hold them in the database.
func UnseenSQL(sc *scenario.Scenario) []string {
	var notes []string
	report := func(where func(line, col int) string, text string) {
		for _, e := range escapes(databaseOf(sc), text) {
			if e.Unseen {
				notes = append(notes, fmt.Sprintf("%s: %s; the server's privileges keep it in the database %s", where(e.Line, e.Col), e.What, databaseOf(sc)))
			}
		}
	}
	backend.EachSQL(sc, report, func(string) {})
	return notes
}

// ConfinementProblems lists every place in sc's setup SQL, workload
// scripts and event SQL that would reach outside its database on a given
// server, each as "file:line:col: what (hint)".
func ConfinementProblems(sc *scenario.Scenario) []string {
	database := databaseOf(sc)
	var problems []string
	report := func(where func(line, col int) string, text string) {
		for _, e := range escapes(database, text) {
			if !e.Unseen {
				problems = append(problems, fmt.Sprintf("%s: %s", where(e.Line, e.Col), e.What))
			}
		}
	}
	backend.EachSQL(sc, report, func(problem string) { problems = append(problems, problem) })
	if len(problems) > 0 {
		problems = append(problems, fmt.Sprintf("(firedrill keeps to the database %s on a given server; leave your tables unqualified, "+
			"or run with --allow-outside-schema if you mean to change the rest of the server)", database))
	}
	return problems
}

// outsideObjectsSQL fingerprints what lives outside the database ? (and
// firedrill's records): each table and view (a rebuild changes its
// creation time), routine, trigger and database.
const outsideObjectsSQL = `SELECT CONCAT('table ', TABLE_SCHEMA, '.', TABLE_NAME),
       CONCAT(TABLE_TYPE, ' ', COALESCE(ENGINE, ''), ' created ', COALESCE(CREATE_TIME, ''))
FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN (?, '` + mdbevent.RecordsDatabase + `', 'information_schema', 'performance_schema', 'sys', 'mysql')
UNION ALL
SELECT CONCAT(LOWER(ROUTINE_TYPE), ' ', ROUTINE_SCHEMA, '.', ROUTINE_NAME), COALESCE(LAST_ALTERED, '')
FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA NOT IN (?, 'sys', 'mysql')
UNION ALL
SELECT CONCAT('trigger ', TRIGGER_SCHEMA, '.', TRIGGER_NAME), COALESCE(CREATED, '')
FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA NOT IN (?, 'sys', 'mysql')
UNION ALL
SELECT CONCAT('database ', SCHEMA_NAME), DEFAULT_CHARACTER_SET_NAME
FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN (?, '` + mdbevent.RecordsDatabase + `')`

// outsideObjects reads the fingerprint of everything outside the database.
func (tg *target) outsideObjects(ctx context.Context) (map[string]string, error) {
	db, err := tg.plainHandle()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, outsideObjectsSQL, tg.database, tg.database, tg.database, tg.database)
	if err != nil {
		return nil, fmt.Errorf("read the objects outside the database %s: %w", tg.database, connectHintIfNot(err))
	}
	defer rows.Close()
	objects := map[string]string{}
	for rows.Next() {
		var name, fingerprint string
		if err := rows.Scan(&name, &fingerprint); err != nil {
			return nil, fmt.Errorf("read the objects outside the database %s: %w", tg.database, err)
		}
		objects[name] = fingerprint
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the objects outside the database %s: %w", tg.database, err)
	}
	return objects, nil
}

// How long restoring settings may take: a few statements; on a server
// found frozen, one short try.
const (
	restoreWait       = 20 * time.Second
	frozenRestoreWait = 3 * time.Second
)

// closeWait is how long Close may take on a given server.
func closeWait(frozen bool) time.Duration {
	if frozen {
		return frozenRestoreWait
	}
	return restoreWait
}

// restoreSettings puts back what settings events of this run, or of an
// earlier one that was killed, changed on the given server. It runs with
// its own deadline, wait, so that it also runs after Ctrl-C and no longer
// than a frozen server's one short try.
func (tg *target) restoreSettings(parent context.Context, when string, wait time.Duration) error {
	if !tg.confined() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), wait)
	defer cancel()
	restored, err := mdbevent.RestoreSettings(ctx, tg.cfg, mdbevent.RecordsDatabase)
	for _, s := range restored {
		tg.logf("%s: restored setting %s", when, s)
	}
	if err != nil {
		var hint string
		if when == "after the run" {
			hint = "\nThe server keeps settings this run changed; run 'firedrill restore --dsn …' with the same server once it answers"
		}
		return fmt.Errorf("%w%s", connectHintIfNot(err), hint)
	}
	return nil
}

// errOutside is returned when setup changed objects outside the database.
var errOutside = errors.New("setup changed objects outside its database")

// checkOutsideAfter says, at the end of a run on a given server, whether
// anything outside the database changed while it ran (by this run's
// dynamic SQL or by another session: the fingerprint cannot tell which).
func (tg *target) checkOutsideAfter(ctx context.Context) {
	if !tg.confined() || tg.outsideBefore == nil {
		return
	}
	backend.WarnChangedOutside(tg.logf, "the database "+tg.database, tg.outsideBefore, func() (map[string]string, error) { return tg.outsideObjects(ctx) })
}

// Restore puts back the global variables that settings events changed on
// the server at dsn and recorded in firedrill's records (whatever the
// database firedrill works in), writing one line per variable, and drops
// the confined accounts of killed runs.
func (Backend) Restore(ctx context.Context, dsn, database string, w io.Writer) error {
	given, err := parseDSN(dsn)
	if err != nil {
		return err
	}
	restored, err := mdbevent.RestoreSettings(ctx, given.cfg, mdbevent.RecordsDatabase)
	for _, r := range restored {
		fmt.Fprintf(w, "%s\n", r)
	}
	var dropped []string
	if connector, cerr := mysql.NewConnector(given.cfg); cerr == nil {
		admin := sql.OpenDB(connector)
		dropped = dropLeftovers(ctx, admin)
		admin.Close()
	}
	for _, line := range dropped {
		fmt.Fprintf(w, "%s\n", line)
	}
	if err != nil {
		return err
	}
	if len(restored) == 0 && len(dropped) == 0 {
		fmt.Fprintf(w, "nothing to restore: no setting changed by firedrill is recorded in %s.%s, and no account of a killed run is left\n",
			mdbevent.RecordsDatabase, mdbevent.RestoreTable)
	}
	return nil
}

// plainHandle is a connection pool on the server without a database.
func (tg *target) plainHandle() (*sql.DB, error) {
	connector, err := mysql.NewConnector(tg.config(""))
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	return sql.OpenDB(connector), nil
}

// connectHintIfNot adds what to do to an error that is a failed
// connection (refused, wrong password), and leaves others as they are.
func connectHintIfNot(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if hint := hintFor(err); hint != "" {
		return fmt.Errorf("%w%s", err, hint)
	}
	return err
}

// checkModes refuses, at its file:line:col, a workload mode MariaDB's
// protocol does not have (PostgreSQL's extended).
func checkModes(sc *scenario.Scenario) error {
	var errs scenario.Errors
	for _, use := range sc.KindKeys {
		// The decoded value: written, from ${VAR} or from --set.
		if use.Key == "workloads.mode" && use.Value == "extended" {
			errs = append(errs, &scenario.Error{File: sc.File, Pos: use.Pos,
				Msg:  "mode: extended is PostgreSQL's protocol",
				Hint: "MariaDB's are simple (text queries) and prepared (server-side prepared statements)"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}
