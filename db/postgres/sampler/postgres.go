// Package postgres samples PostgreSQL's statistics views on one shared
// connection: one file per source, each with its SQL in a named variable
// keyed by server version (pgwatch style) and a doc comment that lists every
// value key it emits. Every statement carries the marker comment
// /* firedrill-sampler */ and the session is tagged with its application
// name, so the samplers can leave themselves out of what they report.
package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/firedrill/firedrill/sampler"
)

// Marker starts every SQL text the samplers send, so that they can exclude
// their own statements (pg_stat_statements) and so that a DBA reading the
// server log knows who asked.
const Marker = "/* firedrill-sampler */"

// DefaultAppName is the application_name of the samplers' session; every
// application_name starting with it is left out of what samplers report.
const DefaultAppName = "firedrill-sampler"

// MinVersion is the oldest server version (server_version_num) supported.
const MinVersion = 130000

// A query is bounded twice: by the server's statement_timeout, which
// leaves the connection usable, and, for a server that does not answer, by
// a client deadline clientMargin later that sends a cancel request and
// closes the connection if even that goes unanswered for cancelGrace (the
// next query then reconnects).
const (
	clientMargin = 250 * time.Millisecond
	cancelGrace  = time.Second
)

// reconnectPause is how long after a failed connection attempt queries
// fail at once instead of trying again: while the server is down, a tick
// of many samplers costs one attempt, not one per sampler.
const reconnectPause = time.Second

// minConnectTimeout bounds a connection attempt from below: a new session
// costs more than a sampler query (authentication, a cold catalog cache).
const minConnectTimeout = 2 * time.Second

// Options configure the samplers' session.
type Options struct {
	// Timeout bounds each query; 0 = 2s. It also bounds each connection
	// attempt (but not below 2s) unless the connection string sets
	// connect_timeout.
	Timeout time.Duration
	AppName string // application_name of the session; "" = DefaultAppName
	// CreateStatements lets New create the pg_stat_statements extension
	// when its library is preloaded but the extension is missing. Only for
	// a server firedrill started: it never changes one it was pointed at.
	CreateStatements bool
}

// Set is the samplers of one PostgreSQL server, sharing one connection.
// Its samplers are meant to be run one after another (as a tick does), not
// concurrently; a mutex keeps concurrent use safe but serial.
type Set struct {
	session  *session
	samplers []sampler.Sampler
	notes    map[string]string // sampler name → what it cannot read here
}

// New connects to the server, checks what it offers (version, extensions)
// and returns its samplers. With Options.CreateStatements it creates
// pg_stat_statements when the library is preloaded and the extension is
// missing.
func New(ctx context.Context, connString string, opts Options) (*Set, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.AppName == "" {
		opts.AppName = DefaultAppName
	}
	config, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("sampler connection settings: %w", err)
	}
	config.RuntimeParams["application_name"] = opts.AppName
	// The server gives up on a slow sampler query by itself, so that a
	// timeout leaves the connection usable.
	config.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.Timeout.Milliseconds(), 10)
	// Compiling a sampler query would cost more than running it.
	config.RuntimeParams["jit"] = "off"
	if config.ConnectTimeout == 0 {
		config.ConnectTimeout = max(opts.Timeout, minConnectTimeout)
	}
	// A cancelled query sends a cancel request instead of closing the
	// connection (pgx's default).
	config.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cancelGrace}
	}
	// Statements are not prepared: works through transaction poolers and
	// after a restart without a stale statement cache.
	config.DefaultQueryExecMode = pgx.QueryExecModeExec

	s := &session{config: config, timeout: opts.Timeout}
	set := &Set{session: s, notes: map[string]string{}}
	if err := set.discover(ctx, opts); err != nil {
		s.close()
		return nil, err
	}
	return set, nil
}

