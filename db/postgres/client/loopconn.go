package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// A loopConn is a session for the engine's event loop: pgconn opens it
// (startup, authentication), then it speaks the frontend/backend protocol
// itself on the raw socket, with non-blocking system calls, asking the
// engine's Poller to park the client whenever the socket is not ready.
// It sends exactly what conn sends through pgconn (and libpq through
// pgbench): Query; Parse/Bind/Describe/Execute/Sync; pipelines.

var _ engine.LoopTarget = (*Target)(nil)

// ConnectLoop opens a client's session for an event loop.
func (t *Target) ConnectLoop(ctx context.Context, clientID int, p engine.Poller) (engine.Conn, error) {
	pg, err := t.connectParked(ctx, p)
	if err != nil {
		return nil, connectError(err)
	}
	h, err := pg.Hijack()
	if err != nil {
		pg.Close(ctx)
		return nil, &engine.DBError{Code: engine.CodeConnection, Fault: engine.Unavailable, Err: err}
	}
	sc, ok := h.Conn.(syscall.Conn)
	if !ok || h.TLSConfig != nil {
		h.Conn.Close()
		return nil, engine.ErrNoLoop
	}
	fd, err := sockio.DupFD(sc)
	h.Conn.Close() // the duplicate keeps the session open
	if err != nil {
		return nil, &engine.DBError{Code: engine.CodeConnection, Fault: engine.Unavailable, Err: err}
	}
	c := &loopConn{
		io: sockio.NewConn(fd, p), mode: t.mode, txStatus: h.TxStatus,
		pid: h.PID, secret: h.SecretKey,
		prepared: make(map[*script.SQL]string),
	}
	if h.Config.Host != "" && h.Config.Host[0] == '/' {
		c.cancelNet, c.cancelAddr = "unix", filepath.Join(h.Config.Host, ".s.PGSQL."+strconv.Itoa(int(h.Config.Port)))
	} else {
		c.cancelNet, c.cancelAddr = "tcp", net.JoinHostPort(h.Config.Host, strconv.Itoa(int(h.Config.Port)))
	}
	return c, nil
}

// connectParked opens a session with pgconn off the client's event loop
// (see sockio.OpenParked).
func (t *Target) connectParked(ctx context.Context, p engine.Poller) (*pgconn.PgConn, error) {
	return sockio.OpenParked(ctx, p,
		func() (*pgconn.PgConn, error) { return t.ConnectRaw(ctx) },
		func(pg *pgconn.PgConn) { _ = pg.Close(context.Background()) })
}

type loopConn struct {
	// io is the socket: requests are built in io.W, replies read in
	// place from io.Buffered.
	io       sockio.Conn
	mode     QueryMode
	txStatus byte // from the last ReadyForQuery
	broken   error

	syncs  int // Syncs (or Queries) sent whose ReadyForQuery is unread
	queued int // Syncs (or Queries) in io.W, not sent yet

	pid                   uint32
	secret                []byte
	cancelNet, cancelAddr string

	text     []byte
	pbuf     []byte
	ends     []int
	prepared map[*script.SQL]string
	nextStmt int
	gset     map[*script.SQL]*gsetTarget

	pipe    bool
	pending []pipeRequest
	sent    bool // part of the pipeline was flushed before its end
}

var _ engine.Conn = (*loopConn)(nil)

func (c *loopConn) fail(err error) error {
	if c.broken == nil {
		c.broken = err
	}
	return &engine.DBError{Code: engine.CodeConnection, Fault: engine.Lost, Err: err}
}

// next returns the next message; body is valid until the next call.
func (c *loopConn) next() (typ byte, body []byte, err error) {
	if err := c.io.Ensure(5); err != nil {
		return 0, nil, c.fail(err)
	}
	n := int(binary.BigEndian.Uint32(c.io.Buffered()[1:]))
	if n < 4 {
		return 0, nil, c.fail(fmt.Errorf("protocol error: message length %d", n))
	}
	if err := c.io.Ensure(1 + n); err != nil {
		return 0, nil, c.fail(err)
	}
	msg := c.io.Buffered()[:1+n]
	c.io.Consume(1 + n)
	typ, body = msg[0], msg[5:]
	if typ == 'Z' {
		c.syncs--
		if len(body) > 0 {
			c.txStatus = body[0]
		}
	}
	return typ, body, nil
}

