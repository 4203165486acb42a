// Package sockio is the socket layer under the database clients
// (db/<kind>/client): a session's raw, non-blocking socket with its read
// and write buffers, the waits that park a client when the socket is not
// ready, and the fallback through crypto/tls for encrypted sessions. Each
// client keeps only its protocol's framing: it appends requests to W,
// calls Flush, and cuts replies out of Buffered, calling Fill or Ensure
// for more and Consume for what it has read.
//
// The hot path allocates nothing: reads land in one reused buffer that
// starts small (most replies of a load test are a few hundred bytes, and
// 1,000 clients each holding a large buffer is memory for nothing), grows
// by doubling when a reply does not fit, and shrinks back once replies
// have stayed small for a while, so one large reply does not pin its
// buffer for the rest of the run.
package sockio

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
	"unsafe"
)

// Poller parks a client until its session's socket is ready: the
// engine's event loop for clients on a loop, Blocking for clients with a
// goroutine of their own.
type Poller interface {
	// WaitRead returns when fd is readable, or with an error when the
	// wait is given up (the run is being stopped hard, a deadline
	// passed): the session must then be considered broken.
	WaitRead(fd int) error
	// WaitWrite returns when fd is writable (a send larger than the
	// socket's buffer), with the same error as WaitRead.
	WaitWrite(fd int) error
	// Forget is called before the session closes fd.
	Forget(fd int)
}

// Holder is a Poller that can hold a small request and send it with the
// others of its loop's turn, in one system call at the turn's end (the
// event loop's send ring). Hold copies b; it reports false when it does
// not take it (the caller writes at once). SendHeld sends what is held
// now: a session about to write directly or close calls it first, so
// that its bytes go in order and never to a reused descriptor.
type Holder interface {
	Hold(c *Conn, b []byte) bool
	SendHeld()
}

// ErrClosed is Fill's error when the server ended the session.
var ErrClosed = errors.New("server closed the connection unexpectedly")

const (
	// initialSize is a new session's read buffer: a page, more than
	// nearly every reply of a load test.
	initialSize = 4 << 10
	// shrinkAfter is how many replies in a row must fit in a quarter of
	// a grown buffer before it shrinks: often enough that one large
	// reply does not pin its buffer, rarely enough that a workload
	// alternating large and small replies does not reallocate per query.
	shrinkAfter = 64
	// maxKeptWrite is the largest write buffer kept after a flush.
	maxKeptWrite = 1 << 20
)

// Conn is one session's socket and its buffers. The zero value is not
// usable: make one with NewConn or NewTLSConn. Its methods are called from
// the session's own goroutine or coroutine only.
type Conn struct {
	fd  int
	p   Poller
	tls *tls.Conn

	buf        []byte
	rpos, rend int
	// peak is the most bytes buffered since the last shrink check, and
	// small counts the replies read since (see shrinkAfter).
	peak, small int

	// W is the request being built: the client appends to it and Flush
	// sends it.
	W []byte
	// fresh says a request was just sent, so its answer is almost never
	// there yet: Fill waits for the socket rather than spend a read on
	// EAGAIN.
	fresh bool
	// held says the last request is held by the Poller (Holder) until
	// its turn ends; unsent is what of it the socket did not take then,
	// with sendErr, for Fill to finish.
	held    bool
	unsent  []byte
	sendErr syscall.Errno
}

// maxHeld is the largest request a Holder is given: a few KiB always
// fit an idle socket's buffer, so a held request goes in full.
const maxHeld = 4 << 10

// Unsent is the Holder's report that rest of the held request did not
// go (errno EAGAIN: the socket's buffer was full; another: the session
// broke); the session finishes or fails it in its next Fill.
func (c *Conn) Unsent(rest []byte, res int32) {
	c.unsent = append(c.unsent[:0], rest...)
	if res < 0 {
		c.sendErr = syscall.Errno(-res)
	}
}

// NewConn is a session on the raw non-blocking socket fd (from DupFD),
// whose waits go through p. With fd -1 it is a session read from memory
// (Preload) that ends when the bytes do.
func NewConn(fd int, p Poller) Conn {
	return Conn{fd: fd, p: p, buf: make([]byte, initialSize)}
}

// StartTLS makes the session read and write through tc from now on
// (blocking, on the client's own goroutine); the raw descriptor, if any,
// stays for Shutdown and Close.
func (c *Conn) StartTLS(tc *tls.Conn) { c.tls = tc }

// FD is the session's socket descriptor, -1 when closed or in memory.
func (c *Conn) FD() int { return c.fd }

