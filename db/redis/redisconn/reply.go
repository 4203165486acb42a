package redisconn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what a reply may claim, so that a broken or hostile server
// cannot make the client allocate without bound.
const (
	maxBulk     = 512 << 20 // Redis's own proto-max-bulk-len default
	maxDepth    = 16        // nesting of arrays
	maxPrealloc = 1024      // elements allocated ahead of reading them
)

// Type is the kind of a RESP2 reply.
type Type byte

// The reply types, by their RESP2 first byte.
const (
	Status  Type = '+'
	ErrorT  Type = '-'
	Integer Type = ':'
	Bulk    Type = '$'
	Array   Type = '*'
)

// Reply is one decoded reply.
type Reply struct {
	Type  Type
	Str   string  // Status, Bulk, and the message of an error
	Int   int64   // Integer
	Elems []Reply // Array
	Nil   bool    // a nil bulk string or nil array
	Err   *Error  // an error reply
}

// Text is the reply as a string: a status, a bulk string, an integer in
// decimal; "" for nil and arrays.
func (r Reply) Text() string {
	switch r.Type {
	case Integer:
		return strconv.FormatInt(r.Int, 10)
	case Array:
		return ""
	}
	return r.Str
}

// Strings is an array reply of strings as a slice (nil elements as "").
func (r Reply) Strings() []string {
	out := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		out[i] = e.Text()
	}
	return out
}

// Error is an error reply from the server: "ERR unknown command …",
// "WRONGTYPE …", "NOPERM …".
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// Prefix is the error's code, its first word ("ERR", "WRONGTYPE", "LOADING").
func (e *Error) Prefix() string {
	prefix, _, _ := strings.Cut(e.Msg, " ")
	return prefix
}

// errProtocol marks a reply that is not RESP2.
var errProtocol = errors.New("protocol error")

// ReadReply decodes one RESP2 reply.
func ReadReply(r *bufio.Reader) (Reply, error) {
	return readReply(r, 0)
}

func readReply(r *bufio.Reader, depth int) (Reply, error) {
	line, err := readLine(r)
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, fmt.Errorf("%w: empty reply line", errProtocol)
	}
	t, rest := Type(line[0]), line[1:]
	switch t {
	case Status:
		return Reply{Type: t, Str: string(rest)}, nil
	case ErrorT:
		msg := string(rest)
		return Reply{Type: t, Str: msg, Err: &Error{Msg: msg}}, nil
	case Integer:
		n, err := strconv.ParseInt(string(rest), 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("%w: integer reply %q", errProtocol, shorten(rest))
		}
		return Reply{Type: t, Int: n}, nil
	case Bulk:
		n, err := length(rest, maxBulk)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Type: t, Nil: true}, nil
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return Reply{}, unexpectedEOF(err)
		}
		if data[n] != '\r' || data[n+1] != '\n' {
			return Reply{}, fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", errProtocol, n)
		}
		return Reply{Type: t, Str: string(data[:n])}, nil
	case Array:
		n, err := length(rest, 1<<31)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Type: t, Nil: true}, nil
		}
		if depth >= maxDepth {
			return Reply{}, fmt.Errorf("%w: arrays nested deeper than %d", errProtocol, maxDepth)
		}
		elems := make([]Reply, 0, min(n, maxPrealloc))
		for range n {
			e, err := readReply(r, depth+1)
			if err != nil {
				return Reply{}, err
			}
			elems = append(elems, e)
		}
		return Reply{Type: t, Elems: elems}, nil
	}
	return Reply{}, fmt.Errorf("%w: unknown reply type %q (a RESP3 reply? firedrill speaks RESP2)", errProtocol, shorten(line))
}

// readLine reads up to CRLF, which it drops.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: reply line longer than %d bytes", errProtocol, r.Size())
	}
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: reply line %q does not end in CRLF", errProtocol, shorten(line))
	}
	return line[:len(line)-2], nil
}

// length reads a bulk or array length: -1 (nil) up to limit.
func length(text []byte, limit int) (int, error) {
	n, err := strconv.Atoi(string(text))
	if err != nil || n < -1 || n > limit {
		return 0, fmt.Errorf("%w: length %q", errProtocol, shorten(text))
	}
	return n, nil
}

// unexpectedEOF turns the end of the stream inside a reply into an
// error that says so.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// shorten keeps protocol errors short.
func shorten(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