// flush sends the requests built in io.W.
func (c *loopConn) flush() error {
	if err := c.io.Flush(c.queued > 0); err != nil {
		return c.fail(err)
	}
	c.syncs += c.queued
	c.queued = 0
	return nil
}

// Message builders, appending to io.W.

func (c *loopConn) begin(typ byte) int {
	c.io.W = append(c.io.W, typ, 0, 0, 0, 0)
	return len(c.io.W) - 4
}

func (c *loopConn) end(at int) {
	binary.BigEndian.PutUint32(c.io.W[at:], uint32(len(c.io.W)-at))
}

func (c *loopConn) sendQuery(text []byte) {
	at := c.begin('Q')
	c.io.W = append(append(c.io.W, text...), 0)
	c.end(at)
	c.queued++
}

func (c *loopConn) sendParse(name, query string) {
	at := c.begin('P')
	c.io.W = append(append(c.io.W, name...), 0)
	c.io.W = append(append(c.io.W, query...), 0)
	c.io.W = append(c.io.W, 0, 0) // no parameter types: the server infers them
	c.end(at)
}

// sendExec binds the statement to the unnamed portal with the text
// parameters in pbuf, describes and executes it, as PQsendQueryPrepared.
func (c *loopConn) sendExec(stmt string) {
	at := c.begin('B')
	c.io.W = append(c.io.W, 0) // unnamed portal
	c.io.W = append(append(c.io.W, stmt...), 0)
	c.io.W = append(c.io.W, 0, 0) // parameters in text
	c.io.W = binary.BigEndian.AppendUint16(c.io.W, uint16(len(c.ends)))
	start := 0
	for _, e := range c.ends {
		c.io.W = binary.BigEndian.AppendUint32(c.io.W, uint32(e-start))
		c.io.W = append(c.io.W, c.pbuf[start:e]...)
		start = e
	}
	c.io.W = append(c.io.W, 0, 0) // results in text
	c.end(at)
	at = c.begin('D')
	c.io.W = append(c.io.W, 'P', 0)
	c.end(at)
	at = c.begin('E')
	c.io.W = append(c.io.W, 0, 0, 0, 0, 0) // unnamed portal, all rows
	c.end(at)
}

func (c *loopConn) sendSync() {
	c.io.W = append(c.io.W, 'S', 0, 0, 0, 4)
	c.queued++
}

func (c *loopConn) Exec(_ context.Context, cmd *script.Command, vars *script.Vars) error {
	if c.broken != nil {
		return &engine.DBError{Code: engine.CodeConnection, Fault: engine.Lost, Err: c.broken}
	}
	switch cmd.Kind {
	case script.KindSQL:
		if c.pipe {
			return c.queue(cmd, vars)
		}
		return c.exec(cmd, vars)
	case script.KindStartPipeline:
		if c.mode == Simple {
			return errors.New("cannot use pipeline mode with the simple query protocol")
		}
		if c.pipe {
			return errors.New("already in pipeline mode")
		}
		c.pipe, c.sent = true, false
		c.pending = c.pending[:0]
		return nil
	case script.KindSyncPipeline:
		if !c.pipe {
			return errors.New("not in pipeline mode")
		}
		c.sendSync()
		c.pending = append(c.pending, pipeRequest{sync: true})
		return nil
	case script.KindEndPipeline:
		if !c.pipe {
			return errors.New("not in pipeline mode")
		}
		return c.endPipeline(vars)
	}
	return fmt.Errorf("%s: not a command for PostgreSQL", cmd.Kind)
}

