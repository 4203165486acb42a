package mariadb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/firedrill/firedrill/engine"
)

// The packet layer: MySQL's 4-byte packet headers (3-byte length, 1-byte
// sequence number) over the raw, non-blocking socket, with the engine's
// Poller parking the client whenever the socket is not ready. Reads land in
// one reused buffer and packets are handed out as slices of it, so reading
// a reply allocates nothing.

// maxPayload is the largest payload of one packet; a longer one continues
// in the next packets.
const maxPayload = 0xFFFFFF

// errClosed is the error of a session the server ended.
var errClosed = errors.New("server closed the connection")

// fail marks the session broken (the protocol can no longer be followed)
// and returns the engine's lost-connection error.
func (c *conn) fail(err error) error {
	if c.broken == nil {
		c.broken = err
	}
	return &engine.DBError{Code: engine.CodeConnection, Err: fmt.Errorf("%s: %w", c.t.addr, err)}
}

// fill reads more of the server's bytes into rbuf.
func (c *conn) fill() error {
	if c.rpos > 0 {
		c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
		c.rpos = 0
	}
	if c.rend == len(c.rbuf) {
		c.rbuf = append(c.rbuf, make([]byte, max(len(c.rbuf), 4096))...)
	}
	if c.fd < 0 {
		return c.fail(errClosed) // a decoder fed from memory ran out
	}
	if c.tls != nil {
		return c.fillTLS()
	}
	if c.fresh {
		// A request was just sent: its answer is almost never there
		// yet, so wait rather than spend a read on EAGAIN.
		c.fresh = false
		if err := c.p.WaitRead(c.fd); err != nil {
			return c.fail(err)
		}
	}
	for {
		b := c.rbuf[c.rend:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			if n == 0 {
				return c.fail(errClosed)
			}
			c.rend += int(n)
			return nil
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.p.WaitRead(c.fd); err != nil {
				return c.fail(err)
			}
		default:
			return c.fail(fmt.Errorf("read: %w", errno))
		}
	}
}

// readPacket returns the next packet's payload, valid until the next call.
// A payload split over several packets (16 MiB or more) is joined.
func (c *conn) readPacket() ([]byte, error) {
	payload, full, err := c.readOne()
	if err != nil || !full {
		return payload, err
	}
	joined := append([]byte(nil), payload...)
	for full {
		if payload, full, err = c.readOne(); err != nil {
			return nil, err
		}
		joined = append(joined, payload...)
	}
	return joined, nil
}

// readOne reads one packet; full says its payload has the maximum length,
// so the next packet continues it.
func (c *conn) readOne() (payload []byte, full bool, err error) {
	for c.rend-c.rpos < 4 {
		if err := c.fill(); err != nil {
			return nil, false, err
		}
	}
	h := c.rbuf[c.rpos:]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	c.seq = h[3] + 1
	for c.rend-c.rpos < 4+n {
		if need := 4 + n; need > len(c.rbuf) {
			grown := make([]byte, need+4096)
			c.rend = copy(grown, c.rbuf[c.rpos:c.rend])
			c.rpos, c.rbuf = 0, grown
		}
		if err := c.fill(); err != nil {
			return nil, false, err
		}
	}
	payload = c.rbuf[c.rpos+4 : c.rpos+4+n]
	c.rpos += 4 + n
	if c.rpos == c.rend {
		c.rpos, c.rend = 0, 0
	}
	return payload, n == maxPayload, nil
}

// startPacket begins a packet in wbuf (its header is filled by endPacket)
// and returns where it starts.
func (c *conn) startPacket() int {
	c.wbuf = append(c.wbuf, 0, 0, 0, 0)
	return len(c.wbuf) - 4
}

// endPacket fills in the header of the packet started at at. A payload
// too long for one packet is split.
func (c *conn) endPacket(at int) {
	n := len(c.wbuf) - at - 4
	if n >= maxPayload {
		c.splitPacket(at)
		return
	}
	c.wbuf[at], c.wbuf[at+1], c.wbuf[at+2], c.wbuf[at+3] = byte(n), byte(n>>8), byte(n>>16), c.seq
	c.seq++
}

// splitPacket rewrites the too long packet at at as a sequence of packets.
func (c *conn) splitPacket(at int) {
	payload := append([]byte(nil), c.wbuf[at+4:]...)
	c.wbuf = c.wbuf[:at]
	for {
		n := min(len(payload), maxPayload)
		c.wbuf = append(c.wbuf, byte(n), byte(n>>8), byte(n>>16), c.seq)
		c.seq++
		c.wbuf = append(c.wbuf, payload[:n]...)
		payload = payload[n:]
		if n < maxPayload {
			return
		}
	}
}

// command starts a new command packet: sequence numbers restart at 0.
func (c *conn) command(code byte) int {
	c.seq = 0
	at := c.startPacket()
	c.wbuf = append(c.wbuf, code)
	return at
}

// flush writes wbuf.
func (c *conn) flush() error {
	if c.tls != nil {
		return c.flushTLS()
	}
	b := c.wbuf
	for len(b) > 0 {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			b = b[n:]
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.p.WaitWrite(c.fd); err != nil {
				return c.fail(err)
			}
		default:
			return c.fail(fmt.Errorf("write: %w", errno))
		}
	}
	c.wbuf = c.wbuf[:0]
	c.fresh = true
	return nil
}

// Length-encoded integers and strings, as the protocol spells them.

// errShort is a reply shorter than its own lengths say.
var errShort = errors.New("protocol error: truncated packet")

// lenenc reads a length-encoded integer at b[0:]; null is true for 0xFB
// (NULL in a text row).
func lenenc(b []byte) (v uint64, n int, null bool, err error) {
	if len(b) == 0 {
		return 0, 0, false, errShort
	}
	switch b[0] {
	case 0xFB:
		return 0, 1, true, nil
	case 0xFC:
		if len(b) < 3 {
			return 0, 0, false, errShort
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, false, nil
	case 0xFD:
		if len(b) < 4 {
			return 0, 0, false, errShort
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, false, nil
	case 0xFE:
		if len(b) < 9 {
			return 0, 0, false, errShort
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, false, nil
	case 0xFF:
		return 0, 0, false, errors.New("protocol error: invalid length prefix 0xFF")
	}
	return uint64(b[0]), 1, false, nil
}

// lenencString reads a length-encoded string at b[0:] and returns it and
// the bytes after it.
func lenencString(b []byte) (s, rest []byte, null bool, err error) {
	v, n, null, err := lenenc(b)
	if err != nil || null {
		return nil, b[min(n, len(b)):], null, err
	}
	if v > uint64(len(b)-n) {
		return nil, nil, false, errShort
	}
	end := n + int(v)
	return b[n:end], b[end:], false, nil
}

func appendLenenc(b []byte, v uint64) []byte {
	switch {
	case v < 0xFB:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xFC, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xFD, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xFE), v)
}

func appendLenencString(b []byte, s string) []byte {
	return append(appendLenenc(b, uint64(len(s))), s...)
}

// cString reads a NUL-terminated string at b[0:] (or to the end of b).
func cString(b []byte) (s, rest []byte) {
	for i, c := range b {
		if c == 0 {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}
