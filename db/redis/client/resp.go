package redistarget

import (
	"errors"
	"fmt"
)

// The reply decoder reads RESP2 and RESP3 replies in place from the
// session's read buffer: it finds where a reply ends, without copying or
// allocating, and only looks inside one when a script asks for its value
// (\gset) or it is an error.

// maxDepth bounds the nesting of aggregate replies, so that a hostile or
// broken peer cannot make the decoder recurse without bound.
const maxDepth = 64

// maxLength bounds a bulk string's or an aggregate's announced length
// (Redis's own proto-max-bulk-len is 512 MB).
const maxLength = 1 << 31

// errProtocol marks replies that are not RESP.
var errProtocol = errors.New("protocol error")

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

// replyEnd returns the length of the reply at the start of b, or 0 when b
// holds only part of it.
func replyEnd(b []byte) (int, error) {
	return skipReply(b, 0, 0)
}

// skipReply returns the offset just past the reply starting at b[i], or 0
// when it is incomplete.
func skipReply(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, protocolError("replies nested more than %d deep", maxDepth)
	}
	if i >= len(b) {
		return 0, nil
	}
	switch t := b[i]; t {
	case '+', '-', ':', ',', '(', '#', '_':
		end := lineEnd(b, i+1)
		if end < 0 {
			return 0, nil
		}
		if t == ':' {
			if _, ok := parseInt(b[i+1 : end]); !ok {
				return 0, protocolError("bad integer %q", clip(b[i+1:end]))
			}
		}
		return end + 2, nil
	case '$', '!', '=':
		end := lineEnd(b, i+1)
		if end < 0 {
			return 0, nil
		}
		n, ok := parseInt(b[i+1 : end])
		if !ok || n < -1 || n > maxLength {
			return 0, protocolError("bad length %q", clip(b[i+1:end]))
		}
		if n == -1 {
			return end + 2, nil
		}
		stop := end + 2 + int(n)
		if stop+2 > len(b) {
			return 0, nil
		}
		if b[stop] != '\r' || b[stop+1] != '\n' {
			return 0, protocolError("a string of %d bytes is not followed by CRLF", n)
		}
		return stop + 2, nil
	case '*', '~', '>', '%', '|':
		end := lineEnd(b, i+1)
		if end < 0 {
			return 0, nil
		}
		n, ok := parseInt(b[i+1 : end])
		if !ok || n < -1 || n > maxLength {
			return 0, protocolError("bad length %q", clip(b[i+1:end]))
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		j := end + 2
		for k := int64(0); k < n; k++ {
			next, err := skipReply(b, j, depth+1)
			if next == 0 || err != nil {
				return 0, err
			}
			j = next
		}
		if t == '|' {
			// Attributes precede the reply they describe.
			return skipReply(b, j, depth+1)
		}
		return j, nil
	default:
		return 0, protocolError("unknown reply type %q", t)
	}
}

// lineEnd returns the index of the CRLF ending the line that starts at i,
// or -1 when it is not there yet.
func lineEnd(b []byte, i int) int {
	for j := i; j+1 < len(b); j++ {
		if b[j] == '\r' && b[j+1] == '\n' {
			return j
		}
	}
	return -1
}

// parseInt reads a RESP integer: an optional minus sign and decimal
// digits, without overflow.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// clip shortens what a protocol error quotes.
func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// isError reports whether a complete reply is an error ('-' or RESP3's
// blob error '!').
func isError(reply []byte) bool { return reply[0] == '-' || reply[0] == '!' }

// isPush reports whether a complete reply is a RESP3 push message, which
// answers no command (client-side caching invalidations, pub/sub).
func isPush(reply []byte) bool { return reply[0] == '>' }

// errorText is the message of a complete error reply.
func errorText(reply []byte) []byte {
	if reply[0] == '!' {
		text, _, _ := scalar(reply, 0)
		return text
	}
	return reply[1 : len(reply)-2]
}