// exec runs one SQL command outside a pipeline.
func (c *loopConn) exec(cmd *script.Command, vars *script.Vars) error {
	q := cmd.SQL
	var preparing bool
	switch c.mode {
	case Simple:
		c.text = q.AppendSimple(c.text[:0], vars)
		if len(c.text) == 0 {
			return nil
		}
		c.sendQuery(c.text)
	case Extended:
		if err := c.bindParams(q, vars); err != nil {
			return err
		}
		c.sendParse("", q.Query)
		c.sendExec("")
		c.sendSync()
	default:
		name, ok := c.prepared[q]
		if !ok {
			if q.Compound {
				return errors.New("cannot run a compound (\\;) command with the prepared protocol")
			}
			name = "fd" + strconv.Itoa(c.nextStmt)
			c.nextStmt++
			preparing = true
		}
		if err := c.bindParams(q, vars); err != nil {
			return err
		}
		if preparing {
			// Prepared in the same round trip as its first execution.
			c.sendParse(name, q.Query)
		}
		c.sendExec(name)
		c.sendSync()
		if preparing {
			c.prepared[q] = name
		}
	}
	if err := c.flush(); err != nil {
		return err
	}
	parsed, rows, err := c.readResults(cmd, vars)
	if err != nil {
		if preparing && !parsed {
			delete(c.prepared, q)
		}
		return err
	}
	return checkGset(q, rows)
}

// readResults reads up to ReadyForQuery, storing \gset values of each
// result; it returns whether a statement was parsed, the last result's
// rows and the first error.
func (c *loopConn) readResults(cmd *script.Command, vars *script.Vars) (parsed bool, rows int, first error) {
	var g *script.Gset
	if cmd != nil {
		g = cmd.SQL.Gset
	}
	var target *gsetTarget
	for {
		typ, body, err := c.next()
		if err != nil {
			if first == nil {
				first = err
			}
			return parsed, rows, first
		}
		switch typ {
		case 'Z':
			return parsed, rows, first
		case '1':
			parsed = true
		case 'T':
			rows, target = 0, nil
			if g != nil {
				target = c.gsetFor(cmd.SQL, body, vars.Symbols(), g.Prefix)
			}
		case 'D':
			rows++
			if target != nil && (g.All || rows == 1) {
				if err := storeRow(body, target, vars); err != nil && first == nil {
					first = c.fail(err)
				}
			}
		case 'C', 'I':
			if typ == 'I' {
				rows = 0
			}
			target = nil
		case 'E':
			if first == nil {
				first = classify(parseError(body))
			}
		case 'G': // COPY FROM STDIN: refuse it, the server then errors out
			at := c.begin('f')
			c.io.W = append(c.io.W, "COPY FROM STDIN is not supported in scripts"...)
			c.io.W = append(c.io.W, 0)
			c.end(at)
			if err := c.flush(); err != nil && first == nil {
				first = err
			}
		}
	}
}

// queue adds one SQL command to the pipeline.
func (c *loopConn) queue(cmd *script.Command, vars *script.Vars) error {
	q := cmd.SQL
	if q.Compound {
		return errors.New("cannot run a compound (\\;) command in a pipeline")
	}
	if err := c.bindParams(q, vars); err != nil {
		return err
	}
	if c.mode == Prepared {
		name, ok := c.prepared[q]
		if !ok {
			name = "fd" + strconv.Itoa(c.nextStmt)
			c.nextStmt++
			c.sendParse(name, q.Query)
			c.pending = append(c.pending, pipeRequest{prepare: q})
			c.prepared[q] = name // forgotten if the server skips it
		}
		c.sendExec(name)
	} else {
		c.sendParse("", q.Query)
		c.sendExec("")
	}
	c.pending = append(c.pending, pipeRequest{cmd: cmd})
	if len(c.io.W) > 64<<10 {
		c.sent = true
		return c.flush()
	}
	return nil
}

