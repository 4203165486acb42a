package pgevent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/event"
)

// RestoreSchema and RestoreTable are where, on a given server, firedrill
// remembers every setting a settings event changed with ALTER SYSTEM:
// what postgresql.auto.conf said before, and what firedrill wrote. The
// schema is the admin's, with no privilege granted to anyone (the role
// the scenario's SQL runs as cannot read or forge it), outside
// firedrill's schema (whose owner could drop anything in it). A row is
// written before each change, so a run killed at any moment leaves
// enough for the next run (or 'firedrill restore') to put the server back.
const (
	RestoreSchema = "firedrill_admin"
	RestoreTable  = "settings_restore"
)

// restoreTableDDL creates RestoreSchema.RestoreTable.
const restoreTableDDL = `CREATE SCHEMA IF NOT EXISTS ` + RestoreSchema + `;
REVOKE ALL ON SCHEMA ` + RestoreSchema + ` FROM PUBLIC;
CREATE TABLE IF NOT EXISTS ` + RestoreSchema + `.` + RestoreTable + ` (
	name       text PRIMARY KEY,        -- the setting, lower case
	had_value  boolean NOT NULL,        -- postgresql.auto.conf set it before the run
	original   text,                    -- the value it had there
	applied    text,                    -- the value firedrill wrote (NULL until written)
	run        text NOT NULL,           -- which firedrill process changed it
	changed_at timestamptz NOT NULL DEFAULT now());
REVOKE ALL ON ` + RestoreSchema + `.` + RestoreTable + ` FROM PUBLIC`

// restoreTable is the records' table, quoted.
const restoreTable = RestoreSchema + "." + RestoreTable

// untrustedSQL names the owner of a records table ($1.$2, by name: the
// admin may have no usage on the schema) or of its schema when that owner
// is neither a superuser nor the current (admin) role: a table someone
// else could write is not believed.
const untrustedSQL = `SELECT r.rolname FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_roles r ON r.oid IN (c.relowner, n.nspowner)
WHERE n.nspname = $1 AND c.relname = $2 AND NOT r.rolsuper AND r.rolname <> current_user LIMIT 1`

// recordsTable is a table of restore records: its schema and name.
type recordsTable struct{ schema, name string }

func (t recordsTable) String() string { return quoteIdent(t.schema) + "." + quoteIdent(t.name) }

// untrusted says who, other than a superuser or the admin, owns table or
// its schema ("" when nobody: the records are firedrill's alone).
func untrusted(ctx context.Context, s *session, table recordsTable) (string, error) {
	res, err := s.execParams(ctx, untrustedSQL, table.schema, table.name)
	if err != nil {
		return "", fmt.Errorf("check who owns %s: %w", table, err)
	}
	if len(res.Rows) == 0 {
		return "", nil
	}
	return string(res.Rows[0][0]), nil
}

// autoConfValueSQL reads a setting's line in postgresql.auto.conf, where
// ALTER SYSTEM writes (pg_file_settings needs the same privilege as
// ALTER SYSTEM itself on PostgreSQL 15: superuser).
const autoConfValueSQL = `SELECT setting FROM pg_catalog.pg_file_settings
WHERE lower(name) = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`

// Restored is one setting put back (or left alone) by RestoreSettings.
type Restored struct {
	Name string
	// What happened, e.g. "reset (was not in postgresql.auto.conf)",
	// "set back to 4MB", "left alone: changed to 8MB since by someone else".
	Outcome string
	// PendingRestart is set when the server still needs a restart for the
	// setting's running value to be the restored one.
	PendingRestart bool
}

func (r Restored) String() string {
	s := r.Name + ": " + r.Outcome
	if r.PendingRestart {
		s += " (takes effect at the server's next restart)"
	}
	return s
}

