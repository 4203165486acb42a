package httptarget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// conn is one client's keep-alive connection. A request is built into
// req, sent, and its reply read in place from the socket's buffer (a
// chunked body is decoded into body); the connection is reopened when
// the service closed it after a reply (Connection: close) or a request
// timed out.
type conn struct {
	t    *Target
	io   sockio.Conn
	open bool // io holds a live connection
	loop bool // the client runs on an event loop
	// base is where the client's waits go; wait adds the request's
	// deadline to it (the Poller io uses).
	base sockio.Poller
	wait deadlineWait
	// served counts the replies read on this connection: a reused one
	// that the service closed while idle is reopened and the request
	// sent again, once.
	served  int
	req     []byte
	body    []byte
	scratch []byte
	broken  error
	// mu guards the socket between Close and Interrupt, which may be
	// called from another goroutine.
	mu sync.Mutex
}

var _ engine.Conn = (*conn)(nil)

// deadlineWait is the Poller of a connection: the client's, with the
// request's deadline.
type deadlineWait struct {
	base     sockio.Poller
	until    engine.DeadlinePoller // base's, when it has deadlines
	deadline time.Time
}

func (w *deadlineWait) WaitRead(fd int) error {
	if w.until != nil {
		return w.until.WaitReadUntil(fd, w.deadline)
	}
	if _, ok := w.base.(sockio.Blocking); ok {
		left := time.Until(w.deadline)
		if left <= 0 {
			return sockio.ErrTimeout
		}
		return sockio.Poll(fd, false, left)
	}
	return w.base.WaitRead(fd)
}

func (w *deadlineWait) WaitWrite(fd int) error { return w.base.WaitWrite(fd) }
func (w *deadlineWait) Forget(fd int)          { w.base.Forget(fd) }

// dial opens the connection (off the event loop when on one).
func (c *conn) dial(ctx context.Context) error {
	var s socket
	var err error
	if c.loop {
		s, err = sockio.OpenParked(ctx, c.base, func() (socket, error) { return c.t.open(ctx) },
			func(s socket) { closeSocket(s) })
		if errors.Is(err, sockio.ErrGivenUp) {
			err = c.t.connectError(err)
		}
	} else {
		s, err = c.t.open(ctx)
	}
	if err != nil {
		return err
	}
	c.wait.base = c.base
	c.wait.until, _ = c.base.(engine.DeadlinePoller)
	c.mu.Lock()
	c.io = sockio.NewConn(s.fd, &c.wait)
	if s.tls != nil {
		c.io.StartTLS(s.tls)
	}
	c.open, c.served = true, 0
	c.mu.Unlock()
	return nil
}

func closeSocket(s socket) {
	if s.tls != nil {
		s.tls.NetConn().Close()
	}
	if s.fd >= 0 {
		syscall.Close(s.fd)
	}
}

// shut closes the connection, to be reopened by the next request.
func (c *conn) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open {
		_ = c.io.Close()
		c.open = false
	}
}

// Exec sends one request and reads its reply, applying its \check and
// \gset lines. A reply that fails a check fails the transaction
// (httpmetric.CodeCheck, or http-<status> for a status of 400 or more
// with no \check of the status); a request without a reply fails it as
// timeout, or as a lost connection.
func (c *conn) Exec(ctx context.Context, cmd *script.Command, vars *script.Vars) error {
	if c.broken != nil {
		return c.lost(c.broken)
	}
	req, ok := cmd.Custom.(*httpdialect.Request)
	if !ok {
		return fmt.Errorf("http target: %s command %q is not an HTTP request", cmd.Kind, cmd.Text)
	}
	if err := c.build(req, vars); err != nil {
		return err
	}
	ep := c.t.stats.endpoint(req.ID)
	start := time.Since(c.t.epoch)
	c.wait.deadline = c.t.epoch.Add(start + c.t.cfg.Timeout)
	status, failure, err := c.roundTrip(ctx, req, vars)
	us := (time.Since(c.t.epoch) - start).Microseconds()
	if err != nil {
		c.t.stats.All.Errors.Add(1)
		if ep != nil {
			ep.Errors.Add(1)
		}
		return err
	}
	c.t.stats.All.Record(status, us)
	if ep != nil {
		ep.Record(status, us)
	}
	return failure
}

