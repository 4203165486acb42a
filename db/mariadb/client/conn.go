package mariadb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// Commands.
const (
	comQuit        = 0x01
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
)

// Server status flags.
const (
	statusInTrans     = 0x0001
	statusMoreResults = 0x0008
)

// Column types of the binary protocol.
const (
	typeTiny      = 0x01
	typeShort     = 0x02
	typeLong      = 0x03
	typeFloat     = 0x04
	typeDouble    = 0x05
	typeNull      = 0x06
	typeTimestamp = 0x07
	typeLongLong  = 0x08
	typeInt24     = 0x09
	typeDate      = 0x0A
	typeTime      = 0x0B
	typeDateTime  = 0x0C
	typeYear      = 0x0D
	typeVarString = 0xFD
	flagUnsigned  = 0x20
)

// conn is one client's session.
type conn struct {
	t *Target
	// io is the socket: packets are built in io.W and read in place
	// from io.Buffered. An encrypted session reads and writes through
	// crypto/tls (blocking, on the client's own goroutine); its
	// descriptor stays the socket's duplicate, for Interrupt.
	io        sockio.Conn
	fdMu      sync.Mutex // guards the socket against a hard Interrupt while closing
	goroutine bool       // not on an event loop: a hard Interrupt shuts the socket

	version string
	connID  uint32
	caps    uint32
	ext     uint32 // MariaDB's extended capabilities in use (extCacheMetadata)
	status  uint16 // of the last OK or EOF; statusInTrans after an error
	broken  error  // why the session can no longer be used

	seq byte

	text  []byte // the query text, reused
	pbuf  []byte // parameter values, back to back
	ends  []int  // where each parameter ends in pbuf
	stmts map[*script.SQL]*stmt
	// byText shares one prepared statement among the commands of the
	// same text (sysbench's ten point selects are one statement), so a
	// session holds as few as it can of the server's
	// max_prepared_stmt_count.
	byText map[string]*stmt
	gset   map[*script.SQL]*gsetTarget
	cols   []column // the binary result's columns, reused
	// exec is the statement being executed: its columns stand for a
	// result whose definitions the server left out (extCacheMetadata).
	exec *stmt
	num  []byte // formatting scratch
}

var _ engine.Conn = (*conn)(nil)

// stmt is a statement prepared on the server.
type stmt struct {
	id      uint32
	params  int
	columns int
	// types are the parameter types sent with the last execute: the
	// server keeps them, so an execute sends them only when they change.
	types []byte
	// cols and names are the result's columns as the server last
	// described them, for the executes it does not describe them in.
	cols  []column
	names []string
}

// column is what decoding a binary row needs of a column.
type column struct {
	typ      byte
	flags    uint16
	decimals byte
}

// gsetTarget caches the variables a \gset fills for a result's columns.
type gsetTarget struct {
	names []string
	refs  []script.VarRef
}

// Exec runs one command of a script.
func (c *conn) Exec(_ context.Context, cmd *script.Command, vars *script.Vars) error {
	if c.broken != nil {
		return &engine.DBError{Code: engine.CodeConnection, Err: fmt.Errorf("%s: %w", c.t.addr, c.broken)}
	}
	switch cmd.Kind {
	case script.KindSQL:
		if c.t.prepared {
			return c.execPrepared(cmd.SQL, vars)
		}
		return c.execSimple(cmd.SQL, vars)
	case script.KindStartPipeline, script.KindSyncPipeline, script.KindEndPipeline:
		return fmt.Errorf("\\%s: MariaDB and MySQL have no pipeline mode", cmd.Kind)
	}
	return fmt.Errorf("%s: not a command for MariaDB", cmd.Kind)
}

// execSimple sends the command's text with its variables substituted.
func (c *conn) execSimple(q *script.SQL, vars *script.Vars) error {
	c.text = q.AppendSimple(c.text[:0], vars)
	if len(c.text) == 0 {
		return nil
	}
	at := c.command(comQuery)
	c.io.W = append(c.io.W, c.text...)
	c.endPacket(at)
	if err := c.flush(); err != nil {
		return err
	}
	return c.readResults(q, vars, false)
}

// simpleQuery runs a statement of the target's own (session setup,
// rollback, KILL QUERY) and reads its results.
func (c *conn) simpleQuery(text string) error {
	at := c.command(comQuery)
	c.io.W = append(c.io.W, text...)
	c.endPacket(at)
	if err := c.flush(); err != nil {
		return err
	}
	return c.readResults(nil, nil, false)
}