// endPipeline syncs the pipeline and reads every pending result in order.
// After an error the server skips the rest of the sync segment, so the
// pending requests up to the next sync get no answer.
func (c *loopConn) endPipeline(vars *script.Vars) error {
	c.sendSync()
	c.pending = append(c.pending, pipeRequest{sync: true})
	c.pipe = false
	defer func() { c.pending = c.pending[:0] }()
	if err := c.flush(); err != nil {
		return err
	}
	var first error
	var target *gsetTarget
	rows := 0
	for len(c.pending) > 0 {
		typ, body, err := c.next()
		if err != nil {
			return err
		}
		head := c.pending[0]
		switch typ {
		case 'Z':
			// Answers the first sync still pending; anything before it
			// was skipped after an error.
			for len(c.pending) > 0 {
				req := c.pending[0]
				c.pending = c.pending[1:]
				if req.sync {
					break
				}
				c.forget(req)
			}
		case '1':
			if head.prepare != nil {
				c.pending = c.pending[1:]
			}
		case 'T':
			rows, target = 0, nil
			if head.cmd != nil && head.cmd.SQL.Gset != nil {
				target = c.gsetFor(head.cmd.SQL, body, vars.Symbols(), head.cmd.SQL.Gset.Prefix)
			}
		case 'D':
			rows++
			if target != nil && (head.cmd.SQL.Gset.All || rows == 1) {
				if err := storeRow(body, target, vars); err != nil && first == nil {
					first = c.fail(err)
				}
			}
		case 'C', 'I':
			if head.cmd != nil {
				if typ == 'I' {
					rows = 0
				}
				if err := checkGset(head.cmd.SQL, rows); err != nil && first == nil {
					first = err
				}
				c.pending = c.pending[1:]
			}
			rows, target = 0, nil
		case 'E':
			if first == nil {
				first = classify(parseError(body))
			}
			// The rest of the segment is skipped: drop up to its sync.
			for len(c.pending) > 0 && !c.pending[0].sync {
				c.forget(c.pending[0])
				c.pending = c.pending[1:]
			}
			rows, target = 0, nil
		}
	}
	return first
}

func (c *loopConn) forget(req pipeRequest) {
	if req.prepare != nil {
		delete(c.prepared, req.prepare)
	}
}

// bindParams renders the command's variables as text parameters into
// pbuf, ends marking where each one ends.
func (c *loopConn) bindParams(q *script.SQL, vars *script.Vars) error {
	var err error
	c.pbuf, c.ends, err = appendParams(c.pbuf[:0], c.ends[:0], q, vars)
	return err
}

// gsetFor maps a RowDescription's columns to variables, cached per
// command while the columns stay the same.
func (c *loopConn) gsetFor(q *script.SQL, desc []byte, syms *script.Symbols, prefix string) *gsetTarget {
	if c.gset == nil {
		c.gset = make(map[*script.SQL]*gsetTarget)
	}
	t := c.gset[q]
	if t != nil && sameColumns(desc, t.names) {
		return t
	}
	t = &gsetTarget{}
	forColumns(desc, func(name []byte) {
		t.names = append(t.names, string(name))
		t.refs = append(t.refs, syms.Ref(prefix+string(name)))
	})
	c.gset[q] = t
	return t
}

// forColumns calls f with each column name of a RowDescription.
func forColumns(desc []byte, f func(name []byte)) {
	if len(desc) < 2 {
		return
	}
	n := int(binary.BigEndian.Uint16(desc))
	b := desc[2:]
	for range n {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i+19 > len(b) {
			return
		}
		f(b[:i])
		b = b[i+19:] // NUL, table OID, column, type OID, size, modifier, format
	}
}

func sameColumns(desc []byte, names []string) bool {
	i, same := 0, true
	forColumns(desc, func(name []byte) {
		if i >= len(names) || names[i] != string(name) {
			same = false
		}
		i++
	})
	return same && i == len(names)
}