// build writes the request into c.req.
func (c *conn) build(req *httpdialect.Request, vars *script.Vars) error {
	b := append(c.req[:0], req.Method...)
	b = append(b, ' ')
	b = append(b, c.t.prefix...)
	b, unset := req.Target.Append(b, vars, httpdialect.Percent)
	if unset != script.NoVar {
		return c.unset(req, vars, unset)
	}
	b = append(b, " HTTP/1.1\r\n"...)
	b = append(b, c.t.fixed...)
	for i := range req.Headers {
		h := &req.Headers[i]
		b = append(b, h.Name...)
		b = append(b, ": "...)
		at := len(b)
		if b, unset = h.Value.Append(b, vars, httpdialect.Raw); unset != script.NoVar {
			return c.unset(req, vars, unset)
		}
		for _, ch := range b[at:] {
			if ch == '\r' || ch == '\n' {
				return &engine.DBError{Code: engine.CodeClient, Err: fmt.Errorf("%s: header %s: a variable's value holds a line break", req.Endpoint, h.Name)}
			}
		}
		b = append(b, "\r\n"...)
	}
	if req.HasBody {
		var body []byte
		if body, unset = req.Body.Append(c.scratch[:0], vars, httpdialect.Raw); unset != script.NoVar {
			return c.unset(req, vars, unset)
		}
		c.scratch = body
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, body...)
	} else {
		b = append(b, "\r\n"...)
	}
	c.req = b
	return nil
}

func (c *conn) unset(req *httpdialect.Request, vars *script.Vars, v script.VarRef) error {
	return &engine.DBError{Code: engine.CodeClient, Err: fmt.Errorf("%s: undefined variable %q", req.Endpoint, vars.Symbols().Name(v))}
}

// roundTrip sends c.req and reads the reply: its status, the failure of
// a check (the reply was read whole, the connection is fine), or err
// when there was no reply.
func (c *conn) roundTrip(ctx context.Context, req *httpdialect.Request, vars *script.Vars) (status int, failure, err error) {
	for attempt := 0; ; attempt++ {
		// reused: the connection was open before this request, so the
		// service may have closed it while it sat idle (also one never
		// used: Go's servers close a connection whose first request is
		// slower than their ReadHeaderTimeout).
		reused := c.open
		if !c.open {
			if err := c.dial(ctx); err != nil {
				c.broken = err
				return 0, nil, err
			}
		}
		if tc := c.io.TLS(); tc != nil {
			_ = tc.SetDeadline(c.wait.deadline)
		}
		c.io.W = append(c.io.W[:0], c.req...)
		err := c.io.Flush(true)
		if err == nil {
			status, failure, err = c.readReply(req, vars)
			if err == nil {
				c.served++
				return status, failure, nil
			}
		}
		if c.timedOut(err) {
			c.shut()
			return 0, nil, &engine.DBError{Code: httpmetric.CodeTimeout,
				Err: fmt.Errorf("%s: no reply from %s within %v", req.Endpoint, c.t.addr, c.t.cfg.Timeout)}
		}
		nothing := len(c.io.Buffered()) == 0
		c.shut()
		if errors.Is(err, errProtocol) {
			c.broken = err
			return 0, nil, &engine.DBError{Code: httpmetric.CodeProtocol, Fault: engine.Lost, Err: fmt.Errorf("http service at %s: %w", c.t.addr, err)}
		}
		// A keep-alive connection the service closed while it was idle:
		// the request never reached it, send it again on a new one.
		if reused && nothing && attempt == 0 && idleClose(err) {
			continue
		}
		c.broken = err
		return 0, nil, c.lost(err)
	}
}

func (c *conn) timedOut(err error) bool {
	return errors.Is(err, sockio.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded)
}

