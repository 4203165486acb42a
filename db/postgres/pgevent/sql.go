package pgevent

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
		Example: `{kind: sql, at: 90s, sql: "VACUUM"}`,
		Decode:  decodeSQL,
	},
	Build: event.BuildWith(newSQL),
}

// sqlConfig is what an sql event takes.
type sqlConfig struct {
	SQL []string // run one by one, outside a transaction
}

func (c sqlConfig) statements() []string { return c.SQL }

func decodeSQL(d *scenario.EventDecoder) (any, time.Duration) {
	var c sqlConfig
	d.Key("sql", func(v scenario.Value) { c.SQL = event.DecodeStatements(v) })
	d.Need("sql")
	return c, 0
}

// sqlEvent runs statements one by one in its own session, outside a
// transaction, so that CREATE INDEX CONCURRENTLY, VACUUM and the like work.
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
// cancelled statement gets a cancel request; note that a cancelled CREATE
// INDEX CONCURRENTLY leaves an invalid index behind, as it does in psql.
func (e *sqlEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	s, err := connect(ctx, env, e.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("sql %s: %w", e.name, err))
	}
	defer s.close(ctx)

	detail := map[string]any{"pid": s.pid(), "application_name": e.appName}
	event.Notify(started, maps.Clone(detail))
	return event.RunStatements(ctx, e.name, e.statements, detail, event.StatementRunner{
		Exec: func(ctx context.Context, stmt string) error {
			_, err := s.exec(ctx, stmt)
			return err
		},
		ErrorCode: func(err error) (string, string) { return "sqlstate", sqlState(err) },
	})
}
