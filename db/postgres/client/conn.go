// Package postgres runs script commands against PostgreSQL with pgx's
// low-level pgconn: the simple, extended and prepared protocols and
// pipelines, as pgbench sends them, without allocating per query.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// QueryMode is pgbench's -M: how SQL commands are sent.
type QueryMode uint8

// The protocols pgbench offers.
const (
	Simple   QueryMode = iota // one Query message with variables substituted into the text
	Extended                  // Parse/Bind/Execute of an unnamed statement with $n parameters
	Prepared                  // a named statement prepared once per connection, then Bind/Execute
)

var modeNames = [...]string{"simple", "extended", "prepared"}

func (m QueryMode) String() string { return modeNames[m] }

// ParseQueryMode reads a -M value.
func ParseQueryMode(s string) (QueryMode, error) {
	for i, n := range modeNames {
		if s == n {
			return QueryMode(i), nil
		}
	}
	return 0, fmt.Errorf("invalid query mode (-M): %q (use simple, extended or prepared)", s)
}

// Target opens client sessions on one PostgreSQL server.
type Target struct {
	config *pgconn.Config
	mode   QueryMode
}

var _ engine.Target = (*Target)(nil)

// NewTarget prepares connections described by a libpq connection string
// (key=value or URL; PG* environment variables apply as in libpq).
func NewTarget(connString string, mode QueryMode, appName string) (*Target, error) {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	if appName != "" {
		cfg.RuntimeParams["application_name"] = appName
	}
	return &Target{config: cfg, mode: mode}, nil
}

// SetParam sets a run-time parameter (a GUC such as statement_timeout or
// search_path) on every session the target opens, in the startup packet.
func (t *Target) SetParam(name, value string) { t.config.RuntimeParams[name] = value }

// Addr names the server for error messages: host:port or socket path.
func (t *Target) Addr() string {
	return fmt.Sprintf("%s:%d", t.config.Host, t.config.Port)
}

// Mode is the query protocol clients use.
func (t *Target) Mode() QueryMode { return t.mode }

// ConnectRaw opens a plain session for setup work (initialization, vacuum).
func (t *Target) ConnectRaw(ctx context.Context) (*pgconn.PgConn, error) {
	pg, err := pgconn.ConnectConfig(ctx, t.config)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Addr(), err)
	}
	return pg, nil
}

// Connect opens one client's session.
func (t *Target) Connect(ctx context.Context, clientID int) (engine.Conn, error) {
	pg, err := t.ConnectRaw(ctx)
	if err != nil {
		return nil, connectError(err)
	}
	return &conn{pg: pg, mode: t.mode, prepared: make(map[*script.SQL]string)}, nil
}

// conn is one client's session.
type conn struct {
	pg       *pgconn.PgConn
	mode     QueryMode
	text     []byte   // the simple-protocol query text, reused
	pbuf     []byte   // parameter values, back to back
	params   [][]byte // slices of pbuf
	ends     []int
	prepared map[*script.SQL]string
	nextStmt int // names prepared statements; never reused, as a failed prepare frees its name
	gset     map[*script.SQL]*gsetTarget
	pipe     *pgconn.Pipeline
	pending  []pipeRequest // what was sent in the pipeline, in order
}

// pipeRequest is one request sent in a pipeline, kept so that results can
// be matched to it and so that a prepare the server skipped (after an
// error earlier in its sync segment) is forgotten rather than cached.
type pipeRequest struct {
	cmd     *script.Command // an SQL command, whose result is read
	prepare *script.SQL     // a statement being prepared
	sync    bool            // a \syncpipeline
}

var _ engine.Conn = (*conn)(nil)

// gsetTarget caches the variables a \gset fills for a given result shape.
type gsetTarget struct {
	names []string
	refs  []script.VarRef
}

