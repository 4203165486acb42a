package pgevent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/event"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// appNamePrefix tags the sessions of events in pg_stat_activity.
const appNamePrefix = "firedrill-event:"

// maxAppName is the longest application_name the server keeps
// (NAMEDATALEN-1 bytes); longer ones are cut.
const maxAppName = 63

// sessionAppName is the application_name of an event's session, cut as
// the server would cut it so that what we report is what it shows.
func sessionAppName(eventName string) string {
	name := appNamePrefix + eventName
	for len(name) > maxAppName {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// cancelRequestWait is how long a statement may take to stop after a
// cancel request before its connection is closed under it.
const cancelRequestWait = 3 * time.Second

// session is an event's own connection to the target.
type session struct {
	conn      *pgconn.PgConn
	interrupt *interruptHandler
	notices   []*pgconn.Notice // warnings and notices of the last exec
}

// connect opens a session on env's target with the given application_name.
func connect(ctx context.Context, env *event.Env, appName string) (*session, error) {
	config, err := pgconn.ParseConfig(env.ConnString)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	config.RuntimeParams["application_name"] = appName
	if schema := schemaOf(env); schema != "" {
		// A startup parameter, so that RESET and DISCARD ALL return to it.
		config.RuntimeParams["search_path"] = quoteIdent(schema)
	}
	s := &session{}
	config.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
		s.interrupt = &interruptHandler{
			cancelRequest: &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cancelRequestWait},
			deadline:      &pgconn.DeadlineContextWatcherHandler{Conn: conn.Conn()},
		}
		return s.interrupt
	}
	// Called from within exec, on this goroutine.
	config.OnNotice = func(_ *pgconn.PgConn, notice *pgconn.Notice) { s.notices = append(s.notices, notice) }
	conn, err := pgconn.ConnectConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("connect to %s:%d: %w", config.Host, config.Port, event.Cancelled(ctx, err))
	}
	s.conn = conn
	return s, nil
}

// pid is the session's backend process id.
func (s *session) pid() int { return int(s.conn.PID()) }

// exec runs sql (one statement, or several in an implicit transaction)
// with the simple protocol. If ctx ends meanwhile the statement gets a
// cancel request, and ctx's error is returned.
func (s *session) exec(ctx context.Context, sql string) ([]*pgconn.Result, error) {
	s.notices = s.notices[:0]
	s.interrupt.idle.Store(false)
	results, err := s.conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, event.Cancelled(ctx, err)
	}
	return results, nil
}

// execParams runs one statement with text parameters (extended protocol).
func (s *session) execParams(ctx context.Context, sql string, params ...string) (*pgconn.Result, error) {
	s.notices = s.notices[:0]
	s.interrupt.idle.Store(false)
	values := make([][]byte, len(params))
	for i, p := range params {
		values[i] = []byte(p)
	}
	result := s.conn.ExecParams(ctx, sql, values, nil, nil, nil).Read()
	if result.Err != nil {
		return nil, event.Cancelled(ctx, result.Err)
	}
	return result, nil
}

// queryValue runs sql and returns the first column of its first row.
func (s *session) queryValue(ctx context.Context, sql string) (string, error) {
	results, err := s.exec(ctx, sql)
	if err != nil {
		return "", err
	}
	if len(results) == 0 || len(results[0].Rows) == 0 || len(results[0].Rows[0]) == 0 {
		return "", fmt.Errorf("%s: no rows", sql)
	}
	return string(results[0].Rows[0][0]), nil
}

// waitIdle leaves the session idle until ctx ends (returning ctx's error,
// with the session still usable), the server ends the session (returning
// why), or a notification arrives (returning nil).
func (s *session) waitIdle(ctx context.Context) error {
	// Nothing runs, so a cancel request would only be ignored by the
	// server, or worse, hit the statement we send next.
	s.interrupt.idle.Store(true)
	err := s.conn.WaitForNotification(ctx)
	if err != nil && ctx.Err() != nil && !s.conn.IsClosed() {
		return ctx.Err()
	}
	return err
}

// close says goodbye to the server within event.CleanupTimeout, then drops the
// connection. The server rolls back whatever transaction was still open.
func (s *session) close(ctx context.Context) {
	closeCtx, cancel := event.CleanupContext(ctx)
	defer cancel()
	// The connection is gone either way; an error saying goodbye tells
	// nothing the caller could act on.
	_ = s.conn.Close(closeCtx)
}

// interruptHandler is how a session's context cancellation reaches the
// server: a running statement gets a cancel request (closing the socket
// alone would leave the statement running on the server until it next
// writes to us), an idle wait just a read deadline.
type interruptHandler struct {
	cancelRequest *pgconn.CancelRequestContextWatcherHandler
	deadline      *pgconn.DeadlineContextWatcherHandler
	idle          atomic.Bool      // set by the session before each call
	active        ctxwatch.Handler // the one HandleCancel used, for HandleUnwatchAfterCancel
}

var _ ctxwatch.Handler = (*interruptHandler)(nil)

// HandleCancel starts interrupting the call in flight.
func (h *interruptHandler) HandleCancel(ctx context.Context) {
	if h.idle.Load() {
		h.active = h.deadline
	} else {
		h.active = h.cancelRequest
	}
	h.active.HandleCancel(ctx)
}

// HandleUnwatchAfterCancel makes the connection usable again, when it
// survived the interruption.
func (h *interruptHandler) HandleUnwatchAfterCancel() {
	h.active.HandleUnwatchAfterCancel()
}

// endedByServer reports whether err means the server ended the session
// (a FATAL error such as an idle-in-transaction timeout or
// pg_terminate_backend, or the connection dropping) and describes it as
// "FATAL: terminating connection due to administrator command (57P01)".
func (s *session) endedByServer(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC") {
		return fmt.Sprintf("%s: %s (%s)", pgErr.Severity, pgErr.Message, pgErr.Code), true
	}
	if s.conn.IsClosed() {
		return "connection lost: " + err.Error(), true
	}
	return "", false
}

// sqlState is the SQLSTATE of err, or "" when it has none.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// serverMajorVersion is the server's major version (15 for "15.18 (Debian
// …)"), or 0 when the server did not say.
func (s *session) serverMajorVersion() int {
	version := s.conn.ParameterStatus("server_version")
	end := strings.IndexFunc(version, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		version = version[:end]
	}
	major, err := strconv.Atoi(version)
	if err != nil {
		return 0
	}
	return major
}

// quoteLiteral quotes s as an SQL string literal that means s whatever
// standard_conforming_strings is: an E'…' literal when s has backslashes.
func quoteLiteral(s string) string {
	quoted := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		quoted = "E" + strings.ReplaceAll(quoted, `\`, `\\`)
	}
	return quoted
}
