package redistarget

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// conn is one client's session. It writes each command as a RESP array
// of bulk strings and reads the replies in place from its read buffer;
// pipelined commands are written together at \endpipeline (or when
// 64 KiB are waiting), then their replies read in order.
type conn struct {
	// io is the socket: commands are encoded into io.W, replies read in
	// place from io.Buffered. A TLS session has no descriptor (-1) and
	// blocks in Go's TLS reads and writes, off the event loop.
	io        sockio.Conn
	addr      string
	tlsClosed bool

	arg []byte // an argument with variables, rendered
	// literal caches the encoding of commands without variables, in
	// slots chosen by the command's address.
	literal [64]struct {
		rc  *script.RedisCommand
		enc []byte
	}
	// queued are the commands in io.W; owed, those sent whose replies
	// are unread.
	queued, owed int
	pipe         bool
	// multi and watching follow MULTI and WATCH, so that Reset can end a
	// transaction a failed script left open.
	multi, watching bool
	broken          error

	// mu guards the socket between Close and Interrupt, which may be called from
	// another goroutine.
	mu sync.Mutex
}

var _ engine.Conn = (*conn)(nil)

// errClosed is the error of a session the server ended.
var errClosed = sockio.ErrClosed

func newConn(fd int, p engine.Poller, addr string) *conn {
	return &conn{io: sockio.NewConn(fd, p), addr: addr}
}

// handshake sends the session's setup commands (AUTH, HELLO, CLIENT
// SETNAME, SELECT) at once and checks every reply, waiting for the server
// in poll(2) at most until the connect timeout, as a blocking connect does.
func (c *conn) handshake(cmds []byte, n int, deadline time.Time) error {
	p := c.io.Poller()
	c.io.SetPoller(sockio.Blocking{Deadline: deadline})
	defer c.io.SetPoller(p)
	c.io.W = append(c.io.W[:0], cmds...)
	c.queued = n
	// The session is not open until the server answered: failing here is
	// failing to connect.
	if err := c.flush(); err != nil {
		// A server at maxclients replies and hangs up at once: our
		// commands may meet a closed socket, but its reply is there to
		// read.
		c.owed, c.queued = c.owed+c.queued, 0
		if tc := c.io.TLS(); tc != nil {
			// A TLS 1.3 server that refuses the client's certificate
			// says why (an alert) after the handshake and hangs up: the
			// alert, not the failed write, is the reason.
			_ = tc.SetReadDeadline(time.Now().Add(time.Second))
			if rerr := c.io.Fill(); redisconn.IsRemoteAlert(rerr) {
				c.broken = rerr
				return c.connectError()
			}
		}
		if reply, rerr := c.readReply(); rerr == nil && isError(reply) {
			return c.setupError(errorText(reply))
		}
		return c.connectError()
	}
	var first error
	for c.owed > 0 {
		reply, err := c.readReply()
		if err != nil {
			if first != nil { // the server said why, then hung up (maxclients)
				return first
			}
			return c.connectError()
		}
		if isError(reply) && first == nil {
			first = c.setupError(errorText(reply))
		}
	}
	return first
}

// setupError is the error a server replied to a session's setup.
func (c *conn) setupError(msg []byte) error {
	return &engine.DBError{Code: errorCode(msg), Err: fmt.Errorf("redis at %s: connection setup: %s", c.addr, msg),
		Fault: setupFault(msg)}
}

// setupFault says which errors at a session's setup are the server's
// state rather than the session's mistake: a server at maxclients (which
// replies so and hangs up) refuses, one loading its data set is not
// available yet; both are retried as an application's pool would.
func setupFault(msg []byte) engine.ConnFault {
	switch {
	case bytes.HasPrefix(msg, []byte("ERR max number of clients reached")):
		return engine.Refused
	case bytes.HasPrefix(msg, []byte("LOADING")):
		return engine.Unavailable
	}
	return engine.NoFault
}

// connectError is the error of a session that broke during its setup:
// on TLS, maybe the server's refusal of the client's certificate; on a
// plain session that the server hung up on or answered with what is not
// RESP, maybe a port that speaks only TLS.
func (c *conn) connectError() error {
	err := c.broken
	switch {
	case c.io.TLS() != nil:
		err = redisconn.ExplainTLS(err)
	case errors.Is(err, errClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, errProtocol):
		err = fmt.Errorf("%w (%s)", err, redisconn.PlainHint)
	}
	return &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to redis at %s: %w", c.addr, err)}
}

func (c *conn) fail(err error) error {
	if c.broken == nil {
		c.broken = err
	}
	return &engine.DBError{Code: engine.CodeConnection, Err: fmt.Errorf("redis at %s: %w", c.addr, err)}
}