// errorCode is what an error counts as: the message's first word when it
// is an upper-case code (ERR, WRONGTYPE, LOADING, BUSY, OOM, NOSCRIPT …),
// as Redis and redis-cli read it, else ERR.
func errorCode(msg []byte) string {
	n := 0
	for n < len(msg) && (msg[n] >= 'A' && msg[n] <= 'Z' || n > 0 && (msg[n] >= '0' && msg[n] <= '9' || msg[n] == '_')) {
		n++
	}
	if n == 0 || n < len(msg) && msg[n] != ' ' {
		return "ERR"
	}
	switch string(msg[:n]) { // the common codes without allocating
	case "ERR":
		return "ERR"
	case "WRONGTYPE":
		return "WRONGTYPE"
	case "LOADING":
		return "LOADING"
	case "BUSY":
		return "BUSY"
	case "OOM":
		return "OOM"
	case "NOSCRIPT":
		return "NOSCRIPT"
	case "EXECABORT":
		return "EXECABORT"
	case "READONLY":
		return "READONLY"
	}
	return string(msg[:n])
}

// scalar returns the value of the single-value reply at b[i] as text,
// the offset after it, and ok false when the reply there is an aggregate
// (or malformed). A nil reply's text is empty, a RESP3 boolean's is
// "true" or "false", and a verbatim string loses its format prefix.
func scalar(b []byte, i int) (text []byte, end int, ok bool) {
	if i >= len(b) {
		return nil, 0, false
	}
	switch t := b[i]; t {
	case '+', '-', ':', ',', '(', '_':
		e := lineEnd(b, i+1)
		if e < 0 {
			return nil, 0, false
		}
		return b[i+1 : e], e + 2, true
	case '#':
		e := lineEnd(b, i+1)
		if e < 0 {
			return nil, 0, false
		}
		if e == i+2 && b[i+1] == 't' {
			return []byte("true"), e + 2, true
		}
		return []byte("false"), e + 2, true
	case '$', '!', '=':
		e := lineEnd(b, i+1)
		if e < 0 {
			return nil, 0, false
		}
		n, ok := parseInt(b[i+1 : e])
		if ok && n == -1 {
			return nil, e + 2, true
		}
		if !ok || n < 0 || int64(len(b)-e-4) < n {
			return nil, 0, false
		}
		text = b[e+2 : e+2+int(n)]
		if t == '=' && len(text) >= 4 && text[3] == ':' {
			text = text[4:]
		}
		return text, e + 4 + int(n), true
	}
	return nil, 0, false
}

// elements calls f with each element of the complete aggregate reply at
// the start of b (a map's keys and values in turn), and returns false
// when the reply is not an aggregate. A nil aggregate has none.
func elements(b []byte, f func(elem []byte) error) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	t := b[0]
	if t == '|' { // attributes first: skip them
		end, err := skipAttributes(b)
		if err != nil {
			return false, err
		}
		return elements(b[end:], f)
	}
	if t != '*' && t != '~' && t != '%' && t != '>' {
		return false, nil
	}
	e := lineEnd(b, 1)
	if e < 0 {
		return true, protocolError("incomplete aggregate")
	}
	n, ok := parseInt(b[1:e])
	if !ok {
		return true, protocolError("bad length %q", clip(b[1:e]))
	}
	if t == '%' {
		n *= 2
	}
	j := e + 2
	for k := int64(0); k < n; k++ {
		next, err := skipReply(b, j, 1)
		if err != nil {
			return true, err
		}
		if next == 0 {
			return true, protocolError("incomplete aggregate")
		}
		if err := f(b[j:next]); err != nil {
			return true, err
		}
		j = next
	}
	return true, nil
}

// skipAttributes returns the offset of the reply after the attribute map
// at the start of b.
func skipAttributes(b []byte) (int, error) {
	e := lineEnd(b, 1)
	if e < 0 {
		return 0, protocolError("incomplete attributes")
	}
	n, ok := parseInt(b[1:e])
	if !ok {
		return 0, protocolError("bad length %q", clip(b[1:e]))
	}
	j := e + 2
	for k := int64(0); k < 2*n; k++ {
		next, err := skipReply(b, j, 1)
		if err != nil {
			return 0, err
		}
		if next == 0 {
			return 0, protocolError("incomplete attributes")
		}
		j = next
	}
	return j, nil
}