// recordOriginal notes a setting's value in postgresql.auto.conf before a
// settings event changes it, unless an earlier change of this run (or an
// unrestored one of a killed run) noted it already: the first original
// is the one to go back to.
func recordOriginal(ctx context.Context, s *session, name string) error {
	name = strings.ToLower(name)
	if _, err := s.exec(ctx, restoreTableDDL); err != nil {
		return fmt.Errorf("create %s to remember the settings to restore: %w", restoreTable, err)
	}
	if owner, err := untrusted(ctx, s, recordsTable{RestoreSchema, RestoreTable}); err != nil || owner != "" {
		if err == nil {
			err = fmt.Errorf("%s belongs to %s, not to a superuser or the admin role: firedrill will not record there what to restore (drop it)", restoreTable, owner)
		}
		return err
	}
	had, original, err := autoConfValue(ctx, s, name)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	run := fmt.Sprintf("pid %d on %s at %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	insert := `INSERT INTO ` + restoreTable + ` (name, had_value, original, run) VALUES ($1, $2, NULLIF($3, ''), $4)
ON CONFLICT (name) DO NOTHING`
	if _, err := s.execParams(ctx, insert, name, boolText(had), original, run); err != nil {
		return fmt.Errorf("remember %s's value to restore it: %w", name, err)
	}
	return nil
}

// recordApplied notes what postgresql.auto.conf says after the change, so
// that a restore can tell firedrill's value from someone else's later one.
func recordApplied(ctx context.Context, s *session, name string) error {
	name = strings.ToLower(name)
	_, value, err := autoConfValue(ctx, s, name)
	if err != nil {
		return err
	}
	update := `UPDATE ` + restoreTable + ` SET applied = $2 WHERE name = $1`
	if _, err := s.execParams(ctx, update, name, value); err != nil {
		return fmt.Errorf("remember %s's new value: %w", name, err)
	}
	return nil
}

// autoConfValue is a setting's value in postgresql.auto.conf, if any.
func autoConfValue(ctx context.Context, s *session, name string) (bool, string, error) {
	res, err := s.execParams(ctx, autoConfValueSQL, name)
	if err != nil {
		return false, "", fmt.Errorf("read %s from postgresql.auto.conf (pg_file_settings), to restore it after the run: %w"+
			"\nfiredrill changes settings only where it can put them back: connect as a superuser, or drop the settings event", name, err)
	}
	if len(res.Rows) == 0 {
		return false, "", nil
	}
	return true, string(res.Rows[0][0]), nil
}

// RestoreSettings puts back every setting that settings events changed on
// the server at connString and recorded in RestoreSchema.RestoreTable
// (or, as firedrill did before, in schema's own RestoreTable, which is
// then dropped), then reloads the configuration. A setting changed since
// by someone else is left alone and said so. It is safe to call when
// nothing was changed (the table or the schema may not exist) and after a
// run was killed.
func RestoreSettings(ctx context.Context, connString, schema string) ([]Restored, error) {
	env := &event.Env{ConnString: connString}
	s, err := connect(ctx, env, appNamePrefix+"restore")
	if err != nil {
		return nil, fmt.Errorf("restore settings: %w", err)
	}
	defer s.close(ctx)
	var done []Restored
	var names []string
	tables := []recordsTable{{RestoreSchema, RestoreTable}}
	if schema != "" {
		tables = append(tables, recordsTable{schema, RestoreTable}) // an older firedrill's records
	}
	for i, table := range tables {
		legacy := i > 0
		if !tableExists(ctx, s, table) {
			continue
		}
		owner, err := untrusted(ctx, s, table)
		if err != nil {
			return done, fmt.Errorf("restore settings: %w", err)
		}
		if owner != "" {
			// Writable by a role the scenario's SQL may run as: not believed.
			done = append(done, Restored{Name: table.String(), Outcome: "left alone: it belongs to " + owner + ", who could have written it"})
			continue
		}
		restored, changed, err := restoreFrom(ctx, s, table.String())
		done, names = append(done, restored...), append(names, changed...)
		if err != nil {
			return done, err
		}
		if legacy {
			if _, err := s.exec(ctx, "DROP TABLE IF EXISTS "+table.String()); err != nil {
				return done, fmt.Errorf("restore settings: drop the older records %s: %w", table, err)
			}
		}
	}
	if err := dropEmptyRecords(ctx, s); err != nil {
		return done, err
	}
	if len(names) == 0 {
		return done, nil
	}
	loadedBefore, err := s.queryValue(ctx, "SELECT pg_conf_load_time()")
	if err == nil {
		_, err = s.exec(ctx, "SELECT pg_reload_conf()")
	}
	if err == nil {
		err = waitReloaded(ctx, s, loadedBefore)
	}
	if err != nil {
		return done, fmt.Errorf("restore settings: reload the configuration: %w", err)
	}
	_, pending, err := readSettings(ctx, s, names)
	if err != nil {
		return done, fmt.Errorf("restore settings: %w", err)
	}
	for i := range done {
		for _, p := range pending {
			if done[i].Name == p {
				done[i].PendingRestart = true
			}
		}
	}
	return done, nil
}

// restoreFrom puts back the settings recorded in table, forgetting each
// row once done, and says which it set (to reload).
func restoreFrom(ctx context.Context, s *session, table string) (done []Restored, names []string, err error) {
	res, err := s.exec(ctx, "SELECT name, had_value, coalesce(original, ''), applied IS NOT NULL, coalesce(applied, '') FROM "+table+" ORDER BY name")
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // no table, no schema
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("restore settings: read %s: %w", table, err)
	}
	for _, row := range res[0].Rows {
		name, had, original := string(row[0]), string(row[1]) == "t", string(row[2])
		written, applied := string(row[3]) == "t", string(row[4])
		if !isSettingName(name) {
			return done, names, fmt.Errorf("restore settings: %s holds %q, which is not a setting's name", table, name)
		}
		curHas, cur, err := autoConfValue(ctx, s, name)
		if err != nil {
			return done, names, fmt.Errorf("restore settings: %w", err)
		}
		r := Restored{Name: name}
		switch {
		case curHas == had && (!had || cur == original):
			r.Outcome = "already as before the run"
		case !written || !curHas || cur != applied:
			now := "removed from postgresql.auto.conf"
			if curHas {
				now = "changed to " + cur
			}
			r.Outcome = fmt.Sprintf("left alone: %s since by someone else", now)
		case had:
			if _, err := s.exec(ctx, alterSystem(name, original)); err != nil {
				return done, names, fmt.Errorf("restore settings: set %s back to %s: %w", name, original, err)
			}
			r.Outcome = "set back to " + original
			names = append(names, name)
		default:
			if _, err := s.exec(ctx, "ALTER SYSTEM RESET "+name); err != nil {
				return done, names, fmt.Errorf("restore settings: reset %s: %w", name, err)
			}
			r.Outcome = "reset (it was not in postgresql.auto.conf before the run)"
			names = append(names, name)
		}
		if _, err := s.execParams(ctx, "DELETE FROM "+table+" WHERE name = $1", name); err != nil {
			return done, names, fmt.Errorf("restore settings: forget %s: %w", name, err)
		}
		done = append(done, r)
	}
	return done, names, nil
}

// dropEmptyRecords drops RestoreTable, and RestoreSchema if nothing else is
// in it, once no record is left, so that the server is as found; the lock
// makes a concurrent run's next record wait, then fail rather than vanish.
func dropEmptyRecords(ctx context.Context, s *session) error {
	records := recordsTable{RestoreSchema, RestoreTable}
	if !tableExists(ctx, s, records) {
		return nil
	}
	if owner, err := untrusted(ctx, s, records); err != nil || owner != "" {
		return err // not firedrill's to drop
	}
	_, err := s.exec(ctx, `BEGIN; LOCK TABLE `+restoreTable+` IN ACCESS EXCLUSIVE MODE;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM `+restoreTable+`) THEN
    DROP TABLE `+restoreTable+`;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = '`+RestoreSchema+`'::regnamespace)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc WHERE pronamespace = '`+RestoreSchema+`'::regnamespace) THEN
      DROP SCHEMA `+RestoreSchema+`;
    END IF;
  END IF;
END $$; COMMIT`)
	if err != nil {
		_, _ = s.exec(ctx, "ROLLBACK") // the error below is the one to report
		return fmt.Errorf("restore settings: drop the empty %s: %w", restoreTable, err)
	}
	return nil
}

// tableExists says whether table is there (by name, readable or not).
func tableExists(ctx context.Context, s *session, table recordsTable) bool {
	res, err := s.execParams(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p'))`, table.schema, table.name)
	return err == nil && len(res.Rows) == 1 && string(res.Rows[0][0]) == "t"
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
