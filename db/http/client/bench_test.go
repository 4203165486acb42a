package httptarget

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/script"
)

// fixedServer answers every request on a connection with reply, reading
// requests ending with an empty line (no body): a server that allocates
// nothing per request, so that -benchmem counts the client's.
func fixedServer(b *testing.B, reply string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	out := []byte(reply)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				have := 0
				for {
					n, err := c.Read(buf[have:])
					if err != nil {
						return
					}
					have += n
					for {
						i := bytes.Index(buf[:have], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						if _, err := c.Write(out); err != nil {
							return
						}
						have = copy(buf, buf[i+4:have])
					}
				}
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// BenchmarkRequest is one request and its reply on a keep-alive
// connection: the request line with a variable, a header, a status
// check, a JSON check and a \gset of a number.
func BenchmarkRequest(b *testing.B) {
	for _, tc := range []struct{ name, reply string }{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{\"id\": 42, \"ok\": true}"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"id\": 4\r\ne\r\n2, \"ok\": true}\r\n0\r\n\r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := fixedServer(b, tc.reply)
			tgt, err := NewTarget(Config{URL: url, Headers: []Header{{Name: "Authorization", Value: "Bearer x"}}})
			if err != nil {
				b.Fatal(err)
			}
			syms := script.NewSymbols()
			s, err := script.ParseDialect("b.http", []byte("GET /items/:id?x=1\nAccept: application/json\n\\check status == 200\n\\check $.ok == true\n\\gset got = $.id\n"), syms, httpdialect.Script())
			if err != nil {
				b.Fatal(err)
			}
			tgt.Prepare([]*script.Script{s})
			vars := script.NewVars(syms)
			vars.SetInt(syms.Ref("id"), 42)
			c, err := tgt.Connect(context.Background(), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cmd := s.Commands[0]
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := c.Exec(ctx, cmd, vars); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseHead is the head of the bench server's reply (Go's
// net/http: three headers).
func BenchmarkParseHead(b *testing.B) {
	reply := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Sat, 28 Nov 2026 12:00:00 GMT\r\nContent-Length: 13\r\n\r\nHello, World!")
	for range b.N {
		if h, err := ParseHead(reply); err != nil || h.ContentLength != 13 {
			b.Fatal(h, err)
		}
	}
}