func (c *conn) Exec(ctx context.Context, cmd *script.Command, vars *script.Vars) error {
	switch cmd.Kind {
	case script.KindSQL:
		if c.pipe != nil {
			return c.send(cmd, vars)
		}
		return c.exec(ctx, cmd, vars)
	case script.KindStartPipeline:
		if c.mode == Simple {
			return errors.New("cannot use pipeline mode with the simple query protocol")
		}
		if c.pipe != nil {
			return errors.New("already in pipeline mode")
		}
		c.pipe = c.pg.StartPipeline(context.Background())
		c.pending = c.pending[:0]
		return nil
	case script.KindSyncPipeline:
		if c.pipe == nil {
			return errors.New("not in pipeline mode")
		}
		c.pipe.SendPipelineSync()
		c.pending = append(c.pending, pipeRequest{sync: true})
		return nil
	case script.KindEndPipeline:
		if c.pipe == nil {
			return errors.New("not in pipeline mode")
		}
		return c.endPipeline(vars)
	}
	return fmt.Errorf("%s: not a command for PostgreSQL", cmd.Kind)
}

// exec runs one SQL command outside a pipeline.
func (c *conn) exec(ctx context.Context, cmd *script.Command, vars *script.Vars) error {
	q := cmd.SQL
	switch c.mode {
	case Simple:
		c.text = q.AppendSimple(c.text[:0], vars)
		if len(c.text) == 0 {
			return nil
		}
		mrr := c.pg.Exec(ctx, unsafe.String(&c.text[0], len(c.text)))
		rows := -1
		var first error
		for mrr.NextResult() {
			n, err := c.readResult(mrr.ResultReader(), cmd, vars)
			if err != nil && first == nil {
				first = err
			}
			rows = n
		}
		if err := mrr.Close(); err != nil {
			return classify(err)
		}
		if first != nil {
			return first
		}
		return checkGset(q, rows)
	case Extended:
		if err := c.bindParams(q, vars); err != nil {
			return err
		}
		return c.readOne(c.pg.ExecParams(ctx, q.Query, c.params, nil, nil, nil), cmd, vars)
	default:
		name, err := c.prepare(ctx, q)
		if err != nil {
			return err
		}
		if err := c.bindParams(q, vars); err != nil {
			return err
		}
		return c.readOne(c.pg.ExecPrepared(ctx, name, c.params, nil, nil), cmd, vars)
	}
}

func (c *conn) prepare(ctx context.Context, q *script.SQL) (string, error) {
	if name, ok := c.prepared[q]; ok {
		return name, nil
	}
	if q.Compound {
		return "", errors.New("cannot run a compound (\\;) command with the prepared protocol")
	}
	name := "fd" + strconv.Itoa(c.nextStmt)
	c.nextStmt++
	if c.pipe != nil {
		// Cached now so that the pipeline's later commands reuse it;
		// endPipeline forgets it if the server did not prepare it.
		c.pipe.SendPrepare(name, q.Query, nil)
		c.pending = append(c.pending, pipeRequest{prepare: q})
	} else if _, err := c.pg.Prepare(ctx, name, q.Query, nil); err != nil {
		return "", classify(err)
	}
	c.prepared[q] = name
	return name, nil
}

// bindParams renders the command's variables as text parameters.
func (c *conn) bindParams(q *script.SQL, vars *script.Vars) error {
	var err error
	if c.pbuf, c.ends, err = appendParams(c.pbuf[:0], c.ends[:0], q, vars); err != nil {
		return err
	}
	c.params = c.params[:0]
	start := 0
	for _, end := range c.ends {
		c.params = append(c.params, c.pbuf[start:end:end])
		start = end
	}
	return nil
}

// appendParams renders the command's variables as text, back to back in
// buf, ends marking where each one ends.
func appendParams(buf []byte, ends []int, q *script.SQL, vars *script.Vars) ([]byte, []int, error) {
	for _, ref := range q.Params {
		var ok bool
		buf, ok = vars.AppendText(buf, ref)
		if !ok {
			return buf, ends, fmt.Errorf("undefined variable %q", vars.Symbols().Name(ref))
		}
		ends = append(ends, len(buf))
	}
	return buf, ends, nil
}

// readOne consumes the only result of a command.
func (c *conn) readOne(rr *pgconn.ResultReader, cmd *script.Command, vars *script.Vars) error {
	rows, err := c.readResult(rr, cmd, vars)
	if err != nil {
		return err
	}
	return checkGset(cmd.SQL, rows)
}

