package pgevent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
)

// reloadWait bounds how long a settings event waits for the server to
// re-read its configuration after pg_reload_conf().
const reloadWait = 10 * time.Second

// listQuotedSettings are the settings whose value is a list of quoted
// names (GUC_LIST_QUOTE): ALTER SYSTEM needs each element as its own
// literal, or it takes 'a,b' for a single name "a,b" — which, for
// shared_preload_libraries, keeps the server from starting. The server
// does not expose the flag; pg_dump keeps the same list
// (variable_is_guc_list_quote).
var listQuotedSettings = []string{
	"local_preload_libraries", "search_path", "session_preload_libraries",
	"shared_preload_libraries", "temp_tablespaces", "unix_socket_directories",
}

// settingsKind is PostgreSQL's settings event: ALTER SYSTEM SET each,
// then reload the configuration or restart the server.
var settingsKind = event.SettingsKind(event.SettingsOptions{
	Example:   "settings: {work_mem: 64MB}",
	ValidName: isSettingName,
	NotAName:  "a parameter name",
	Restart:   true,
}, applySettings)

// applySettings applies the settings in name order, then reloads or
// restarts, and checks what the server made of them: a setting that needs
// a restart the event was not allowed to do is an error. On a given
// server (a Target with a Schema in env.Backend) each change is recorded
// first (in RestoreSchema, as the admin), and RestoreSettings puts them
// all back at the end of the run; on the embedded server they stay, as
// the server is thrown away.
func applySettings(ctx context.Context, env *event.Env, run *event.SettingsRun) (string, map[string]any, error) {
	// Firedrill's own statements: as the admin, never as the confined role.
	given := schemaOf(env) != ""
	env = adminEnv(env)
	appName := sessionAppName(run.Name)
	s, err := connect(ctx, env, appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
	}
	defer func() { s.close(ctx) }() // s changes after a restart

	detail := run.Detail
	run.Begin()

	loadedBefore, err := s.queryValue(ctx, "SELECT pg_conf_load_time()")
	if err != nil {
		return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
	}
	for _, name := range run.Names {
		// On a given server, what the change replaces is noted first
		// (committed), so that the end of the run, or the next run after a
		// kill, can put it back.
		if given {
			if t := targetOf(env); t != nil && t.OnRecord != nil {
				t.OnRecord()
			}
			if err := recordOriginal(ctx, s, name); err != nil {
				return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
			}
		}
		stmt := alterSystem(name, run.Settings[name])
		if _, err := s.exec(ctx, stmt); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %s: %w", run.Name, stmt, err))
		}
		if given {
			if err := recordApplied(ctx, s, name); err != nil {
				return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
			}
		}
	}

	var how string
	if run.Restart {
		s.close(ctx)
		begin := time.Now()
		if err := env.Restart(ctx); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: restart the server: %w", run.Name, err))
		}
		restartTook := time.Since(begin)
		detail["restart_seconds"] = restartTook.Seconds()
		how = "restarted in " + event.Took(restartTook)
		reconnected, err := connect(ctx, env, appName)
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: after the restart: %w", run.Name, err))
		}
		s = reconnected
	} else {
		if _, err := s.exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: reload: %w", run.Name, err))
		}
		if err := waitReloaded(ctx, s, loadedBefore); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
		}
		how = "reloaded"
	}

	effective, pending, err := readSettings(ctx, s, run.Names)
	if err != nil {
		return "", detail, event.Cancelled(ctx, fmt.Errorf("settings %s: %w", run.Name, err))
	}
	detail["effective"] = effective
	if len(pending) > 0 {
		verb := "needs"
		if len(pending) > 1 {
			verb = "need"
		}
		outcome := fmt.Sprintf("%s %s a restart; set restart: true", strings.Join(pending, ", "), verb)
		if run.Restart {
			outcome = fmt.Sprintf("%s still pending a restart after the restart", strings.Join(pending, ", "))
		}
		detail["pending_restart"] = pending
		return outcome, detail, fmt.Errorf("settings %s: %s", run.Name, outcome)
	}
	return event.SettingsOutcome(run.Names, effective, how), detail, nil
}

// waitReloaded waits until this session has re-read the configuration
// files: pg_reload_conf() only signals the postmaster, which then signals
// every backend, so pg_settings lags it a little.
func waitReloaded(ctx context.Context, s *session, loadedBefore string) error {
	deadline := time.Now().Add(reloadWait)
	for {
		loaded, err := s.queryValue(ctx, "SELECT pg_conf_load_time()")
		if err != nil {
			return err
		}
		if loaded != loadedBefore {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not re-read its configuration within %s of pg_reload_conf() "+
				"(an error in postgresql.conf? see the server log)", reloadWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readSettings returns the current value of each setting (as SHOW prints
// it) and the names still waiting for a restart.
func readSettings(ctx context.Context, s *session, names []string) (effective map[string]string, pending []string, err error) {
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = quoteLiteral(strings.ToLower(name))
	}
	query := "SELECT lower(name), current_setting(name), pending_restart FROM pg_settings WHERE lower(name) IN (" +
		strings.Join(quoted, ", ") + ")"
	results, err := s.exec(ctx, query)
	if err != nil {
		return nil, nil, fmt.Errorf("read back the settings: %w", err)
	}
	found := map[string][2]string{}
	for _, row := range results[0].Rows {
		found[string(row[0])] = [2]string{string(row[1]), string(row[2])}
	}
	effective = map[string]string{}
	for _, name := range names {
		row, ok := found[strings.ToLower(name)]
		if !ok {
			continue // a custom (extension) setting nothing has defined yet
		}
		effective[name] = row[0]
		if row[1] == "t" {
			pending = append(pending, name)
		}
	}
	return effective, pending, nil
}

// alterSystem is the ALTER SYSTEM statement that sets name to value.
// Names are checked by isSettingName and folded to lower case, as the
// server does with unquoted names.
func alterSystem(name, value string) string {
	name = strings.ToLower(name)
	if !slices.Contains(listQuotedSettings, name) || strings.TrimSpace(value) == "" {
		return fmt.Sprintf("ALTER SYSTEM SET %s = %s", name, quoteLiteral(value))
	}
	elements := splitList(value)
	quoted := make([]string, len(elements))
	for i, element := range elements {
		quoted[i] = quoteLiteral(element)
	}
	return fmt.Sprintf("ALTER SYSTEM SET %s = %s", name, strings.Join(quoted, ", "))
}

// splitList splits a list value as postgresql.conf writes it
// ('"$user", public') into its elements, as the server would: double
// quotes keep case and blanks, unquoted names are folded to lower case.
func splitList(value string) []string {
	var elements []string
	var element strings.Builder
	inQuotes := false
	for i := 0; i < len(value); i++ {
		c := value[i]
		switch {
		case c == '"' && inQuotes && i+1 < len(value) && value[i+1] == '"':
			element.WriteByte('"')
			i++
		case c == '"':
			inQuotes = !inQuotes
		case inQuotes:
			element.WriteByte(c)
		case c == ',':
			elements = append(elements, element.String())
			element.Reset()
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			// blanks around unquoted names separate nothing
		case c >= 'A' && c <= 'Z':
			element.WriteByte(c + 'a' - 'A')
		default:
			element.WriteByte(c)
		}
	}
	return append(elements, element.String())
}

// isSettingName accepts parameter names, including extension ones
// ("pg_stat_statements.track").
func isSettingName(name string) bool {
	if name == "" || !(name[0] == '_' || isLetter(name[0])) {
		return false
	}
	for j := 1; j < len(name); j++ {
		c := name[j]
		if !(c == '_' || c == '.' || isLetter(c) || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
