package mariadb

import (
	"encoding/binary"
	"errors"
	"fmt"

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

// fail marks the session broken (the protocol can no longer be followed)
// and returns the engine's lost-connection error.
func (c *conn) fail(err error) error {
	if c.broken == nil {
		c.broken = err
	}
	return &engine.DBError{Code: engine.CodeConnection, Err: fmt.Errorf("%s: %w", c.t.addr, err)}
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
	if err := c.io.Ensure(4); err != nil {
		return nil, false, c.fail(err)
	}
	h := c.io.Buffered()
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	c.seq = h[3] + 1
	if err := c.io.Ensure(4 + n); err != nil {
		return nil, false, c.fail(err)
	}
	payload = c.io.Buffered()[4 : 4+n]
	c.io.Consume(4 + n)
	return payload, n == maxPayload, nil
}

// startPacket begins a packet in io.W (its header is filled by endPacket)
// and returns where it starts.
func (c *conn) startPacket() int {
	c.io.W = append(c.io.W, 0, 0, 0, 0)
	return len(c.io.W) - 4
}

// endPacket fills in the header of the packet started at at. A payload
// too long for one packet is split.
func (c *conn) endPacket(at int) {
	n := len(c.io.W) - at - 4
	if n >= maxPayload {
		c.splitPacket(at)
		return
	}
	c.io.W[at], c.io.W[at+1], c.io.W[at+2], c.io.W[at+3] = byte(n), byte(n>>8), byte(n>>16), c.seq
	c.seq++
}

// splitPacket rewrites the too long packet at at as a sequence of packets.
func (c *conn) splitPacket(at int) {
	payload := append([]byte(nil), c.io.W[at+4:]...)
	c.io.W = c.io.W[:at]
	for {
		n := min(len(payload), maxPayload)
		c.io.W = append(c.io.W, byte(n), byte(n>>8), byte(n>>16), c.seq)
		c.seq++
		c.io.W = append(c.io.W, payload[:n]...)
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
	c.io.W = append(c.io.W, code)
	return at
}

// flush sends the packets built in io.W.
func (c *conn) flush() error {
	if err := c.io.Flush(true); err != nil {
		return c.fail(err)
	}
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