// TLS is the session's TLS connection, nil when it is not encrypted.
func (c *Conn) TLS() *tls.Conn { return c.tls }

// Poller is where the session's waits go.
func (c *Conn) Poller() Poller { return c.p }

// SetPoller changes where the session's waits go (a session opened off
// its event loop, handed to it).
func (c *Conn) SetPoller(p Poller) { c.p = p }

// Preload appends bytes to the read buffer as if the server had sent
// them (decoders fed from memory: fuzzing).
func (c *Conn) Preload(b []byte) {
	c.buf = append(c.buf[:c.rend], b...)
	c.rend = len(c.buf)
	c.buf = c.buf[:cap(c.buf)]
}

// Buffered is what has been read and not consumed: valid until the next
// Fill, Ensure or Consume.
func (c *Conn) Buffered() []byte { return c.buf[c.rpos:c.rend] }

// Consume marks the first n bytes of Buffered as read. Slices of them the
// caller holds stay valid until its next Fill or Ensure.
func (c *Conn) Consume(n int) {
	c.rpos += n
	if c.rpos < c.rend {
		return
	}
	c.rpos, c.rend = 0, 0
	if len(c.buf) <= initialSize {
		return
	}
	// A reply ended with the buffer: a moment to see whether it is
	// larger than what the replies need.
	if c.small++; c.small < shrinkAfter {
		return
	}
	if c.peak <= len(c.buf)/4 {
		c.buf = make([]byte, max(initialSize, 2*c.peak))
	}
	c.small, c.peak = 0, 0
}

// Ensure reads until at least n bytes are buffered, growing the buffer
// to hold them.
func (c *Conn) Ensure(n int) error {
	for c.rend-c.rpos < n {
		if n > len(c.buf) {
			c.grow(n)
		}
		if err := c.Fill(); err != nil {
			return err
		}
	}
	return nil
}

// grow makes the buffer hold at least n bytes, the unread ones first.
func (c *Conn) grow(n int) {
	grown := make([]byte, max(n, 2*len(c.buf)))
	c.rend = copy(grown, c.buf[c.rpos:c.rend])
	c.rpos, c.buf = 0, grown
}

// Fill reads more of the server's bytes: at least one, or an error —
// ErrClosed when the server ended the session, the Poller's when a wait
// was given up, "read: ..." otherwise.
func (c *Conn) Fill() error {
	if c.rpos > 0 {
		c.rend = copy(c.buf, c.buf[c.rpos:c.rend])
		c.rpos = 0
	}
	if c.rend == len(c.buf) {
		c.grow(2 * len(c.buf))
	}
	if c.tls != nil {
		return c.fillTLS()
	}
	if c.fd < 0 {
		return ErrClosed // a decoder fed from memory ran out
	}
	if c.fresh {
		c.fresh = false
		if err := c.p.WaitRead(c.fd); err != nil {
			return err
		}
		if c.held {
			c.held = false
			if c.unsent != nil || c.sendErr != 0 {
				if err := c.finishHeld(); err != nil {
					return err
				}
			}
		}
	}
	for {
		b := c.buf[c.rend:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			if n == 0 {
				return ErrClosed
			}
			c.read(int(n))
			return nil
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.p.WaitRead(c.fd); err != nil {
				return err
			}
		default:
			return fmt.Errorf("read: %w", errno)
		}
	}
}

// read counts n bytes just read into the buffer.
func (c *Conn) read(n int) {
	c.rend += n
	c.peak = max(c.peak, c.rend)
}

// fillTLS is Fill on an encrypted session. A read that brought bytes
// succeeds (an error that came with them comes again on the next read).
func (c *Conn) fillTLS() error {
	c.fresh = false
	n, err := c.tls.Read(c.buf[c.rend:])
	switch {
	case n > 0:
		c.read(n)
		return nil
	case err == nil:
		return errors.New("read: no data")
	case errors.Is(err, io.EOF):
		return ErrClosed
	}
	return fmt.Errorf("read: %w", err)
}

// finishHeld writes what of the held request the socket did not take,
// then waits for the reply as Fill would have.
func (c *Conn) finishHeld() error {
	b, errno := c.unsent, c.sendErr
	c.unsent, c.sendErr = nil, 0
	switch errno {
	case 0, syscall.EAGAIN, syscall.EINTR:
	default:
		return fmt.Errorf("write: %w", errno)
	}
	if err := c.write(b); err != nil {
		return err
	}
	return c.p.WaitRead(c.fd)
}