// Exec runs one command of a Redis script: a Redis command is sent and
// its reply read (an error reply returned as *engine.DBError with the
// reply's code), or queued inside a pipeline, whose replies \endpipeline
// reads, returning the first error among them.
func (c *conn) Exec(_ context.Context, cmd *script.Command, vars *script.Vars) error {
	if c.broken != nil {
		return &engine.DBError{Code: engine.CodeConnection, Err: fmt.Errorf("redis at %s: %w", c.addr, c.broken)}
	}
	switch cmd.Kind {
	case script.KindRedis:
		rc := cmd.Redis
		if c.pipe && rc.Gset != nil {
			return errors.New("\\gset is not allowed in pipeline mode: its reply is read only at \\endpipeline")
		}
		if err := c.encode(rc, vars); err != nil {
			return err
		}
		if c.pipe {
			if len(c.io.W) > 64<<10 {
				return c.flush()
			}
			return nil
		}
		if err := c.flush(); err != nil {
			return err
		}
		reply, err := c.readReply()
		if err != nil {
			return err
		}
		if isError(reply) {
			return replyError(reply)
		}
		if rc.Gset != nil {
			return store(reply, rc.Gset, vars)
		}
		return nil
	case script.KindStartPipeline:
		if c.pipe {
			return errors.New("already in pipeline mode")
		}
		c.pipe = true
		return nil
	case script.KindEndPipeline:
		if !c.pipe {
			return errors.New("not in pipeline mode")
		}
		c.pipe = false
		if err := c.flush(); err != nil {
			return err
		}
		var first error
		for c.owed > 0 {
			reply, err := c.readReply()
			if err != nil {
				return err
			}
			if first == nil && isError(reply) {
				first = replyError(reply)
			}
		}
		return first
	}
	return fmt.Errorf("%s: not a command for Redis (a Redis script has Redis commands and meta-commands)", cmd.Kind)
}

// encode appends the command to wbuf.
func (c *conn) encode(rc *script.RedisCommand, vars *script.Vars) error {
	p := uintptr(unsafe.Pointer(rc))
	cached := &c.literal[(p>>6^p>>12)%uintptr(len(c.literal))]
	if cached.rc == rc {
		c.io.W = append(c.io.W, cached.enc...)
		c.queued++
		c.track(rc.Name)
		return nil
	}
	start := len(c.io.W)
	b := appendLength(append(c.io.W, '*'), len(rc.Args))
	literal := true
	for i := range rc.Args {
		a := &rc.Args[i]
		val := a.Literal
		if a.Parts != nil {
			var unset script.VarRef
			c.arg, unset = a.Append(c.arg[:0], vars)
			if unset != script.NoVar {
				c.io.W = b[:start]
				return fmt.Errorf("undefined variable %q in argument %d", vars.Symbols().Name(unset), i+1)
			}
			val = unsafe.String(unsafe.SliceData(c.arg), len(c.arg))
			literal = false
		}
		b = appendLength(append(b, '$'), len(val))
		b = append(b, val...)
		b = append(b, '\r', '\n')
	}
	c.io.W = b
	c.queued++
	if literal {
		// A command without variables is sent as the same bytes every
		// time: keep them (a slot's buffer is reused, so that commands
		// sharing a slot cost encoding, not allocation).
		cached.rc = rc
		cached.enc = append(cached.enc[:0], b[start:]...)
	}
	c.track(rc.Name)
	return nil
}

// appendLength appends a RESP length and its CRLF.
func appendLength(b []byte, n int) []byte {
	if n < 10 {
		return append(b, byte('0'+n), '\r', '\n')
	}
	return append(strconv.AppendInt(b, int64(n), 10), '\r', '\n')
}

// track follows the commands that open and close transactions.
func (c *conn) track(name string) {
	switch name {
	case "MULTI":
		c.multi = true
	case "EXEC", "DISCARD":
		c.multi, c.watching = false, false
	case "WATCH":
		c.watching = true
	case "UNWATCH":
		c.watching = false
	}
}

// flush sends the commands encoded in io.W.
func (c *conn) flush() error {
	if err := c.io.Flush(c.queued > 0); err != nil {
		return c.fail(err)
	}
	c.owed += c.queued
	c.queued = 0
	return nil
}

