package httptarget

import (
	"bytes"
	"testing"
)

// ParseHead and ParseChunkSize never panic, never read past what they
// are given, and agree with themselves: a head they accept is whole.
func FuzzParseHead(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 204 No Content\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 301 Moved\r\nLocation: /x\r\nX-Request-Id: abc\r\n\r\n",
		"SSH-2.0-OpenSSH\r\n", "HTTP/1.1 2", "1a;ext=1\r\n", "fffffffffffffffff\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHead(b)
		if err == nil {
			if h.Len > len(b) || !bytes.Equal(b[h.Len-4:h.Len], []byte("\r\n\r\n")) || h.Status < 100 || h.Status > 999 {
				t.Fatalf("head %+v of %q", h, b)
			}
			if h.Chunked && h.ContentLength != -1 {
				t.Fatalf("chunked with a length: %+v", h)
			}
			HeaderValue(b[:h.Len], "x-request-id")
		}
		size, n, err := ParseChunkSize(b)
		if err == nil && (n > len(b) || size < 0) {
			t.Fatalf("chunk size %d, line %d of %q", size, n, b)
		}
	})
}