// Flush sends W and empties it. awaitReply says the server answers what
// was sent, so that the next Fill waits for the socket before reading.
func (c *Conn) Flush(awaitReply bool) error {
	if c.held {
		c.sendHeld()
	}
	if c.tls == nil && awaitReply && len(c.W) <= maxHeld {
		if h, ok := c.p.(Holder); ok && h.Hold(c, c.W) {
			c.held, c.fresh = true, true
			c.W = c.W[:0]
			return nil
		}
	}
	if c.tls != nil {
		if _, err := c.tls.Write(c.W); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	} else {
		if err := c.write(c.W); err != nil {
			return err
		}
		c.fresh = awaitReply
	}
	if cap(c.W) > maxKeptWrite {
		c.W = nil // a bulk request: do not keep its buffer for the run
	} else {
		c.W = c.W[:0]
	}
	return nil
}

// write writes b, waiting for the socket when its buffer is full.
func (c *Conn) write(b []byte) error {
	for len(b) > 0 {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			b = b[n:]
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.p.WaitWrite(c.fd); err != nil {
				return err
			}
		default:
			return fmt.Errorf("write: %w", errno)
		}
	}
	return nil
}

// sendHeld has the Holder send the held request now, before a direct
// write or a close, and finishes what did not go (a write that follows
// must not overtake it).
func (c *Conn) sendHeld() {
	if h, ok := c.p.(Holder); ok {
		h.SendHeld()
	}
	c.held = false
	if c.unsent != nil || c.sendErr == syscall.EAGAIN {
		b := c.unsent
		c.unsent, c.sendErr = nil, 0
		_ = c.write(b) // an error shows on the next read
	}
}

// Close forgets the descriptor in the Poller and closes it (and the TLS
// session's socket, without close_notify). Callers that Shutdown from
// another goroutine hold their own lock around both.
func (c *Conn) Close() error {
	if c.held {
		if h, ok := c.p.(Holder); ok {
			h.SendHeld() // before the descriptor can be reused
		}
		c.held, c.unsent, c.sendErr = false, nil, 0
	}
	if c.tls != nil {
		_ = c.tls.NetConn().Close()
	}
	if c.fd < 0 {
		return nil
	}
	c.p.Forget(c.fd)
	err := syscall.Close(c.fd)
	c.fd = -1
	return err
}

// DupFD takes a non-blocking duplicate of a connection's socket, for a
// session that does its own I/O outside Go's netpoller; the caller closes
// the connection (or keeps it for TLS).
func DupFD(sc syscall.Conn) (int, error) {
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(f uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, fmt.Errorf("dup socket: %w", err)
	}
	if dupErr != nil {
		return -1, fmt.Errorf("dup socket: %w", dupErr)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("socket non-blocking: %w", err)
	}
	return fd, nil
}

// Poll waits until fd is readable (or writable) with ppoll(2) — poll(2),
// which arm64 lacks, with a timespec — for at most timeout (< 0: no
// limit).
func Poll(fd int, write bool, timeout time.Duration) error {
	type pollfd struct {
		fd      int32
		events  int16
		revents int16
	}
	p := pollfd{fd: int32(fd), events: 0x1} // POLLIN
	if write {
		p.events = 0x4 // POLLOUT
	}
	var ts *syscall.Timespec
	if timeout >= 0 {
		t := syscall.NsecToTimespec(int64(timeout))
		ts = &t
	}
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		if n == 0 {
			return ErrTimeout
		}
		return nil
	}
}

// ErrTimeout is a wait's error when its time ran out.
var ErrTimeout = errors.New("timed out waiting for the server")

// Blocking is the Poller of sessions outside an event loop: it waits in
// poll(2), at most until Deadline (zero: no limit) or for Timeout per
// wait (zero: no limit). Shutting the socket down ends a wait.
type Blocking struct {
	Deadline time.Time
	Timeout  time.Duration
}

var _ Poller = Blocking{}

// WaitRead implements Poller.
func (b Blocking) WaitRead(fd int) error { return b.wait(fd, false) }

// WaitWrite implements Poller.
func (b Blocking) WaitWrite(fd int) error { return b.wait(fd, true) }

// Forget implements Poller.
func (Blocking) Forget(int) {}

func (b Blocking) wait(fd int, write bool) error {
	timeout := time.Duration(-1)
	if b.Timeout > 0 {
		timeout = b.Timeout
	}
	if !b.Deadline.IsZero() {
		left := time.Until(b.Deadline)
		if left <= 0 {
			return ErrTimeout
		}
		// A millisecond more, so that the wait ends after the deadline
		// rather than a hair before it.
		if left += time.Millisecond; timeout < 0 || left < timeout {
			timeout = left
		}
	}
	return Poll(fd, write, timeout)
}