// readReply returns the next reply to a command (push messages and
// attributes skipped); it is valid until the next read.
func (c *conn) readReply() ([]byte, error) {
	for {
		if buffered := c.io.Buffered(); len(buffered) > 0 {
			n, err := replyEnd(buffered)
			if err != nil {
				return nil, c.fail(err)
			}
			if n > 0 {
				reply := buffered[:n]
				c.io.Consume(n)
				if reply[0] == '|' {
					at, err := skipAttributes(reply)
					if err != nil {
						return nil, c.fail(err)
					}
					reply = reply[at:]
				}
				if isPush(reply) {
					continue
				}
				c.owed--
				return reply, nil
			}
		}
		if c.owed <= 0 {
			return nil, c.fail(errors.New("protocol error: a reply to no command"))
		}
		if err := c.io.Fill(); err != nil {
			return nil, c.fail(err)
		}
	}
}

// replyError turns an error reply into the engine's error, counted by
// the reply's code.
func replyError(reply []byte) error {
	msg := errorText(reply)
	return &engine.DBError{Code: errorCode(msg), Err: errors.New(string(msg))}
}

// store puts a reply's value into \gset's variables: one for a single
// value, one per element of an array (or map) reply.
func store(reply []byte, refs []script.VarRef, vars *script.Vars) error {
	if text, _, ok := scalar(reply, 0); ok {
		if len(refs) != 1 {
			return fmt.Errorf("\\gset: the reply is a single value, not %d; give \\gset one variable", len(refs))
		}
		vars.SetString(refs[0], string(text))
		return nil
	}
	n := 0
	var nested error
	isAggregate, err := elements(reply, func(elem []byte) error {
		text, _, ok := scalar(elem, 0)
		if !ok {
			nested = fmt.Errorf("\\gset: element %d of the reply is not a single value (nested replies cannot be stored)", n+1)
			return nested
		}
		if n < len(refs) {
			vars.SetString(refs[n], string(text))
		}
		n++
		return nil
	})
	switch {
	case err != nil && err == nested:
		return err
	case err != nil:
		return fmt.Errorf("\\gset: %w", err)
	case !isAggregate:
		return fmt.Errorf("\\gset: a reply of type %q cannot be stored", reply[0])
	case n == 0 && len(refs) > 0 && isNil(reply):
		for _, r := range refs {
			vars.SetString(r, "")
		}
		return nil
	case n != len(refs):
		return fmt.Errorf("\\gset: the reply has %d elements and \\gset %d variables; give one variable per element", n, len(refs))
	}
	return nil
}

// isNil reports a nil aggregate (*-1): EXEC after a WATCHed key changed.
func isNil(reply []byte) bool { return len(reply) >= 3 && reply[1] == '-' && reply[2] == '1' }

// Reset leaves the session ready for a new transaction: it forgets an
// unsent pipeline, reads the replies still owed, and ends a MULTI (or a
// WATCH) that the failed script left open.
func (c *conn) Reset(context.Context) error {
	c.pipe = false
	c.io.W, c.queued = c.io.W[:0], 0
	if c.broken != nil {
		return c.broken
	}
	for c.owed > 0 {
		if _, err := c.readReply(); err != nil {
			return err
		}
	}
	var end string
	switch {
	case c.multi:
		end = "DISCARD"
	case c.watching:
		end = "UNWATCH"
	default:
		return nil
	}
	c.multi, c.watching = false, false
	c.io.W = appendCommand(c.io.W, end)
	c.queued = 1
	if err := c.flush(); err != nil {
		return err
	}
	// An error reply ("DISCARD without MULTI", when the MULTI was never
	// sent) leaves the session as clean as success does.
	_, err := c.readReply()
	return err
}

// Interrupt stops the command in flight by shutting the socket down:
// Redis has no cancel request, and a blocked command (BLPOP) only ends
// with its session. The descriptor stays open until Close, so the
// session's own reads see the end rather than a reused descriptor.
func (c *conn) Interrupt(bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fd := c.io.FD(); fd >= 0 {
		_ = syscall.Shutdown(fd, syscall.SHUT_RDWR)
	}
	if tc := c.io.TLS(); tc != nil && !c.tlsClosed {
		// A deadline in the past ends the read or write in flight, and
		// every later one, as the shutdown does on a raw socket.
		_ = tc.NetConn().SetDeadline(time.Unix(1, 0))
	}
}

// Close ends the session, discarding a transaction left open first.
func (c *conn) Close() error {
	if c.io.FD() < 0 && (c.io.TLS() == nil || c.tlsClosed) {
		return nil
	}
	if c.broken == nil {
		_ = c.Reset(context.Background())
	}
	return c.closeFD()
}

func (c *conn) closeFD() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tc := c.io.TLS(); tc != nil {
		if c.tlsClosed {
			return nil
		}
		c.tlsClosed = true
		// Close sends close_notify first, which fails harmlessly on a
		// session the server or Interrupt ended; the socket is closed
		// either way.
		_ = tc.Close()
		return nil
	}
	return c.io.Close()
}
