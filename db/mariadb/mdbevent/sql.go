package mdbevent

import (
	"context"

	"github.com/firedrill/firedrill/event"
)

// sqlKind is MariaDB's sql event: its statements (ALTER TABLE, OPTIMIZE
// TABLE, a bulk UPDATE …) run one by one in their own session, each in
// its own autocommit transaction. A statement still running when the run
// ends is killed (KILL QUERY).
var sqlKind = event.SQLKind(`{kind: sql, at: 90s, sql: "ANALYZE TABLE orders"}`, openStatements)

// openStatements opens an sql event's session, as the confined account
// on a given server.
func openStatements(ctx context.Context, env *event.Env, eventName string) (event.StatementSession, error) {
	appName := sessionAppName(eventName)
	s, err := connect(ctx, env, appName)
	if err != nil {
		return event.StatementSession{}, err
	}
	return event.StatementSession{
		Detail:    map[string]any{"connection_id": s.id, "program_name": appName},
		Exec:      func(ctx context.Context, stmt string) error { return s.exec(ctx, env, stmt) },
		ErrorCode: func(err error) (string, string) { return "code", errorCode(err) },
		Close:     s.close,
	}, nil
}
