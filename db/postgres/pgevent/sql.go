package pgevent

import (
	"context"

	"github.com/firedrill/firedrill/event"
)

// sqlKind is PostgreSQL's sql event: its statements run one by one in
// their own session, outside a transaction, so that CREATE INDEX
// CONCURRENTLY, VACUUM and the like work. A cancelled statement gets a
// cancel request; note that a cancelled CREATE INDEX CONCURRENTLY leaves
// an invalid index behind, as it does in psql.
var sqlKind = event.SQLKind(`{kind: sql, at: 90s, sql: "VACUUM"}`, openStatements)

// openStatements opens an sql event's session, as the confined role on
// a given server.
func openStatements(ctx context.Context, env *event.Env, eventName string) (event.StatementSession, error) {
	appName := sessionAppName(eventName)
	s, err := connect(ctx, env, appName)
	if err != nil {
		return event.StatementSession{}, err
	}
	return event.StatementSession{
		Detail: map[string]any{"pid": s.pid(), "application_name": appName},
		Exec: func(ctx context.Context, stmt string) error {
			_, err := s.exec(ctx, stmt)
			return err
		},
		ErrorCode: func(err error) (string, string) { return "sqlstate", sqlState(err) },
		Close:     func() { s.close(ctx) },
	}, nil
}
