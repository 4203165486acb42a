package mdbevent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
)

// Server error numbers the settings event tells apart.
const (
	errReadOnlyVariable = 1238 // ER_INCORRECT_GLOBAL_LOCAL_VAR: "is a read only variable"
	errSpecificAccess   = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR: SUPER needed
)

// settingsKind is MariaDB's settings event: it changes global variables
// with SET GLOBAL; those the server cannot change while it runs
// (innodb_autoinc_lock_mode, innodb_buffer_pool_instances …) restart the
// embedded server with them, and restart: true restarts it with all.
var settingsKind = event.SettingsKind(event.SettingsOptions{
	Example:    "settings: {innodb_lock_wait_timeout: 5}",
	ValidName:  variableName.MatchString,
	NotAName:   "a MariaDB variable name (letters, digits and _)",
	Restart:    true,
	CanRestart: func(env *event.Env) bool { t := targetOf(env); return t != nil && t.Restart != nil },
}, applySettings)

// variableName is what SET GLOBAL takes as a name: it is spliced into the
// statement.
var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// applySettings sets the variables in name order, as the account of
// --dsn. On a given server each change is recorded first (in
// RecordsDatabase) and put back at the end of the run; a variable that
// cannot change while the server runs is refused there, since firedrill
// restarts only its own server. On the embedded server such variables
// restart it with them, and the others are kept for any later restart.
//
// On a given server an event that fails puts back, at once, what it had
// changed, so that it leaves the server as it found it, and tells
// Target.Failed, which ends the run failed with the reason.
func applySettings(ctx context.Context, env *event.Env, run *event.SettingsRun) (string, map[string]any, error) {
	t := targetOf(env)
	appName := sessionAppName(run.Name)
	s, err := connectAdmin(ctx, env, appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
	}
	defer func() {
		if s != nil {
			s.close()
		}
	}() // s changes after a restart
	var changed []setBefore
	outcome, detail, err := setVariables(ctx, env, run, t, &s, &changed)
	if err == nil || t == nil || t.RestoreDatabase == "" {
		return outcome, detail, err
	}
	if ctx.Err() == nil {
		if undoErr := undo(ctx, env, run.Name, changed); undoErr != nil {
			err = fmt.Errorf("%w\n%v", err, undoErr)
		} else if len(changed) > 0 {
			err = fmt.Errorf("%w\n(put back what it had changed: %s)", err, namesOf(changed))
		}
		if t.Failed != nil {
			t.Failed(err)
		}
	}
	return outcome, detail, err
}

// setBefore is a global variable a settings event set, with its value
// just before.
type setBefore struct {
	name   string
	before sql.NullString
}