// readResult consumes one result, storing \gset / \aset values, and
// returns its number of rows. A \gset stores the first row of each result
// of a compound command, so the last result's values win.
func (c *conn) readResult(rr *pgconn.ResultReader, cmd *script.Command, vars *script.Vars) (int, error) {
	g := cmd.SQL.Gset
	if g == nil {
		tag, err := rr.Close()
		return int(tag.RowsAffected()), classify(err)
	}
	rows := 0
	var target *gsetTarget
	for rr.NextRow() {
		rows++
		if !g.All && rows > 1 {
			continue
		}
		if target == nil {
			target = c.gsetFor(cmd.SQL, rr.FieldDescriptions(), vars.Symbols(), g.Prefix)
		}
		for i, v := range rr.Values() {
			vars.SetString(target.refs[i], string(v))
		}
	}
	_, err := rr.Close()
	return rows, classify(err)
}

// checkGset enforces \gset's one row (of the last result).
func checkGset(q *script.SQL, rows int) error {
	if q.Gset != nil && !q.Gset.All && rows != 1 {
		return fmt.Errorf("expected one row, got %d", max(rows, 0))
	}
	return nil
}

func (c *conn) gsetFor(q *script.SQL, fds []pgconn.FieldDescription, syms *script.Symbols, prefix string) *gsetTarget {
	if c.gset == nil {
		c.gset = make(map[*script.SQL]*gsetTarget)
	}
	if t, ok := c.gset[q]; ok && len(t.names) == len(fds) {
		same := true
		for i := range fds {
			if t.names[i] != fds[i].Name {
				same = false
				break
			}
		}
		if same {
			return t
		}
	}
	t := &gsetTarget{}
	for _, fd := range fds {
		t.names = append(t.names, fd.Name)
		t.refs = append(t.refs, syms.Ref(prefix+fd.Name))
	}
	c.gset[q] = t
	return t
}

// send queues one SQL command in the pipeline.
func (c *conn) send(cmd *script.Command, vars *script.Vars) error {
	q := cmd.SQL
	if q.Compound {
		return errors.New("cannot run a compound (\\;) command in a pipeline")
	}
	if err := c.bindParams(q, vars); err != nil {
		return err
	}
	if c.mode == Prepared {
		name, err := c.prepare(context.Background(), q)
		if err != nil {
			return err
		}
		// The parameters are copied into the send buffer right away.
		c.pipe.SendQueryPrepared(name, c.params, nil, nil)
	} else {
		c.pipe.SendQueryParams(q.Query, c.params, nil, nil, nil)
	}
	c.pending = append(c.pending, pipeRequest{cmd: cmd})
	return nil
}

// endPipeline syncs the pipeline and reads every pending result in order.
// After an error the server skips the rest of the sync segment (pgx drops
// those requests too), so the matching pending requests are dropped.
func (c *conn) endPipeline(vars *script.Vars) error {
	pipe := c.pipe
	// Reading advances c.pending; the next pipeline reuses the whole array.
	defer func(all []pipeRequest) { c.pending = all[:0] }(c.pending)
	if err := pipe.Sync(); err != nil {
		c.pipe = nil
		c.dropPending(false)
		return classify(err)
	}
	var first error
	for {
		res, err := pipe.GetResults()
		if err != nil {
			if first == nil {
				first = classify(err)
			}
			c.dropPending(true)
			continue
		}
		if res == nil {
			break
		}
		switch r := res.(type) {
		case *pgconn.ResultReader:
			cmd := c.nextPendingCommand()
			if cmd == nil {
				_, _ = r.Close()
				continue
			}
			if err := c.readOne(r, cmd, vars); err != nil && first == nil {
				first = err
			}
		case *pgconn.StatementDescription:
			c.nextPendingPrepare()
		case *pgconn.PipelineSync:
			// Ends a \syncpipeline's segment, or the final sync (ours,
			// not pending).
			c.dropPending(true)
			if len(c.pending) > 0 {
				c.pending = c.pending[1:]
			}
		}
	}
	c.pipe = nil
	c.dropPending(false)
	if err := pipe.Close(); err != nil && first == nil {
		first = classify(err)
	}
	return first
}

