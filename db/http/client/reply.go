package httptarget

import (
	"bytes"
	"errors"
	"fmt"
)

// Head is what a reply's status line and headers say about reading it.
type Head struct {
	Status int
	// Len is the head's length, its final empty line included.
	Len int
	// ContentLength is the body's length; -1 when not given.
	ContentLength int64
	// Chunked says the body is sent in chunks.
	Chunked bool
	// Close says the server closes the connection after this reply
	// (Connection: close, or HTTP/1.0 without keep-alive).
	Close bool
}

// maxHead bounds a reply's status line and headers.
const maxHead = 64 << 10

// errIncomplete is ParseHead's answer when more bytes are needed.
var errIncomplete = errors.New("incomplete")

// errProtocol is a reply that is not HTTP/1.x.
var errProtocol = errors.New("reply is not HTTP/1.x")

// ParseHead reads a reply's status line and headers at the start of b.
// It returns errIncomplete when b ends before the empty line that ends
// them, an error wrapping errProtocol when they are not HTTP/1.x. It
// allocates nothing on success. It reads b once, line by line: every
// reply of a run goes through it.
func ParseHead(b []byte) (Head, error) {
	h := Head{ContentLength: -1}
	// bad is the first malformed line's error, returned once the head
	// is whole (until then more bytes may be all that is missing).
	var bad error
	http10, keepAlive := false, false
	for at, n := 0, 0; ; n++ {
		j := indexCRLF(b[at:])
		if j < 0 {
			break
		}
		line := b[at : at+j]
		at += j + 2
		if j == 0 && n > 0 { // the empty line ending the head
			h.Len = at
			if bad != nil {
				return h, bad
			}
			if http10 && !keepAlive {
				h.Close = true
			}
			if h.Chunked {
				h.ContentLength = -1 // RFC 9112 6.3: chunked wins
			}
			return h, nil
		}
		switch {
		case bad != nil:
		case n == 0:
			bad = h.statusLine(line)
			http10 = bad == nil && line[7] == '0'
		default:
			bad = h.header(line, &keepAlive)
		}
	}
	if len(b) >= maxHead {
		return h, fmt.Errorf("%w: no end of the headers in %d bytes", errProtocol, len(b))
	}
	if len(b) >= 5 && !bytes.HasPrefix(b, []byte("HTTP/")) {
		return h, fmt.Errorf("%w: it starts %q", errProtocol, clip(b))
	}
	return h, errIncomplete
}

// statusLine reads "HTTP/1.1 200 OK" into h.Status.
func (h *Head) statusLine(line []byte) error {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[7] != '0' && line[7] != '1' || line[8] != ' ' || len(line) > 12 && line[12] != ' ' {
		return fmt.Errorf("%w: status line %q", errProtocol, clip(line))
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: status line %q", errProtocol, clip(line))
		}
		h.Status = h.Status*10 + int(c-'0')
	}
	if h.Status < 100 {
		return fmt.Errorf("%w: status line %q", errProtocol, clip(line))
	}
	return nil
}

// header reads one header line into h; keepAlive is set by
// "Connection: keep-alive".
func (h *Head) header(l []byte, keepAlive *bool) error {
	colon := bytes.IndexByte(l, ':')
	if colon <= 0 {
		return fmt.Errorf("%w: header line %q", errProtocol, clip(l))
	}
	name, value := l[:colon], trimOWS(l[colon+1:])
	switch {
	case equalFold(name, "content-length"):
		n, ok := parseLength(value)
		if !ok || h.ContentLength >= 0 && n != h.ContentLength {
			return fmt.Errorf("%w: Content-Length %q", errProtocol, clip(value))
		}
		h.ContentLength = n
	case equalFold(name, "transfer-encoding"):
		if hasToken(value, "chunked") {
			h.Chunked = true
		}
	case equalFold(name, "connection"):
		if hasToken(value, "close") {
			h.Close = true
		}
		if hasToken(value, "keep-alive") {
			*keepAlive = true
		}
	}
	return nil
}

// indexCRLF is the index of the first "\r\n" in b, -1 if none: the
// first '\n' that follows a '\r', found with IndexByte's vector search.
func indexCRLF(b []byte) int {
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\n')
		if k < 0 {
			return -1
		}
		k += i
		if k > 0 && b[k-1] == '\r' {
			return k - 1
		}
		i = k + 1
	}
}

// HeaderValue finds a header's value in a reply's head (ParseHead's
// bytes): the first one named name, case-insensitively.
func HeaderValue(head []byte, name string) ([]byte, bool) {
	_, rest, _ := bytes.Cut(head, []byte("\r\n"))
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		colon := bytes.IndexByte(l, ':')
		if colon > 0 && equalFold(l[:colon], name) {
			return trimOWS(l[colon+1:]), true
		}
	}
	return nil, false
}

// ParseChunkSize reads a chunk's size line at the start of b ("1a;ext\r\n"):
// the size and the line's length, errIncomplete when its end is not
// there yet.
func ParseChunkSize(b []byte) (size int64, n int, err error) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		if len(b) > 4096 {
			return 0, 0, fmt.Errorf("%w: chunk size line too long", errProtocol)
		}
		return 0, 0, errIncomplete
	}
	digits := b[:end]
	if i := bytes.IndexByte(digits, ';'); i >= 0 {
		digits = digits[:i]
	}
	digits = bytes.TrimRight(digits, " \t")
	if len(digits) == 0 || len(digits) > 15 {
		return 0, 0, fmt.Errorf("%w: chunk size %q", errProtocol, clip(b[:end]))
	}
	for _, c := range digits {
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c|0x20 && c|0x20 <= 'f':
			v = c | 0x20 - 'a' + 10
		default:
			return 0, 0, fmt.Errorf("%w: chunk size %q", errProtocol, clip(b[:end]))
		}
		size = size<<4 | int64(v)
	}
	return size, end + 2, nil
}

func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// hasToken says whether a comma-separated header value holds token.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		if equalFold(trimOWS(t), token) {
			return true
		}
	}
	return false
}

// trimOWS drops the spaces and tabs around a header value (RFC 9110's
// optional whitespace), as bytes.Trim(v, " \t") does without building a
// set of the two on each call: it ran for every header of every reply.
func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// equalFold compares ASCII case-insensitively, without allocating.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