func namesOf(changed []setBefore) string {
	names := make([]string, len(changed))
	for i, c := range changed {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// undo sets back, newest first, what a failed settings event changed on
// a given server, and updates the records so that the end of the run
// knows the variables are as the event found them.
func undo(ctx context.Context, env *event.Env, eventName string, changed []setBefore) error {
	if len(changed) == 0 {
		return nil
	}
	ctx, cancel := event.CleanupContext(ctx)
	defer cancel()
	s, err := connectAdmin(ctx, env, sessionAppName(eventName))
	if err != nil {
		return fmt.Errorf("settings %s: put back %s: %w (the end of the run tries again)", eventName, namesOf(changed), err)
	}
	defer s.close()
	restoreDB := targetOf(env).RestoreDatabase
	var errs []error
	for i := len(changed) - 1; i >= 0; i-- {
		c := changed[i]
		value := "DEFAULT"
		if c.before.Valid {
			value = sqlValue(c.before.String)
		}
		if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = %s", c.name, value)); err != nil {
			errs = append(errs, fmt.Errorf("settings %s: put back %s: %w (the end of the run tries again)", eventName, c.name, err))
			continue
		}
		if err := recordApplied(ctx, s, restoreDB, c.name); err != nil {
			errs = append(errs, fmt.Errorf("settings %s: %w", eventName, err))
		}
	}
	return errors.Join(errs...)
}

// setVariables is applySettings's work; it appends each variable it sets
// to changed, with its value before, and keeps *sp the current session (a
// restart makes a new one).
func setVariables(ctx context.Context, env *event.Env, run *event.SettingsRun, t *Target, sp **session, changed *[]setBefore) (string, map[string]any, error) {
	s := *sp
	names, detail := run.Names, run.Detail
	run.Begin()

	restoreDB := ""
	if t != nil {
		restoreDB = t.RestoreDatabase
	}
	var static []string
	if !run.Restart {
		for _, name := range names {
			if restoreDB != "" {
				if t.OnRecord != nil {
					t.OnRecord()
				}
				if err := recordOriginal(ctx, s, restoreDB, name); err != nil {
					return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
				}
			}
			var before sql.NullString
			if err := s.conn.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&before); err != nil {
				return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: read %s: %w", run.Name, name, err))
			}
			stmt := setGlobal(name, run.Settings[name])
			err := s.exec(ctx, env, stmt)
			if err == nil {
				*changed = append(*changed, setBefore{name, before})
			}
			if myErr, ok := serverError(err); ok && myErr.Number == errReadOnlyVariable {
				static = append(static, name)
				continue
			}
			if myErr, ok := serverError(err); ok && myErr.Number == errSpecificAccess {
				return "", detail, fmt.Errorf("settings %s: %s: %w\nSET GLOBAL needs the SUPER (or SYSTEM_VARIABLES_ADMIN) privilege: connect as a user that has it, or drop the settings event", run.Name, stmt, err)
			}
			if err != nil {
				return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %s: %w", run.Name, stmt, err))
			}
			if restoreDB != "" {
				if err := recordApplied(ctx, s, restoreDB, name); err != nil {
					return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
				}
			}
		}
	}

	how := "SET GLOBAL"
	if len(static) > 0 || run.Restart {
		if t == nil || t.Restart == nil {
			detail["static"] = static
			return "", detail, fmt.Errorf("settings %s: %s cannot change while the server runs (a read-only variable); "+
				"firedrill restarts only the server it started: on a given server, set it in the server's configuration and restart it yourself, "+
				"or run the scenario on the embedded server", run.Name, strings.Join(static, ", "))
		}
		s.close()
		*sp = nil
		begin := time.Now()
		// All of them, so that the dynamic ones set above survive the restart too.
		if err := t.Restart(ctx, maps.Clone(run.Settings)); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: restart the server with %s: %w", run.Name, strings.Join(names, ", "), err))
		}
		took := time.Since(begin)
		detail["restart_seconds"] = took.Seconds()
		if len(static) > 0 {
			detail["static"] = static
		}
		how = "restarted in " + event.Took(took)
		reconnected, err := connectAdmin(ctx, env, sessionAppName(run.Name))
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: after the restart: %w", run.Name, err))
		}
		s = reconnected
		*sp = s
	} else if t != nil && t.Keep != nil {
		if err := t.Keep(maps.Clone(run.Settings)); err != nil {
			return "", detail, fmt.Errorf("settings %s: keep them for a later restart: %w", run.Name, err)
		}
	}

	effective := map[string]string{}
	for _, name := range names {
		value, err := s.queryValue(ctx, "SELECT @@GLOBAL."+name)
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: read back %s: %w", run.Name, name, err))
		}
		effective[name] = value
	}
	detail["effective"] = effective
	return event.SettingsOutcome(names, effective, how), detail, nil
}

// numeric matches the values SET GLOBAL takes unquoted: a quoted number
// is refused for a numeric variable ("Incorrect argument type").
var numeric = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$`)

// setGlobal is the statement that sets name to value: numbers bare,
// anything else (ON, a list, a path) as a string.
func setGlobal(name, value string) string {
	return fmt.Sprintf("SET GLOBAL %s = %s", name, sqlValue(value))
}

// sqlValue is value as SET takes it.
func sqlValue(value string) string {
	if numeric.MatchString(value) {
		return value
	}
	return quoteString(value)
}
