package mdbevent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// sqlKind is how a scenario writes an sql event.
var sqlKind = event.Kind{
	EventKind: scenario.EventKind{
		Name:    "sql",
		Keys:    []string{"sql"},
		Example: `{kind: sql, at: 90s, sql: "ANALYZE TABLE orders"}`,
		Decode:  decodeSQL,
	},
	Build: event.BuildWith(newSQL),
}

// sqlConfig is what an sql event takes.
type sqlConfig struct {
	SQL []string // run one by one, each in its own autocommit transaction
}

func (c sqlConfig) statements() []string { return c.SQL }

func decodeSQL(d *scenario.EventDecoder) (any, time.Duration) {
	var c sqlConfig
	d.Key("sql", func(v scenario.Value) { c.SQL = event.DecodeStatements(v) })
	d.Need("sql")
	return c, 0
}

// sqlEvent runs statements one by one in its own session (ALTER TABLE,
// OPTIMIZE TABLE, a bulk UPDATE …).
type sqlEvent struct {
	name       string
	appName    string
	statements []string
}

var _ event.Event = (*sqlEvent)(nil)

func newSQL(spec scenario.Event, c sqlConfig) event.Event {
	return &sqlEvent{name: event.Name(spec), appName: sessionAppName(event.Name(spec)), statements: slices.Clone(c.SQL)}
}

// Run runs the statements in order and stops at the first error. A
// statement still running when the run ends is killed (KILL QUERY).
func (e *sqlEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	s, err := connect(ctx, env, e.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("sql %s: %w", e.name, err))
	}
	defer s.close()

	detail := map[string]any{"connection_id": s.id, "program_name": e.appName}
	event.Notify(started, maps.Clone(detail))
	return event.RunStatements(ctx, e.name, e.statements, detail, event.StatementRunner{
		Exec:      func(ctx context.Context, stmt string) error { return s.exec(ctx, env, stmt) },
		ErrorCode: func(err error) (string, string) { return "code", errorCode(err) },
	})
}