// storeRow stores a DataRow's values (as text; NULL as an empty string,
// as pgbench's PQgetvalue gives it).
func storeRow(row []byte, t *gsetTarget, vars *script.Vars) error {
	if len(row) < 2 {
		return errors.New("protocol error: short DataRow")
	}
	n := int(binary.BigEndian.Uint16(row))
	b := row[2:]
	for i := range n {
		if len(b) < 4 {
			return errors.New("protocol error: short DataRow")
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		b = b[4:]
		var v []byte
		if l > 0 {
			if l > len(b) {
				return errors.New("protocol error: short DataRow")
			}
			v, b = b[:l], b[l:]
		}
		if i < len(t.refs) {
			vars.SetString(t.refs[i], string(v))
		}
	}
	return nil
}

// parseError reads an ErrorResponse into pgconn's error type, so that
// classify and the rest of firedrill see the same errors as with pgconn.
func parseError(body []byte) *pgconn.PgError {
	e := &pgconn.PgError{}
	for len(body) > 0 && body[0] != 0 {
		field := body[0]
		body = body[1:]
		i := 0
		for i < len(body) && body[i] != 0 {
			i++
		}
		v := string(body[:i])
		if i < len(body) {
			i++
		}
		body = body[i:]
		switch field {
		case 'S':
			e.Severity = v
		case 'V':
			e.SeverityUnlocalized = v
		case 'C':
			e.Code = v
		case 'M':
			e.Message = v
		case 'D':
			e.Detail = v
		case 'H':
			e.Hint = v
		case 'P':
			n, _ := strconv.ParseInt(v, 10, 32)
			e.Position = int32(n)
		case 'p':
			n, _ := strconv.ParseInt(v, 10, 32)
			e.InternalPosition = int32(n)
		case 'q':
			e.InternalQuery = v
		case 'W':
			e.Where = v
		case 's':
			e.SchemaName = v
		case 't':
			e.TableName = v
		case 'c':
			e.ColumnName = v
		case 'd':
			e.DataTypeName = v
		case 'n':
			e.ConstraintName = v
		case 'F':
			e.File = v
		case 'L':
			n, _ := strconv.ParseInt(v, 10, 32)
			e.Line = int32(n)
		case 'R':
			e.Routine = v
		}
	}
	return e
}

// drain reads what is still owed: the answers to every Sync sent.
func (c *loopConn) drain() error {
	for c.syncs > 0 {
		if _, _, err := c.next(); err != nil {
			return err
		}
	}
	return nil
}

func (c *loopConn) Reset(context.Context) error {
	if c.pipe {
		c.pipe = false
		c.io.W, c.queued = c.io.W[:0], 0 // never sent
		// If part of it reached the server, end it there too.
		if c.sent && c.broken == nil {
			c.sendSync()
			if err := c.flush(); err != nil {
				return err
			}
		}
		for _, req := range c.pending {
			c.forget(req)
		}
		c.pending = c.pending[:0]
	}
	if c.broken != nil {
		return c.broken
	}
	if err := c.drain(); err != nil {
		return err
	}
	if c.txStatus != 'I' {
		c.sendQuery([]byte("ROLLBACK"))
		if err := c.flush(); err != nil {
			return err
		}
		if _, _, err := c.readResults(nil, nil); err != nil {
			return fmt.Errorf("rollback: %w", err)
		}
	}
	return nil
}

// Interrupt cancels the command in flight with a cancel request. A hard
// interrupt is the event loop's to do (it wakes the client with an error;
// closing the socket under it from here would race with its reads).
func (c *loopConn) Interrupt(hard bool) {
	if hard {
		return
	}
	go func() {
		conn, err := net.DialTimeout(c.cancelNet, c.cancelAddr, 2*time.Second)
		if err != nil {
			return
		}
		defer conn.Close()
		msg := binary.BigEndian.AppendUint32(nil, uint32(12+len(c.secret)))
		msg = binary.BigEndian.AppendUint32(msg, 80877102)
		msg = binary.BigEndian.AppendUint32(msg, c.pid)
		msg = append(msg, c.secret...)
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write(msg); err == nil {
			_, _ = conn.Read(make([]byte, 1)) // the server closes it when done
		}
	}()
}

// Close ends the session, rolling back an open transaction first so that
// none is left on the target.
func (c *loopConn) Close() error {
	if c.io.FD() < 0 {
		return nil
	}
	if c.broken == nil {
		_ = c.Reset(context.Background())
		c.io.W = append(c.io.W[:0], 'X', 0, 0, 0, 4)
		_ = c.flush()
	}
	return c.io.Close()
}
