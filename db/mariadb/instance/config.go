package mariadb

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// defaultSettings are the throwaway server's defaults, each overridable
// through Options.Settings:
//   - innodb_print_all_deadlocks ON: every deadlock goes to the error log,
//     so none is lost between two samples of SHOW ENGINE INNODB STATUS
//     (which keeps only the latest).
//   - max_connections 200: load runs open many clients, plus samplers; the
//     stock 151 is hit by ordinary scenarios (a backend sizes it for the
//     run's workloads).
//   - character_set_server utf8mb4: what applications use, and what
//     Debian's packaged server sets in /etc/mysql, which firedrill does
//     not read.
//
// innodb_flush_log_at_trx_commit, sync_binlog and the buffer pool keep
// their defaults on purpose: the product measures commit I/O, and a
// throwaway server that skips it would explain nothing about a real one.
func defaultSettings() map[string]string {
	return map[string]string{
		"innodb_print_all_deadlocks": "ON",
		"max_connections":            "200",
		"character_set_server":       "utf8mb4",
		"collation_server":           "utf8mb4_general_ci",
	}
}

// statementHistory turns on what performance_schema keeps of each
// session's statements (MariaDB leaves these consumers off), so that the
// lock sampler can name the last statement of an idle transaction that
// blocks others; given only with performance_schema on, which costs
// memory at start.
func statementHistory() map[string]string {
	return map[string]string{
		"performance_schema_consumer_events_statements_current": "ON",
		"performance_schema_consumer_events_statements_history": "ON",
	}
}

// normalizeSettings checks settings and spells their names as the server
// lists them (my.cnf accepts "query-cache-type" for query_cache_type).
func normalizeSettings(settings map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(settings))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		value := settings[name]
		canonical := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
		switch {
		case !isOptionName(name):
			errs = append(errs, fmt.Errorf("setting %q: not a valid MariaDB option name", name))
		case slices.Contains(managedSettings, strings.TrimPrefix(canonical, "loose_")):
			errs = append(errs, fmt.Errorf("setting %q: chosen by the throwaway server itself (its directory, port and socket)", name))
		case strings.ContainsAny(value, "\n\r\x00"):
			errs = append(errs, fmt.Errorf("setting %q: value contains a line break or NUL", name))
		case strings.Contains(value, `"`) && strings.Contains(value, "'"):
			errs = append(errs, fmt.Errorf("setting %q: value contains both kinds of quote, which an option file cannot hold", name))
		default:
			if _, dup := out[canonical]; dup {
				errs = append(errs, fmt.Errorf("setting %q: given twice (as %s)", name, canonical))
			}
			out[canonical] = value
		}
	}
	return out, errors.Join(errs...)
}

// CanonicalSettings spells settings' names as the server lists them and
// as Instance.Settings holds them, so that a caller can compare its own.
func CanonicalSettings(settings map[string]string) (map[string]string, error) {
	return normalizeSettings(settings)
}

// isOptionName accepts option names: letters, digits, '_', '-' and '.'
// (plugin options), starting with a letter.
func isOptionName(name string) bool {
	if name == "" || !isLetter(name[0]) {
		return false
	}
	for j := 1; j < len(name); j++ {
		c := name[j]
		if !(c == '_' || c == '-' || c == '.' || isLetter(c) || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// writeConfig writes the option file: settings in the [mariadbd] group,
// which mariadb-install-db's bootstrap server reads too.
func writeConfig(path string, settings map[string]string) error {
	var text strings.Builder
	text.WriteString("# Written by firedrill at every start of this throwaway server; edits are lost.\n[mariadbd]\n")
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		if settings[name] == "" {
			fmt.Fprintf(&text, "%s\n", name)
			continue
		}
		fmt.Fprintf(&text, "%s = %s\n", name, quoteOptionValue(settings[name]))
	}
	// World-readable so that the server, possibly running as another user, can read it.
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// quoteOptionValue quotes a value for an option file when it needs it: a
// '#' would start a comment, spaces at its ends would be trimmed, and a
// backslash starts an escape (\\ is one backslash).
func quoteOptionValue(value string) string {
	if value != strings.TrimSpace(value) || strings.ContainsAny(value, "#'\"\\;") {
		quote := `"`
		if strings.Contains(value, `"`) {
			quote = "'"
		}
		return quote + strings.ReplaceAll(value, `\`, `\\`) + quote
	}
	return value
}
