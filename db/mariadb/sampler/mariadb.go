// Package mariadb samples MariaDB's insides on one shared connection: one
// file per source (the process list, InnoDB's lock waits, SHOW GLOBAL
// STATUS, SHOW ENGINE INNODB STATUS), each with its SQL in a named
// variable and a doc comment that lists every value key it emits. Every
// statement starts with the marker comment /* firedrill-sampler */ and the
// samplers leave out their own session (by CONNECTION_ID()) and every
// statement that carries the marker, so they do not report themselves.
package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/sampler"
)

// Marker starts every SQL text the samplers send, so that they can leave
// out their own statements and a DBA reading the process list knows who
// asked.
const Marker = "/* firedrill-sampler */"

// notSampler is the SQL condition that leaves out the samplers' sessions
// from a PROCESSLIST row aliased p: this session, and any session running
// a statement that carries the marker.
const notSampler = `p.ID <> CONNECTION_ID() AND coalesce(p.INFO, '') NOT LIKE '/* firedrill-sampler */%'`

// clientMargin is how much longer than the server's max_statement_time the
// client waits before it gives up on a query and drops the connection
// (the next query opens a new one).
const clientMargin = 250 * time.Millisecond

// minConnectTimeout bounds a connection attempt from below: a new session
// costs more than a sampler query.
const minConnectTimeout = 2 * time.Second

// Options configure the samplers' session.
type Options struct {
	// Timeout bounds each query (the server's max_statement_time, and
	// the client's wait a little later); 0 = 2s.
	Timeout time.Duration
}

// Set is the samplers of one MariaDB server, sharing one connection.
type Set struct {
	session  *session
	samplers []sampler.Sampler
	notes    map[string]string
}

// New connects to the server at dsn (go-sql-driver/mysql's form,
// "user:password@tcp(127.0.0.1:3306)/db") and returns its samplers.
func New(ctx context.Context, dsn string, opts Options) (*Set, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("sampler connection settings: %w", err)
	}
	cfg = cfg.Clone()
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// The server gives up on a slow sampler statement itself, which
	// leaves the connection usable.
	cfg.Params["max_statement_time"] = strconv.FormatFloat(opts.Timeout.Seconds(), 'f', 3, 64)
	if cfg.Timeout == 0 {
		cfg.Timeout = max(opts.Timeout, minConnectTimeout)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sampler connection settings: %w", err)
	}
	db := sql.OpenDB(connector)
	// One session: the samplers run one after another on a tick, and one
	// session is one max_connections slot. database/sql opens a new one
	// when it was lost (a server restart, a KILL).
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	s := &session{db: db, timeout: opts.Timeout, addr: cfg.Addr}
	set := &Set{session: s, notes: map[string]string{}}
	if err := set.discover(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return set, nil
}

// statementHistory says whether performance_schema keeps the sessions'
// statements: it is on (set at the server's start) and one of its
// statement consumers is enabled.
func (set *Set) statementHistory(ctx context.Context) (bool, error) {
	var on int
	err := set.session.query(ctx, "read performance_schema", Marker+" SELECT @@performance_schema", func(rows *sql.Rows) error {
		return rows.Scan(&on)
	})
	if err != nil || on != 1 {
		return false, err
	}
	consumers := 0
	err = set.session.query(ctx, "read performance_schema's consumers", Marker+` SELECT count(*) FROM performance_schema.setup_consumers
WHERE NAME IN ('events_statements_current', 'events_statements_history') AND ENABLED = 'YES'`, func(rows *sql.Rows) error {
		return rows.Scan(&consumers)
	})
	return consumers > 0, err
}

// discover reads the server's version and builds the samplers that work
// on it.
func (set *Set) discover(ctx context.Context) error {
	var version string
	err := set.session.query(ctx, "read server version", Marker+" SELECT VERSION()", func(rows *sql.Rows) error {
		return rows.Scan(&version)
	})
	if err != nil {
		return err
	}
	set.session.version = version
	lastStatements, err := set.statementHistory(ctx)
	if err != nil {
		return err
	}
	set.samplers = sources(set.session, lastStatements)
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		set.notes[innodbLocksName] = "MySQL " + version + ": information_schema.INNODB_LOCK_WAITS is MariaDB's (MySQL 8 moved it to performance_schema.data_lock_waits, not read yet)"
	}
	return nil
}

// sources are the samplers of a server, on session s, in the order a tick
// reads them; each says its own cadence (sampler.Momentary).
func sources(s *session, lastStatements bool) []sampler.Sampler {
	return []sampler.Sampler{
		&processlist{session: s},
		&innodbLocks{session: s, lastStatements: lastStatements},
		&globalStatus{session: s},
		&innodbStatus{session: s},
	}
}

// Samplers are the samplers of this server, in a fixed order.
func (set *Set) Samplers() []sampler.Sampler { return slices.Clone(set.samplers) }

// Notes says, per sampler name, what cannot be sampled on this server.
func (set *Set) Notes() map[string]string { return maps.Clone(set.notes) }

// Version is the server's VERSION(), e.g. "10.11.19-MariaDB-0+deb12u1".
func (set *Set) Version() string { return set.session.version }

// Close ends the samplers' session.
func (set *Set) Close() error {
	if err := set.session.db.Close(); err != nil {
		return fmt.Errorf("close the samplers' session to %s: %w", set.session.addr, err)
	}
	return nil
}

// session is the connection the samplers of a Set share.
type session struct {
	db      *sql.DB
	timeout time.Duration
	addr    string // host:port or socket, for errors (never a password)
	version string
}

// query runs text under the per-query timeout and calls scan for each
// row; what names the query in errors.
func (s *session) query(ctx context.Context, what, text string, scan func(*sql.Rows) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+clientMargin)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, text)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", what, s.addr, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s on %s: %w", what, s.addr, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s on %s: %w", what, s.addr, err)
	}
	return nil
}

// Unanswered says whether a sampler's error is the server not answering
// in time (the client's deadline, or the server's max_statement_time
// interrupting the statement), rather than an answer.
func Unanswered(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var me *mysql.MySQLError
	// 1969: ER_STATEMENT_TIMEOUT, "Query execution was interrupted
	// (max_statement_time exceeded)".
	return errors.As(err, &me) && me.Number == 1969
}

// cut shortens s to n bytes at a rune boundary, on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