// discover reads the server version, enables what can be enabled and
// builds the samplers that work on this server.
func (set *Set) discover(ctx context.Context, opts Options) error {
	s := set.session
	var versionNum int
	var preload string
	err := s.query(ctx, "read server version",
		Marker+" SELECT current_setting('server_version_num')::int, current_setting('shared_preload_libraries')",
		nil, func(rows pgx.Rows) error { return rows.Scan(&versionNum, &preload) })
	if err != nil {
		return err
	}
	if versionNum < MinVersion {
		return fmt.Errorf("PostgreSQL %d is not supported by the samplers: they need %d or later", versionNum, MinVersion)
	}
	s.version = versionNum

	statements, note := setupStatements(ctx, s, preload, opts.CreateStatements)
	if note != "" {
		set.notes[statementsName] = note
	}
	set.samplers = sources(s)
	if statements != nil {
		set.samplers = append(set.samplers, statements)
	}
	for _, smp := range set.samplers {
		if noter, ok := smp.(sampler.Noter); ok && noter.Note() != "" {
			set.notes[smp.Name()] = noter.Note()
		}
	}
	return nil
}

// sources are the samplers every server has, on session s, in the order
// a tick reads them; each says its own cadence (sampler.Momentary).
func sources(s *session) []sampler.Sampler {
	return []sampler.Sampler{
		&activity{session: s},
		&xminHorizon{session: s},
		&locks{session: s},
		&database{session: s},
		&databaseAges{session: s},
		&slru{session: s},
		&userTables{session: s},
		&wal{session: s},
	}
}

// Samplers are the samplers that work on this server, in a fixed order.
func (set *Set) Samplers() []sampler.Sampler { return slices.Clone(set.samplers) }

// Notes says, per sampler name, what cannot be sampled on this server and
// why (including samplers left out of Samplers altogether).
func (set *Set) Notes() map[string]string { return maps.Clone(set.notes) }

// VersionNum is the server's server_version_num, e.g. 150008.
func (set *Set) VersionNum() int { return set.session.version }

// Settings snapshots the server's configuration: pg_settings name → the
// value as current_setting shows it, with its unit ("128MB", "on"). It is
// read on a fresh session without the samplers' own parameters (their
// statement_timeout), so it shows what a new client session gets.
func (set *Set) Settings(ctx context.Context) (map[string]string, error) {
	config := set.session.config.Copy()
	config.RuntimeParams = map[string]string{"application_name": DefaultAppName + "-settings"}
	ctx, cancel := context.WithTimeout(ctx, max(set.session.timeout, 2*time.Second)+2*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("read pg_settings: %w", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, Marker+" SELECT name, coalesce(current_setting(name, true), setting, '') FROM pg_settings")
	if err != nil {
		return nil, fmt.Errorf("read pg_settings: %w", err)
	}
	settings := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read pg_settings: %w", err)
		}
		settings[name] = value
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pg_settings: %w", err)
	}
	return settings, nil
}

// Close ends the samplers' session.
func (set *Set) Close() { set.session.close() }

// session is the one connection the samplers of a Set share. It reconnects
// when the connection was lost (a server restart, a terminated backend),
// so that the run goes on.
type session struct {
	config  *pgx.ConnConfig
	timeout time.Duration
	version int // server_version_num

	mu   sync.Mutex // serialises queries; guards the fields below
	conn *pgx.Conn
	// The last failed connection attempt, repeated instead of a new
	// attempt during reconnectPause.
	connectErr    error
	connectFailed time.Time
}

// query runs sql with args under the per-query timeout and calls scan for
// each row; what names the query in errors. A query that fails because the
// connection was lost is retried once on a new connection: all sampler
// queries are safe to repeat.
func (s *session) query(ctx context.Context, what, sql string, args []any, scan func(pgx.Rows) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		reconnected := false
		if s.conn == nil || s.conn.IsClosed() {
			if err := s.connect(ctx); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			reconnected = true
		}
		queryCtx, cancel := context.WithTimeout(ctx, s.timeout+clientMargin)
		err := runQuery(queryCtx, s.conn, sql, args, scan)
		timedOut := queryCtx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		lost := s.conn.IsClosed() && !timedOut && ctx.Err() == nil
		if !lost || reconnected || attempt > 1 {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// runQuery sends one query and reads all its rows.
func runQuery(ctx context.Context, conn *pgx.Conn, sql string, args []any, scan func(pgx.Rows) error) error {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// connect opens a new connection, dropping the old one. Called with mu held.
func (s *session) connect(ctx context.Context) error {
	if s.conn != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), s.timeout)
		_ = s.conn.Close(closeCtx) // the connection is already lost; only its resources go
		cancel()
		s.conn = nil
	}
	if s.connectErr != nil && time.Since(s.connectFailed) < reconnectPause {
		return s.connectErr
	}
	conn, err := pgx.ConnectConfig(ctx, s.config)
	if err != nil {
		s.connectErr = fmt.Errorf("connect to %s: %w", s.addr(), err)
		s.connectFailed = time.Now()
		return s.connectErr
	}
	s.conn, s.connectErr = conn, nil
	return nil
}

