package mdbevent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/event"
)

// appNamePrefix tags the sessions of events (connection attribute
// program_name).
const appNamePrefix = "firedrill-event:"

// sessionAppName is the program_name of an event's session.
func sessionAppName(eventName string) string { return appNamePrefix + eventName }

// session is an event's own connection to the target.
type session struct {
	db   *sql.DB
	conn *sql.Conn
	id   int64 // CONNECTION_ID(), for KILL and for the timeline
	addr string
}

// connect opens a session on env's target as the run's user (on a given
// server, the confined account), tagged with appName.
func connect(ctx context.Context, env *event.Env, appName string) (*session, error) {
	return connectAs(ctx, env, appName, false)
}

// connectAdmin opens a session as the account of --dsn, for firedrill's
// own fixed statements: never for SQL a scenario wrote.
func connectAdmin(ctx context.Context, env *event.Env, appName string) (*session, error) {
	return connectAs(ctx, env, appName, true)
}

func connectAs(ctx context.Context, env *event.Env, appName string, admin bool) (*session, error) {
	t := targetOf(env)
	var cfg *mysql.Config
	switch {
	case t != nil && admin && t.adminConfig() != nil:
		cfg = t.adminConfig().Clone()
	case t != nil && t.Config != nil:
		cfg = t.Config.Clone()
	default:
		parsed, err := mysql.ParseDSN(env.ConnString)
		if err != nil {
			return nil, fmt.Errorf("connection settings: %w", err)
		}
		cfg = parsed
	}
	cfg.Logger = &mysql.NopLogger{}
	// An sql event's item may hold several statements ("UPDATE a; UPDATE
	// b"), as the mysql client would run them; firedrill's own statements
	// are one at a time.
	cfg.MultiStatements = !admin
	cfg.ConnectionAttributes = "program_name:" + strings.NewReplacer(",", " ", ":", " ").Replace(appName)
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, event.Cancelled(ctx, err))
	}
	s := &session{db: db, conn: conn, addr: cfg.Addr}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.id); err != nil {
		s.close()
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, event.Cancelled(ctx, err))
	}
	return s, nil
}

// exec runs one statement (its rows, if any, are read and dropped). If ctx
// ends meanwhile the statement is killed from another session (KILL QUERY),
// so that it does not run on in the server, and ctx's error is returned.
func (s *session) exec(ctx context.Context, env *event.Env, statement string) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
			s.killQuery(env)
		}
	}()
	rows, err := s.conn.QueryContext(context.WithoutCancel(ctx), statement)
	if err == nil {
		for {
			for rows.Next() {
			}
			if !rows.NextResultSet() {
				break
			}
		}
		err = errors.Join(rows.Err(), rows.Close())
	}
	if err != nil {
		return event.Cancelled(ctx, err)
	}
	return nil
}

// queryValue runs a query and returns the first column of its first row
// ("" for NULL).
func (s *session) queryValue(ctx context.Context, query string, args ...any) (string, error) {
	var value sql.NullString
	if err := s.conn.QueryRowContext(ctx, query, args...).Scan(&value); err != nil {
		return "", event.Cancelled(ctx, err)
	}
	return value.String, nil
}

// killQuery stops the statement the session runs, from a session of its
// own, within event.CleanupTimeout.
func (s *session) killQuery(env *event.Env) {
	ctx, cancel := event.CleanupContext(context.Background())
	defer cancel()
	killer, err := connectAdmin(ctx, env, appNamePrefix+"kill")
	if err != nil {
		return // closing the session (the caller's next step) ends it as surely
	}
	defer killer.close()
	_, _ = killer.conn.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", s.id))
}

// close drops the connection; the server rolls back whatever transaction
// was still open.
func (s *session) close() {
	// The session is done; an error saying goodbye changes nothing.
	_ = s.conn.Close()
	_ = s.db.Close()
}

// serverError is err's MySQL error, if it is one.
func serverError(err error) (*mysql.MySQLError, bool) {
	var myErr *mysql.MySQLError
	ok := errors.As(err, &myErr)
	return myErr, ok
}

// errorCode is "SQLSTATE/number" of a server error ("40001/1213"), or "".
func errorCode(err error) string {
	if myErr, ok := serverError(err); ok {
		return fmt.Sprintf("%s/%d", string(myErr.SQLState[:]), myErr.Number)
	}
	return ""
}

// quoteString quotes s as a MariaDB string literal.
func quoteString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// quoteIdent quotes a MariaDB identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
