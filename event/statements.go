package event

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/firedrill/firedrill/scenario"
)

// The helpers below are the database-neutral parts of the kinds that SQL
// backends offer under the same names (sql, hold_transaction, settings,
// restart): how their keys decode and how a list of statements runs. Each
// backend's kind keeps only what its database does (connecting, executing,
// naming its errors).

// DecodeStatements decodes a statement or a list of them, none empty.
func DecodeStatements(v scenario.Value) []string {
	var statements []string
	for _, item := range v.List(true) {
		stmt, ok := item.Str()
		if !ok {
			continue
		}
		if strings.TrimSpace(stmt) == "" {
			item.Errorf("sql: empty statement")
			continue
		}
		statements = append(statements, stmt)
	}
	return statements
}

// DecodeWorkload decodes a key that names one of the scenario's workloads
// (a terminate event's workload), which is checked once the whole
// scenario is read.
func DecodeWorkload(d *scenario.EventDecoder, v scenario.Value) string {
	name, ok := v.Str()
	if !ok {
		return ""
	}
	d.WorkloadRef(v, name)
	return name
}

// DecodeIsolation decodes an isolation level among levels (lower case,
// words apart), spelled as a person may: "Repeatable Read",
// "repeatable_read"; ok is false (and v reported) for any other.
func DecodeIsolation(v scenario.Value, levels []string) (level string, ok bool) {
	s, ok := v.Str()
	if !ok {
		return "", false
	}
	level = strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(s))), " ")
	if !slices.Contains(levels, level) {
		v.Hintf("one of "+strings.Join(levels, ", "), "isolation: unknown isolation level %s", v.Quote())
		return "", false
	}
	return level, true
}

// DecodePositiveDuration decodes the event's duration key, which must be
// longer than 0s.
func DecodePositiveDuration(d *scenario.EventDecoder, v scenario.Value) time.Duration {
	duration, ok := v.Duration()
	if ok && duration <= 0 {
		v.Errorf("%s: duration must be longer than 0s", d.What())
	}
	return duration
}

// NeedEmbedded reports, once the whole scenario is read, an event that
// restarts the server (a restart event, settings with restart: true) in a
// scenario whose target is a given server (dsn set): firedrill restarts
// only the server it started. hintf is where the problem is reported (the
// event's decoder or one of its values), hint what to do.
func NeedEmbedded(d *scenario.EventDecoder, hintf func(hint, format string, args ...any), hint string) {
	what := d.What()
	d.Later(func(s *scenario.Scenario) {
		if !s.Target.Embedded() {
			hintf(hint, "%s: restart needs the embedded target, and dsn is set", what)
		}
	})
}

// DecodeSettings decodes a settings event's settings key: a mapping of
// names to values, not empty (example is one, for the hint), whose values
// hold no NUL byte and whose names validName (nil: any) accepts — names
// are spliced into the backend's statements, values quoted. notAName says
// what a name must be ("a parameter name").
func DecodeSettings(d *scenario.EventDecoder, v scenario.Value, example string, validName func(string) bool, notAName string) map[string]string {
	settings := v.Settings()
	if len(settings) == 0 && v.EmptyMapping() {
		v.Hintf("as in "+example, "%s: settings: empty", d.What())
	}
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		switch {
		case validName != nil && !validName(name):
			v.Errorf("settings: %q is not %s", name, notAName)
		case strings.ContainsRune(settings[name], 0):
			v.Errorf("settings.%s: the value holds a NUL byte", name)
		}
	}
	return settings
}

// DecodeRestart decodes a settings event's restart key, which a scenario
// may set only for the embedded server.
func DecodeRestart(d *scenario.EventDecoder, v scenario.Value) bool {
	restart, _ := v.Bool()
	if restart {
		NeedEmbedded(d, v.Hintf, "firedrill restarts only the server it started; remove dsn or restart")
	}
	return restart
}

// SummarizeSQL shortens a statement to one line of at most 60 characters
// for outcomes and messages.
func SummarizeSQL(sql string) string {
	const maxLen = 60
	line := strings.Join(strings.Fields(sql), " ")
	if utf8.RuneCountInString(line) <= maxLen {
		return line
	}
	runes := []rune(line)
	return string(runes[:maxLen-1]) + "…"
}

// StatementRunner is what an sql event of a backend gives RunStatements:
// how to run one statement in the event's session, and how its database
// names an error (the key and code recorded beside it, e.g. "sqlstate" and
// "40P01"; code "" records none).
type StatementRunner struct {
	Exec      func(ctx context.Context, stmt string) error
	ErrorCode func(err error) (key, code string)
}

// RunStatements runs an sql event's statements in order and stops at the
// first error, adding each one's timing to detail["statements"]; it
// returns the event's outcome ("ANALYZE TABLE t 35 ms; …"), detail and
// error (ctx's error when the run ended meanwhile).
func RunStatements(ctx context.Context, name string, statements []string, detail map[string]any, run StatementRunner) (string, map[string]any, error) {
	var timings []map[string]any
	var summary []string
	for i, stmt := range statements {
		begin := time.Now()
		err := run.Exec(ctx, stmt)
		elapsed := time.Since(begin)
		timing := map[string]any{"sql": SummarizeSQL(stmt), "seconds": elapsed.Seconds()}
		if err != nil {
			timing["error"] = err.Error()
			if key, code := run.ErrorCode(err); code != "" {
				timing[key] = code
			}
		}
		timings = append(timings, timing)
		detail["statements"] = timings
		if err != nil {
			summary = append(summary, fmt.Sprintf("%s failed after %s", SummarizeSQL(stmt), Took(elapsed)))
			if ctx.Err() != nil {
				return strings.Join(summary, "; "), detail, ctx.Err()
			}
			return strings.Join(summary, "; "), detail, fmt.Errorf("sql %s: statement %d (%s) failed after %s: %w",
				name, i+1, SummarizeSQL(stmt), Took(elapsed), err)
		}
		summary = append(summary, fmt.Sprintf("%s %s", SummarizeSQL(stmt), Took(elapsed)))
	}
	return strings.Join(summary, "; "), detail, nil
}