// addr names the server for error messages, never with a password.
func (s *session) addr() string {
	return fmt.Sprintf("%s:%d", s.config.Host, s.config.Port)
}

// close ends the connection.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		_ = s.conn.Close(ctx) // Terminate is a courtesy; the socket is closed either way
		cancel()
		s.conn = nil
	}
}

// queryFloats runs sql, whose columns are all float8, and returns each row
// as column name → value; NULLs are left out.
func (s *session) queryFloats(ctx context.Context, what, sql string, args ...any) ([]map[string]float64, error) {
	var result []map[string]float64
	err := s.query(ctx, what, sql, args, func(rows pgx.Rows) error {
		fields := rows.FieldDescriptions()
		cells := make([]*float64, len(fields))
		targets := make([]any, len(fields))
		for i := range cells {
			targets[i] = &cells[i]
		}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		row := make(map[string]float64, len(fields))
		for i, field := range fields {
			if cells[i] != nil {
				row[field.Name] = *cells[i]
			}
		}
		result = append(result, row)
		return nil
	})
	return result, err
}

// versioned is SQL keyed by the oldest server_version_num it works on
// (pgwatch style): a server runs the text of the highest key ≤ its version.
type versioned map[int]string

// pick returns the text for a server version.
func (v versioned) pick(version int) (string, error) {
	best := -1
	for key := range v {
		if key <= version && key > best {
			best = key
		}
	}
	if best < 0 {
		return "", fmt.Errorf("no query for PostgreSQL version %d", version)
	}
	return v[best], nil
}

// notSampler is the WHERE condition that leaves out the samplers' sessions
// (this one by pid, any firedrill sampler by application_name) from a
// pg_stat_activity row aliased a.
const notSampler = `a.pid <> pg_backend_pid()
	AND coalesce(a.application_name, '') NOT LIKE 'firedrill-sampler%'
	AND a.application_name IS DISTINCT FROM current_setting('application_name')`

// seriesKind says how a column becomes a value.
type seriesKind uint8

const (
	gauge       seriesKind = iota // the column as read
	perSecond                     // a counter's growth per second
	perInterval                   // a counter's growth in the interval
)

// series maps a column of a statistics view to a value key.
type series struct {
	column string
	key    string
	kind   seriesKind
}

// emitSeries adds to values the series whose columns are in reading (keys
// of reading and of values are prefixed by prefix), gauges as read and
// counters as their change over iv.
func emitSeries(values map[string]float64, specs []series, prefix string, reading map[string]float64, iv sampler.Interval) {
	for _, spec := range specs {
		column := prefix + spec.column
		switch spec.kind {
		case gauge:
			if v, ok := reading[column]; ok {
				values[prefix+spec.key] = v
			}
		case perSecond:
			if v, ok := iv.Rate(column); ok {
				values[prefix+spec.key] = v
			}
		case perInterval:
			if v, ok := iv.Delta(column); ok {
				values[prefix+spec.key] = v
			}
		}
	}
}

// hitRate is hits/(hits+reads) over the interval; ok is false when there
// was no access (or nothing is known about the interval).
func hitRate(iv sampler.Interval, hitColumn, readColumn string) (rate float64, ok bool) {
	hits, ok1 := iv.Delta(hitColumn)
	reads, ok2 := iv.Delta(readColumn)
	if !ok1 || !ok2 || hits+reads == 0 {
		return 0, false
	}
	return hits / (hits + reads), true
}

// singleRow returns the one row a statistics query returns.
func singleRow(rows []map[string]float64, what string) (map[string]float64, error) {
	if len(rows) != 1 {
		return nil, fmt.Errorf("%s: %d rows, want 1", what, len(rows))
	}
	return rows[0], nil
}

// pickSQL picks a source's SQL for the session's server.
func (s *session) pickSQL(name string, sql versioned) (string, error) {
	text, err := sql.pick(s.version)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return text, nil
}

// trimLower normalises a list element of a setting such as
// shared_preload_libraries ("'pg_stat_statements'").
func trimLower(s string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(s), `"'`))
}
