package mdbevent

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/event"
)

// RestoreTable is the table, in RecordsDatabase on a given server, that
// remembers every global variable a settings event changed: its value
// before and the value firedrill set. It is written before each change, so
// a run killed at any moment leaves enough for the next run (or 'firedrill
// restore') to put the server back.
const RestoreTable = "settings_restore"

// RecordsDatabase is where firedrill keeps its restore records on a given
// server: a database of its own, written only by the account of --dsn,
// that the confined account setup, workloads and SQL events run as has no
// privilege on, so that no scenario can forge what the end of a run sets
// back (the database firedrill works in is the confined account's).
const RecordsDatabase = "firedrill_admin"

// restoreTableDDL creates RestoreTable in a database (%s, quoted).
const restoreTableDDL = `CREATE TABLE IF NOT EXISTS %s.` + RestoreTable + ` (
	name       VARCHAR(64) NOT NULL PRIMARY KEY, -- the variable, lower case
	original   TEXT NULL,                        -- @@GLOBAL before the run (NULL: it was NULL)
	applied    TEXT NULL,                        -- @@GLOBAL after firedrill's SET GLOBAL (NULL until set)
	was_set    BOOLEAN NOT NULL DEFAULT FALSE,   -- firedrill's SET GLOBAL went through
	run        VARCHAR(255) NOT NULL,            -- which firedrill process changed it
	changed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB`

// Restored is one variable put back (or left alone) by RestoreSettings.
type Restored struct {
	Name string
	// What happened, e.g. "set back to 50", "left alone: changed to 8
	// since by someone else".
	Outcome string
}

func (r Restored) String() string { return r.Name + ": " + r.Outcome }

// recordOriginal notes a variable's global value before a settings event
// changes it, unless an earlier change of this run (or an unrestored one
// of a killed run) noted it already: the first original is the one to go
// back to.
func recordOriginal(ctx context.Context, s *session, database, name string) error {
	for _, ddl := range []string{
		"CREATE DATABASE IF NOT EXISTS " + quoteIdent(database),
		fmt.Sprintf(restoreTableDDL, quoteIdent(database)),
	} {
		if _, err := s.conn.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("create %s.%s to remember the settings to restore: %w", database, RestoreTable, err)
		}
	}
	host, _ := os.Hostname()
	run := fmt.Sprintf("pid %d on %s at %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	insert := fmt.Sprintf("INSERT IGNORE INTO %s.%s (name, original, run) SELECT ?, @@GLOBAL.%s, ?",
		quoteIdent(database), RestoreTable, name)
	if _, err := s.conn.ExecContext(ctx, insert, name, run); err != nil {
		return fmt.Errorf("remember %s's value to restore it: %w", name, err)
	}
	return nil
}

// recordApplied notes the global value after the change, so that a restore
// can tell firedrill's value from someone else's later one.
func recordApplied(ctx context.Context, s *session, database, name string) error {
	update := fmt.Sprintf("UPDATE %s.%s SET applied = @@GLOBAL.%s, was_set = TRUE WHERE name = ?",
		quoteIdent(database), RestoreTable, name)
	if _, err := s.conn.ExecContext(ctx, update, name); err != nil {
		return fmt.Errorf("remember %s's new value: %w", name, err)
	}
	return nil
}

// RestoreSettings puts back every global variable that settings events
// changed on the server cfg reaches and recorded in database's
// RestoreTable. A variable changed since by someone else is left alone and
// said so. It is safe to call when nothing was changed (the table or the
// database may not exist) and after a run was killed.
func RestoreSettings(ctx context.Context, cfg *mysql.Config, database string) ([]Restored, error) {
	cfg = cfg.Clone()
	cfg.DBName = ""
	env := &event.Env{Backend: &Target{Config: cfg}}
	s, err := connect(ctx, env, appNamePrefix+"restore")
	if err != nil {
		return nil, fmt.Errorf("restore settings: %w", err)
	}
	defer s.close()
	table := quoteIdent(database) + "." + RestoreTable
	rows, err := s.conn.QueryContext(ctx, "SELECT name, original, applied, was_set FROM "+table+" ORDER BY name")
	if myErr, ok := serverError(err); ok && (myErr.Number == 1146 || myErr.Number == 1049) { // no table, no database
		return nil, nil
	}
	if myErr, ok := serverError(err); ok && (myErr.Number == 1142 || myErr.Number == 1044) {
		// Not readable by this account (or not there: the server says
		// the same), so not written by it either.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore settings: read %s: %w", table, err)
	}
	type recorded struct {
		name              string
		original, applied sql.NullString
		wasSet            bool
	}
	var all []recorded
	for rows.Next() {
		var r recorded
		if err := rows.Scan(&r.name, &r.original, &r.applied, &r.wasSet); err != nil {
			rows.Close()
			return nil, fmt.Errorf("restore settings: read %s: %w", table, err)
		}
		all = append(all, r)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("restore settings: read %s: %w", table, err)
	}
	var done []Restored
	for _, r := range all {
		if !variableName.MatchString(r.name) {
			return done, fmt.Errorf("restore settings: %s holds %q, which is no variable name", table, r.name)
		}
		var current sql.NullString
		if err := s.conn.QueryRowContext(ctx, "SELECT @@GLOBAL."+r.name).Scan(&current); err != nil {
			return done, fmt.Errorf("restore settings: read %s: %w", r.name, err)
		}
		out := Restored{Name: r.name}
		switch {
		case current == r.original:
			out.Outcome = "already as before the run"
		case !r.wasSet || current != r.applied:
			out.Outcome = fmt.Sprintf("left alone: changed to %s since by someone else", current.String)
		default:
			value := "DEFAULT"
			if r.original.Valid {
				value = sqlValue(r.original.String)
			}
			if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = %s", r.name, value)); err != nil {
				return done, fmt.Errorf("restore settings: set %s back to %s: %w", r.name, r.original.String, err)
			}
			out.Outcome = "set back to " + r.original.String
		}
		if _, err := s.conn.ExecContext(ctx, "DELETE FROM "+table+" WHERE name = ?", r.name); err != nil {
			return done, fmt.Errorf("restore settings: forget %s: %w", r.name, err)
		}
		done = append(done, out)
	}
	return done, nil
}