// execPrepared executes the command's statement, preparing it first on
// this session's first use.
func (c *conn) execPrepared(q *script.SQL, vars *script.Vars) error {
	st := c.stmts[q]
	if st == nil {
		var err error
		if st, err = c.prepare(q); err != nil {
			return err
		}
	}
	var err error
	if c.pbuf, c.ends, err = appendParams(c.pbuf[:0], c.ends[:0], q, vars); err != nil {
		return err
	}
	if len(c.ends) != st.params {
		return fmt.Errorf("the prepared statement has %d ? placeholders but the command %d :variables (write a literal ? as '?')", st.params, len(c.ends))
	}
	at := c.command(comStmtExecute)
	c.io.W = binary.LittleEndian.AppendUint32(c.io.W, st.id)
	c.io.W = append(c.io.W, 0)          // no cursor
	c.io.W = append(c.io.W, 1, 0, 0, 0) // iteration count
	if st.params > 0 {
		for range (st.params + 7) / 8 {
			c.io.W = append(c.io.W, 0) // NULL bitmap: none
		}
		// The types, sent when they differ from the last execute's (the
		// first one's always): the server keeps a statement's types.
		flag := len(c.io.W)
		c.io.W = append(c.io.W, 1)
		typesAt := len(c.io.W)
		start := 0
		for _, end := range c.ends {
			if isInteger(c.pbuf[start:end]) {
				c.io.W = append(c.io.W, typeLongLong, 0)
			} else {
				c.io.W = append(c.io.W, typeVarString, 0)
			}
			start = end
		}
		if types := c.io.W[typesAt:]; st.types != nil && string(types) == string(st.types) {
			c.io.W[flag] = 0
			c.io.W = c.io.W[:typesAt]
		} else {
			st.types = append(st.types[:0], types...)
		}
		start = 0
		for _, end := range c.ends {
			v := c.pbuf[start:end]
			if isInteger(v) {
				n, _ := strconv.ParseInt(unsafeString(v), 10, 64)
				c.io.W = binary.LittleEndian.AppendUint64(c.io.W, uint64(n))
			} else {
				c.io.W = appendLenenc(c.io.W, uint64(len(v)))
				c.io.W = append(c.io.W, v...)
			}
			start = end
		}
	}
	c.endPacket(at)
	if err := c.flush(); err != nil {
		st.types = st.types[:0] // not known to have reached the server
		return err
	}
	c.exec = st
	err = c.readResults(q, vars, true)
	c.exec = nil
	if err != nil {
		st.types = st.types[:0] // a refused execute may not have kept them
	}
	return err
}