// idleClose says whether err is what a request meets on a connection the
// service closed.
func idleClose(err error) bool {
	return errors.Is(err, sockio.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *conn) lost(err error) error {
	return &engine.DBError{Code: engine.CodeConnection, Fault: engine.Lost, Err: fmt.Errorf("http service at %s: %w", c.t.addr, err)}
}

// readReply reads one reply and applies the request's checks and gsets.
func (c *conn) readReply(req *httpdialect.Request, vars *script.Vars) (status int, failure, err error) {
	var h Head
	for {
		h, err = ParseHead(c.io.Buffered())
		if err == errIncomplete {
			if err = c.io.Fill(); err != nil {
				return 0, nil, err
			}
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		if h.Status >= 100 && h.Status < 200 && h.Status != 101 {
			c.io.Consume(h.Len) // 100 Continue, 103 Early Hints: the reply follows
			continue
		}
		break
	}
	status = h.Status
	failure = c.checkStatus(req, status)
	if failure == nil {
		failure = c.headerGsets(req, vars, c.io.Buffered()[:h.Len])
	}
	var body []byte
	consumed := h.Len
	switch {
	case req.Method == "HEAD" || status == 204 || status == 304 || status == 101:
	case h.Chunked:
		c.io.Consume(h.Len)
		consumed = 0
		if c.body, consumed, err = c.readChunked(c.body[:0]); err != nil {
			return 0, nil, err
		}
		body = c.body
	case h.ContentLength >= 0:
		if h.ContentLength > 1<<30 {
			return 0, nil, fmt.Errorf("%w: a body of %d bytes", errProtocol, h.ContentLength)
		}
		n := h.Len + int(h.ContentLength)
		if err = c.io.Ensure(n); err != nil {
			return 0, nil, err
		}
		body, consumed = c.io.Buffered()[h.Len:n], n
	default: // the body runs to the connection's end
		for {
			if err = c.io.Fill(); err != nil {
				break
			}
			if len(c.io.Buffered()) > 1<<30 {
				return 0, nil, fmt.Errorf("%w: a body of more than 1 GiB", errProtocol)
			}
		}
		if !errors.Is(err, sockio.ErrClosed) {
			return 0, nil, err
		}
		err = nil
		body, consumed = c.io.Buffered()[h.Len:], len(c.io.Buffered())
		h.Close = true
	}
	if failure == nil {
		failure = c.bodyChecks(req, vars, body)
	}
	c.io.Consume(consumed)
	if h.Close || status == 101 {
		c.shut()
	}
	return status, failure, nil
}

// readChunked decodes a chunked body into buf, returning it and how much
// of the buffer is left to consume (the trailer's end).
func (c *conn) readChunked(buf []byte) ([]byte, int, error) {
	for {
		size, n, err := ParseChunkSize(c.io.Buffered())
		if err == errIncomplete {
			if err := c.io.Fill(); err != nil {
				return buf, 0, err
			}
			continue
		}
		if err != nil {
			return buf, 0, err
		}
		if size == 0 {
			// Trailers, then the empty line.
			c.io.Consume(n)
			for {
				b := c.io.Buffered()
				if len(b) >= 2 && b[0] == '\r' && b[1] == '\n' {
					return buf, 2, nil
				}
				if i := indexCRLF(b); i >= 0 {
					c.io.Consume(i + 2) // a trailer line
					continue
				}
				if err := c.io.Fill(); err != nil {
					return buf, 0, err
				}
			}
		}
		if size > 1<<30 || len(buf)+int(size) > 1<<30 {
			return buf, 0, fmt.Errorf("%w: a chunk of %d bytes", errProtocol, size)
		}
		if err := c.io.Ensure(n + int(size) + 2); err != nil {
			return buf, 0, err
		}
		b := c.io.Buffered()
		if b[n+int(size)] != '\r' || b[n+int(size)+1] != '\n' {
			return buf, 0, fmt.Errorf("%w: a chunk not ended by CRLF", errProtocol)
		}
		buf = append(buf, b[n:n+int(size)]...)
		c.io.Consume(n + int(size) + 2)
	}
}

// checkStatus applies the request's status checks, or the default: a
// status of 400 or more fails.
func (c *conn) checkStatus(req *httpdialect.Request, status int) error {
	if !req.StatusChecked {
		if status >= 400 {
			return &engine.DBError{Code: statusCode(status), Err: fmt.Errorf("%s: status %d", req.Endpoint, status)}
		}
		return nil
	}
	for i := range req.Checks {
		ch := &req.Checks[i]
		if ch.What == httpdialect.CheckStatus && !ch.StatusOK(status) {
			return checkFailed(req, ch, fmt.Sprintf("status %d", status))
		}
	}
	return nil
}

// statusCodes are the codes of the statuses, made once.
var statusCodes = func() (codes [1000]string) {
	for s := 100; s < 1000; s++ {
		codes[s] = httpmetric.CodeStatusPrefix + strconv.Itoa(s)
	}
	return codes
}()

func statusCode(status int) string {
	if status >= 100 && status < 1000 {
		return statusCodes[status]
	}
	return httpmetric.CodeStatusPrefix + strconv.Itoa(status)
}

func checkFailed(req *httpdialect.Request, ch *httpdialect.Check, saw string) error {
	return &engine.DBError{Code: httpmetric.CodeCheck, Err: fmt.Errorf("%s: %s (line %d) failed: %s", req.Endpoint, ch.Describe(), ch.Line, saw)}
}

// headerGsets stores the headers \gset names.
func (c *conn) headerGsets(req *httpdialect.Request, vars *script.Vars, head []byte) error {
	for i := range req.Gsets {
		g := &req.Gsets[i]
		if g.Header == "" {
			continue
		}
		v, ok := HeaderValue(head, g.Header)
		if !ok {
			return &engine.DBError{Code: httpmetric.CodeCheck, Err: fmt.Errorf("%s: \\gset %s = header %s: the reply has no such header", req.Endpoint, vars.Symbols().Name(g.Var), g.Header)}
		}
		vars.SetString(g.Var, string(v))
	}
	return nil
}

// bodyChecks applies the body's checks and stores what \gset reads of
// the JSON body.
func (c *conn) bodyChecks(req *httpdialect.Request, vars *script.Vars, body []byte) error {
	for i := range req.Checks {
		ch := &req.Checks[i]
		if ch.What == httpdialect.CheckStatus {
			continue
		}
		var ok bool
		if ok, c.scratch = ch.BodyOK(body, vars, c.scratch); !ok {
			return checkFailed(req, ch, describeBody(ch, body))
		}
	}
	for i := range req.Gsets {
		g := &req.Gsets[i]
		if g.Header != "" {
			continue
		}
		raw, ok := httpdialect.Lookup(body, g.Path)
		if !ok {
			return &engine.DBError{Code: httpmetric.CodeCheck, Err: fmt.Errorf("%s: \\gset %s = %s: no such value in the reply (%s)", req.Endpoint, vars.Symbols().Name(g.Var), g.Path.Text, clip(body))}
		}
		if err := store(vars, g.Var, raw, &c.scratch); err != nil {
			return &engine.DBError{Code: httpmetric.CodeCheck, Err: fmt.Errorf("%s: \\gset %s = %s: %w", req.Endpoint, vars.Symbols().Name(g.Var), g.Path.Text, err)}
		}
	}
	return nil
}

// store sets a variable from a raw JSON value: a number or boolean as
// itself (no allocation for integers), a string's text, anything else as
// written.
func store(vars *script.Vars, v script.VarRef, raw []byte, scratch *[]byte) error {
	switch c := raw[0]; {
	case c == '"':
		s, ok := httpdialect.AppendUnquoted((*scratch)[:0], raw)
		if !ok {
			return errors.New("a malformed string")
		}
		*scratch = s
		vars.SetString(v, string(s))
	case c == '-' || '0' <= c && c <= '9':
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			vars.SetInt(v, n)
			return nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return fmt.Errorf("the number %q", clip(raw))
		}
		vars.SetValue(v, script.Value{Type: script.TypeDouble, Dbl: f})
	case c == 't' || c == 'f':
		b := int64(0)
		if c == 't' {
			b = 1
		}
		vars.SetValue(v, script.Value{Type: script.TypeBool, Int: b})
	case c == 'n':
		vars.SetValue(v, script.Value{Type: script.TypeNull})
	default:
		vars.SetString(v, string(raw))
	}
	return nil
}

func describeBody(ch *httpdialect.Check, body []byte) string {
	if ch.What == httpdialect.CheckJSON {
		if raw, ok := httpdialect.Lookup(body, ch.Path); ok {
			return fmt.Sprintf("%s is %s", ch.Path.Text, clip(raw))
		}
		return fmt.Sprintf("%s is not in the reply (%s)", ch.Path.Text, clip(body))
	}
	return fmt.Sprintf("the body is %s", strconv.Quote(clip(body)))
}

// Reset leaves the connection ready for the next transaction: a
// connection lost mid-request is broken, and the engine opens another.
func (c *conn) Reset(context.Context) error {
	return c.broken
}

// Interrupt stops the request in flight from another goroutine by
// shutting the socket down (HTTP has no cancel request).
func (c *conn) Interrupt(bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open {
		return
	}
	if tc := c.io.TLS(); tc != nil {
		_ = tc.NetConn().Close()
		return
	}
	if fd := c.io.FD(); fd >= 0 {
		_ = syscall.Shutdown(fd, syscall.SHUT_RDWR)
	}
}

// Close ends the connection.
func (c *conn) Close() error {
	c.shut()
	return nil
}
