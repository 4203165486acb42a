package redisconn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/redis/instance/tlstest"
)

// TestTLSOnARealServer dials a Redis that speaks TLS, each way a user
// can get it right or wrong, and checks what works and what each failure
// tells the user to do.
func TestTLSOnARealServer(t *testing.T) {
	t.Parallel()
	strict := tlstest.Start(t, tlstest.Options{RequireClientCert: true}) // tls-auth-clients yes (Redis's default)
	lenient := tlstest.Start(t, tlstest.Options{})                       // tls-auth-clients no
	tests := []struct {
		name string
		url  string
		err  string // a part of the error; "" = the dial works
	}{
		{"ca and client certificate", strict.URL(strict.Trusted()), ""},
		{"ca without client certificate, server not asking", lenient.URL("cacert=" + lenient.CA), ""},
		{"insecure skips verification", lenient.URL("insecure=true"), ""},
		{"system roots do not know the test CA", lenient.URL(""), "pass that authority's certificate as ?cacert="},
		{"a CA that signed nothing of the server's", lenient.URL("cacert=" + lenient.OtherCA), "?cacert="},
		{"client certificate required and missing", strict.URL("cacert=" + strict.CA), "pass ?cert="},
		{"rediss:// to a plain port", "rediss://" + strict.Inst.Addr() + "/0?cacert=" + strict.CA, "use redis://"},
		{"redis:// to the TLS port", "redis://" + lenient.TLSAddr + "/0", "use rediss://"},
		{"redis:// to the TLS port, with a name", "redis://" + lenient.TLSAddr + "/0", "use rediss://"},
		{"a cacert file that is not there", strict.URL("cacert=/nonexistent/ca.crt"), "cacert: open /nonexistent/ca.crt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseURL(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tt.name, "with a name") {
				cfg.Name = "firedrill:test"
			}
			// A plain port never answers a TLS handshake: the dial's
			// deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			c, err := Dial(ctx, cfg)
			if tt.err != "" {
				if err == nil {
					c.Close()
					t.Fatalf("Dial(%s) worked, want an error saying %q", tt.url, tt.err)
				}
				if !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), cfg.Addr) {
					t.Fatalf("Dial(%s): %v\nwant it to name %s and say %q", tt.url, err, cfg.Addr, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial(%s): %v", tt.url, err)
			}
			defer c.Close()
			if _, err := c.Do(context.Background(), "SET", "tls:k", "v"); err != nil {
				t.Fatal(err)
			}
			r, err := c.Do(context.Background(), "GET", "tls:k")
			if err != nil || r.Str != "v" {
				t.Fatalf("GET over TLS: %+v, %v", r, err)
			}
			// A reply bigger than a TLS record (16 KiB) arrives in pieces.
			big := strings.Repeat("x", 100<<10)
			if _, err := c.Do(context.Background(), "SET", "tls:big", big); err != nil {
				t.Fatal(err)
			}
			replies, err := c.Pipeline(context.Background(), []string{"GET", "tls:big"}, []string{"PING"})
			if err != nil || replies[0].Str != big || replies[1].Str != "PONG" {
				t.Fatalf("pipeline over TLS: %d bytes, %v", len(replies[0].Str), err)
			}
		})
	}
}
