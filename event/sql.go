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

// SQLConfig is what an sql event takes, whatever its database.
type SQLConfig struct {
	SQL []string // run one by one in the event's own session
}

func (c SQLConfig) statements() []string { return c.SQL }

// StatementSession is an sql event's own session, as its backend opened
// it: what the event runs its statements with.
type StatementSession struct {
	// Detail is what the timeline records of the session (its pid or
	// connection id, and its tag).
	Detail map[string]any
	// Exec runs one statement.
	Exec func(ctx context.Context, stmt string) error
	// ErrorCode is how the database names an error: the key and code
	// recorded beside it ("sqlstate", "40P01"); code "" records none.
	ErrorCode func(err error) (key, code string)
	// Close ends the session.
	Close func()
}

// OpenStatements opens an sql event's own session on env's server (as
// the account user-written SQL runs as), tagged for the event name.
type OpenStatements func(ctx context.Context, env *Env, eventName string) (StatementSession, error)

// SQLKind is the sql kind of a backend whose statements open runs;
// example is a whole event, for hints.
func SQLKind(example string, open OpenStatements) Kind {
	return Kind{
		EventKind: scenario.EventKind{
			Name:    "sql",
			Keys:    []string{"sql"},
			Example: example,
			Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
				var c SQLConfig
				d.Key("sql", func(v scenario.Value) { c.SQL = decodeStatements(v) })
				d.Need("sql")
				return c, 0
			},
		},
		Build: BuildWith(func(spec scenario.Event, c SQLConfig) Event {
			return &sqlEvent{name: Name(spec), statements: slices.Clone(c.SQL), open: open}
		}),
	}
}

// sqlEvent runs statements one by one in its own session, each on its
// own (outside a transaction on PostgreSQL, so that CREATE INDEX
// CONCURRENTLY and VACUUM work; autocommit on MariaDB).
type sqlEvent struct {
	name       string
	statements []string
	open       OpenStatements
}

var _ Event = (*sqlEvent)(nil)

// Run runs the statements in order and stops at the first error; a
// statement still running when ctx ends is cancelled by the backend's
// session.
func (e *sqlEvent) Run(ctx context.Context, env *Env, started Started) (string, map[string]any, error) {
	s, err := e.open(ctx, env, e.name)
	if err != nil {
		return "", nil, Cancelled(ctx, fmt.Errorf("sql %s: %w", e.name, err))
	}
	defer s.Close()
	detail := s.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	Notify(started, maps.Clone(detail))
	return runStatements(ctx, e.name, e.statements, detail, s)
}

// Statements lists the SQL an event runs as the scenario wrote it (the
// statements of sql and hold_transaction events), so that a backend can
// check before the run that they stay where they are confined; nil for
// the other kinds.
func Statements(spec scenario.Event) []string {
	if s, ok := spec.Config.(interface{ statements() []string }); ok {
		return s.statements()
	}
	return nil
}

// DecodeItems decodes a string or a list of them (a lone string stands
// for a list of one) with parse, which reports a bad item at its
// file:line:col and says ok false to leave it out.
func DecodeItems[T any](v scenario.Value, parse func(item scenario.Value, text string) (T, bool)) []T {
	var out []T
	for _, item := range v.List(true) {
		text, ok := item.Str()
		if !ok {
			continue
		}
		if parsed, ok := parse(item, text); ok {
			out = append(out, parsed)
		}
	}
	return out
}

// decodeStatements decodes a statement or a list of them, none empty.
func decodeStatements(v scenario.Value) []string {
	return DecodeItems(v, func(item scenario.Value, stmt string) (string, bool) {
		if strings.TrimSpace(stmt) == "" {
			item.Errorf("sql: empty statement")
			return "", false
		}
		return stmt, true
	})
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

// runStatements runs an sql event's statements in order in s and stops
// at the first error, adding each one's timing to detail["statements"];
// it returns the event's outcome ("ANALYZE TABLE t 35 ms; …"), detail and
// error (ctx's error when the run ended meanwhile).
func runStatements(ctx context.Context, name string, statements []string, detail map[string]any, s StatementSession) (string, map[string]any, error) {
	var timings []map[string]any
	var summary []string
	for i, stmt := range statements {
		begin := time.Now()
		err := s.Exec(ctx, stmt)
		elapsed := time.Since(begin)
		timing := map[string]any{"sql": SummarizeSQL(stmt), "seconds": elapsed.Seconds()}
		if err != nil {
			timing["error"] = err.Error()
			if key, code := s.ErrorCode(err); code != "" {
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