// isInteger says whether a parameter's text is a decimal int64 that reads
// back the same (no leading zeros or plus sign), so it is sent as one.
func isInteger(b []byte) bool {
	i := 0
	if len(b) > 0 && b[0] == '-' {
		i = 1
	}
	digits := b[i:]
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// prepare prepares the command's statement on the server.
func (c *conn) prepare(q *script.SQL) (*stmt, error) {
	if q.Compound {
		return nil, errors.New("cannot run a compound (\\;) command with the prepared protocol")
	}
	c.text = appendPlaceholders(c.text[:0], q)
	if st := c.byText[string(c.text)]; st != nil {
		c.stmts[q] = st
		return st, nil
	}
	at := c.command(comStmtPrepare)
	c.io.W = append(c.io.W, c.text...)
	c.endPacket(at)
	if err := c.flush(); err != nil {
		return nil, err
	}
	p, err := c.readPacket()
	if err != nil {
		return nil, err
	}
	switch {
	case firstByte(p) == 0xFF:
		return nil, c.serverError(parseErr(p))
	case firstByte(p) != 0x00 || len(p) < 9:
		return nil, c.fail(fmt.Errorf("protocol error: unexpected reply 0x%02x to COM_STMT_PREPARE", firstByte(p)))
	}
	st := &stmt{
		id:      binary.LittleEndian.Uint32(p[1:]),
		columns: int(binary.LittleEndian.Uint16(p[5:])),
		params:  int(binary.LittleEndian.Uint16(p[7:])),
	}
	for i, n := range [2]int{st.params, st.columns} {
		if n == 0 {
			continue
		}
		for range n {
			p, err := c.readPacket()
			if err != nil {
				return nil, err
			}
			if i == 1 && c.ext&extCacheMetadata != 0 {
				// The result's columns, for executes the server does
				// not describe them in.
				name, col, err := parseColumn(p)
				if err != nil {
					return nil, c.fail(err)
				}
				st.cols = append(st.cols, col)
				st.names = append(st.names, string(name))
			}
		}
		if c.caps&capDeprecateEOF == 0 {
			if _, err := c.readPacket(); err != nil {
				return nil, err
			}
		}
	}
	c.stmts[q] = st
	if c.byText == nil {
		c.byText = make(map[string]*stmt)
	}
	c.byText[string(c.text)] = st
	return st, nil
}

// appendPlaceholders appends the command's text with a ? for each
// :variable, whatever the dialect put in Query.
func appendPlaceholders(b []byte, q *script.SQL) []byte {
	for i := range q.Parts {
		if q.Parts[i].Var != script.NoVar {
			b = append(b, '?')
		} else {
			b = append(b, q.Parts[i].Text...)
		}
	}
	return b
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

// readResults reads a command's whole response: every result of a
// multi-statement query, storing \gset / \aset values. It returns the
// first error; the response is always read to its end, so the session
// stays usable after a statement's error.
func (c *conn) readResults(q *script.SQL, vars *script.Vars, binaryRows bool) error {
	var first error
	rows := -1
	for {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		if len(p) == 0 {
			return c.fail(errors.New("protocol error: empty reply"))
		}
		switch p[0] {
		case 0x00:
			c.readOK(p)
			rows = 0
		case 0xFF:
			return c.serverError(parseErr(p)) // nothing follows an error
		case 0xFB: // LOCAL INFILE request: refuse it with an empty file
			at := c.startPacket()
			c.endPacket(at)
			if err := c.flush(); err != nil {
				return err
			}
			if first == nil {
				first = errors.New("LOAD DATA LOCAL INFILE is not supported in scripts")
			}
			continue
		default:
			ncol, w, _, err := lenenc(p)
			if err != nil || ncol == 0 || ncol > 4096 {
				return c.fail(fmt.Errorf("protocol error: bad column count in result header"))
			}
			described := true
			if c.ext&extCacheMetadata != 0 {
				if len(p) <= w {
					return c.fail(fmt.Errorf("protocol error: no metadata flag in result header"))
				}
				described = p[w] != 0
			}
			n, err := c.readResultSet(int(ncol), described, q, vars, binaryRows)
			if c.broken != nil {
				return err
			}
			if err != nil && first == nil {
				first = err
			}
			rows = n
		}
		if c.status&statusMoreResults == 0 {
			break
		}
	}
	if first != nil {
		return first
	}
	if q != nil && q.Gset != nil && !q.Gset.All && rows != 1 {
		return fmt.Errorf("expected one row, got %d", max(rows, 0))
	}
	return nil
}

// readResultSet reads one result set's columns and rows after its header
// and returns the number of rows. A result not described (extCacheMetadata)
// has the columns the executed statement's last description gave.
func (c *conn) readResultSet(ncol int, described bool, q *script.SQL, vars *script.Vars, binaryRows bool) (int, error) {
	var g *script.Gset
	if q != nil {
		g = q.Gset
	}
	var cached *gsetTarget
	match := false
	var names []string
	if g != nil {
		cached = c.gset[q]
		match = cached != nil && len(cached.names) == ncol
	}
	// nameAt follows the result's column names against the cached ones.
	// (name may be a view of the packet: it is copied when kept).
	nameAt := func(i int, name string) {
		if match && name != cached.names[i] {
			match = false
			names = append(names, cached.names[:i]...)
		}
		if !match {
			names = append(names, strings.Clone(name))
		}
	}
	// A statement's columns are kept only where the server may leave
	// them out, so that other sessions parse no more than they use.
	st := c.exec
	if c.ext&extCacheMetadata == 0 {
		st = nil
	}
	c.cols = c.cols[:0]
	switch {
	case !described:
		if st == nil || len(st.cols) != ncol {
			return 0, c.fail(fmt.Errorf("protocol error: a result of %d columns the server did not describe", ncol))
		}
		c.cols = append(c.cols, st.cols...)
		if g != nil {
			for i, name := range st.names {
				nameAt(i, name)
			}
		}
	default:
		if st != nil {
			st.cols, st.names = st.cols[:0], st.names[:0]
		}
		for i := range ncol {
			p, err := c.readPacket()
			if err != nil {
				return 0, err
			}
			if g == nil && st == nil {
				continue // rows that are not stored need no column but their count
			}
			name, col, err := parseColumn(p)
			if err != nil {
				return 0, c.fail(err)
			}
			c.cols = append(c.cols, col)
			if st != nil {
				st.cols = append(st.cols, col)
				st.names = append(st.names, string(name))
			}
			if g != nil {
				nameAt(i, unsafeString(name))
			}
		}
	}
	if c.caps&capDeprecateEOF == 0 {
		if _, err := c.readPacket(); err != nil {
			return 0, err
		}
	}
	var target *gsetTarget
	if g != nil {
		if match {
			target = cached
		} else {
			target = &gsetTarget{names: names}
			syms := vars.Symbols()
			for _, n := range names {
				target.refs = append(target.refs, syms.Ref(g.Prefix+n))
			}
			if c.gset == nil {
				c.gset = make(map[*script.SQL]*gsetTarget)
			}
			c.gset[q] = target
		}
	}
	rows := 0
	for {
		p, err := c.readPacket()
		if err != nil {
			return rows, err
		}
		switch h := firstByte(p); {
		case h == 0xFE && (len(p) < 9 || c.caps&capDeprecateEOF != 0 && len(p) < maxPayload):
			c.readEnd(p)
			return rows, nil
		case h == 0xFF:
			c.status &^= statusMoreResults
			return rows, c.serverError(parseErr(p))
		}
		rows++
		if target == nil || !g.All && rows > 1 {
			continue
		}
		var err2 error
		if binaryRows {
			err2 = c.storeBinaryRow(p, target, vars)
		} else {
			err2 = storeTextRow(p, target, vars)
		}
		if err2 != nil {
			return rows, c.fail(err2) // out of step with the server
		}
	}
}

// parseColumn reads a column definition (protocol 4.1).
func parseColumn(p []byte) (name []byte, col column, err error) {
	b := p
	for range 4 { // catalog, schema, table, org_table
		if _, b, _, err = lenencString(b); err != nil {
			return nil, col, err
		}
	}
	if name, b, _, err = lenencString(b); err != nil {
		return nil, col, err
	}
	if _, b, _, err = lenencString(b); err != nil { // org_name
		return nil, col, err
	}
	_, n, _, err := lenenc(b) // length of the fixed fields, 0x0C
	if err != nil || len(b) < n+10 {
		return nil, col, errShort
	}
	b = b[n:]
	col.typ = b[6]
	col.flags = binary.LittleEndian.Uint16(b[7:])
	col.decimals = b[9]
	return name, col, nil
}

// storeTextRow stores a text row's values (NULL as an empty string, as
// pgbench stores PostgreSQL's).
func storeTextRow(p []byte, t *gsetTarget, vars *script.Vars) error {
	b := p
	for i := range t.refs {
		v, rest, _, err := lenencString(b)
		if err != nil {
			return fmt.Errorf("protocol error: text row: %w", err)
		}
		vars.SetString(t.refs[i], string(v))
		b = rest
	}
	return nil
}

// readOK reads an OK packet's status.
func (c *conn) readOK(p []byte) {
	if len(p) == 0 {
		return
	}
	b := p[1:]
	for range 2 { // affected rows, last insert id
		_, n, _, err := lenenc(b)
		if err != nil {
			return
		}
		b = b[n:]
	}
	if len(b) >= 2 {
		c.status = binary.LittleEndian.Uint16(b)
	}
}

// readEnd reads the packet that ends a result set: EOF, or with
// CLIENT_DEPRECATE_EOF an OK packet with the EOF header.
func (c *conn) readEnd(p []byte) {
	if c.caps&capDeprecateEOF != 0 {
		c.readOK(p)
		return
	}
	if len(p) >= 5 {
		c.status = binary.LittleEndian.Uint16(p[3:])
	}
}

// serverError classifies an error the server sent. The transaction may
// still be open (a lock wait timeout rolls back only the statement), so
// Reset rolls back after any error.
func (c *conn) serverError(e *ServerError) error {
	c.status = statusInTrans
	switch e.Number {
	case erConnectionKilled, erServerShutdown:
		return c.fail(e)
	}
	return classify(e)
}

// Reset rolls back an open transaction.
func (c *conn) Reset(context.Context) error {
	if c.broken != nil {
		return fmt.Errorf("%s: %w", c.t.addr, c.broken)
	}
	if c.status&statusInTrans == 0 {
		return nil
	}
	if err := c.simpleQuery("ROLLBACK"); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// Interrupt stops the statement in flight: softly with KILL QUERY from a
// side session; hard by shutting the socket (with a goroutine of its own;
// on an event loop the engine wakes the client itself, and touching the
// socket from here would race with its reads).
func (c *conn) Interrupt(hard bool) {
	if hard {
		if c.goroutine {
			c.fdMu.Lock()
			if fd := c.io.FD(); fd >= 0 {
				_ = syscall.Shutdown(fd, syscall.SHUT_RDWR)
			}
			c.fdMu.Unlock()
		}
		return
	}
	id := c.connID
	go func() { _ = c.t.killQuery(id) }()
}

// killQuery runs KILL QUERY id on a side session.
func (t *Target) killQuery(id uint32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	side, err := t.open(ctx, sockio.Blocking{Timeout: 3 * time.Second})
	if err != nil {
		return err
	}
	defer side.Close()
	return side.simpleQuery("KILL QUERY " + strconv.FormatUint(uint64(id), 10))
}

// Close ends the session, rolling back an open transaction first so that
// none is left on the server.
func (c *conn) Close() error {
	if c.io.FD() < 0 {
		return nil
	}
	if c.broken == nil {
		_ = c.Reset(context.Background())
		at := c.command(comQuit)
		c.endPacket(at)
		_ = c.flush()
	}
	return c.closeFD()
}

func (c *conn) closeFD() error {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	return c.io.Close()
}