// nextPendingCommand takes the SQL command the next result belongs to.
func (c *conn) nextPendingCommand() *script.Command {
	for len(c.pending) > 0 {
		req := c.pending[0]
		c.pending = c.pending[1:]
		if req.cmd != nil {
			return req.cmd
		}
		c.forget(req)
	}
	return nil
}

// nextPendingPrepare takes the prepare a statement description answers:
// the statement now exists on the server.
func (c *conn) nextPendingPrepare() {
	for len(c.pending) > 0 {
		req := c.pending[0]
		c.pending = c.pending[1:]
		if req.prepare != nil {
			return
		}
	}
}

// dropPending drops the requests that will get no result: up to the next
// \syncpipeline (kept) with toSync, else all of them.
func (c *conn) dropPending(toSync bool) {
	for len(c.pending) > 0 {
		req := c.pending[0]
		if toSync && req.sync {
			return
		}
		c.pending = c.pending[1:]
		c.forget(req)
	}
}

// forget uncaches a prepare that the server never ran.
func (c *conn) forget(req pipeRequest) {
	if req.prepare != nil {
		delete(c.prepared, req.prepare)
	}
}

func (c *conn) Reset(ctx context.Context) error {
	if c.pipe != nil {
		_ = c.pipe.Close()
		c.pipe = nil
		c.dropPending(false)
	}
	if c.pg.IsClosed() {
		return errors.New("connection closed")
	}
	if c.pg.TxStatus() != 'I' {
		if err := c.pg.Exec(ctx, "ROLLBACK").Close(); err != nil {
			return fmt.Errorf("rollback: %w", err)
		}
	}
	return nil
}

func (c *conn) Interrupt(hard bool) {
	if hard {
		_ = c.pg.Conn().Close() // unblocks a read in progress
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.pg.CancelRequest(ctx)
	}()
}

func (c *conn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.pg.TxStatus() != 'I' && !c.pg.IsClosed() {
		// Never leave a transaction open on the target.
		_ = c.pg.Exec(ctx, "ROLLBACK").Close()
	}
	return c.pg.Close(ctx)
}

// classify turns the errors pgbench retries into *engine.Failure.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		coded := &engine.DBError{Code: pgErr.Code, Detail: pgErr.Detail, Err: err}
		if sessionEnded(pgErr.Code) {
			coded.Fault = engine.Lost
		}
		switch pgErr.Code {
		case "40001":
			return &engine.Failure{Kind: engine.Serialization, Err: coded}
		case "40P01":
			return &engine.Failure{Kind: engine.Deadlock, Err: coded}
		}
		return coded
	}
	if isConnError(err) {
		return &engine.DBError{Code: engine.CodeConnection, Fault: engine.Lost, Err: err}
	}
	return err
}

// connectError turns a failed attempt to open a session into an
// *engine.DBError that says whether to retry it later: the server full
// (class 53, e.g. 53300 too_many_connections) is Refused; the server not
// there, starting or shutting down (no answer, class 08, 57P01–57P03) is
// Unavailable; anything else (28P01 a wrong password, 3D000 no such
// database) is not about the connection and is not retried.
func connectError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return &engine.DBError{Code: engine.CodeConnect, Fault: engine.Unavailable, Err: err}
	}
	coded := &engine.DBError{Code: pgErr.Code, Detail: pgErr.Detail, Err: err}
	switch {
	case strings.HasPrefix(pgErr.Code, "53"):
		coded.Fault = engine.Refused
	case sessionEnded(pgErr.Code):
		coded.Fault = engine.Unavailable
	}
	return coded
}

// sessionEnded reports the SQLSTATEs of a session the server ended or
// could not keep: connection exceptions (class 08) and the server
// shutting down or starting (57P01 admin_shutdown, 57P02 crash_shutdown,
// 57P03 cannot_connect_now).
func sessionEnded(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// isConnError reports errors of a connection that is gone or never was.
func isConnError(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}
