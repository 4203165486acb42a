package redistarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/redis/instance/tlstest"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// tlsConfig is the crypto/tls configuration of a rediss:// URL.
func tlsConfig(t *testing.T, url string) *tls.Config {
	t.Helper()
	cfg, err := redisconn.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := cfg.TLS.Config(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestTLSSessions runs scripts over TLS on a real server that requires a
// client certificate: commands, \gset, a pipeline bigger than a TLS
// record, a transaction Reset ends, and Interrupt of a blocked command.
func TestTLSSessions(t *testing.T) {
	srv := tlstest.Start(t, tlstest.Options{RequireClientCert: true})
	cfg := Config{Addr: srv.TLSAddr, AppName: "firedrill tls", TLS: tlsConfig(t, srv.URL(srv.Trusted()))}
	target, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// TLS sessions cannot park on an event loop: the engine falls back
	// to goroutines.
	if _, err := target.ConnectLoop(context.Background(), 0, sockio.Blocking{}); !errors.Is(err, engine.ErrNoLoop) {
		t.Fatalf("ConnectLoop over TLS: %v, want engine.ErrNoLoop", err)
	}
	s := connect(t, cfg)
	s.must("\\set id 42\nSET user::id \"hello tls\"\nGET user::id\n\\gset v\nCLIENT GETNAME \\gset name\n")
	if v, name := s.get("v"), s.get("name"); v != "hello tls" || name != "firedrill-tls" {
		t.Fatalf("GET = %q, CLIENT GETNAME = %q", v, name)
	}
	var b strings.Builder
	b.WriteString("\\startpipeline\n")
	big := strings.Repeat("x", 1000)
	for range 200 { // 200 KB: many TLS records each way
		b.WriteString("SET big " + big + "\nINCR n\n")
	}
	b.WriteString("\\endpipeline\nSTRLEN big \\gset len\nGET n \\gset n\n")
	s.must(b.String())
	if l, n := s.get("len"), s.get("n"); l != "1000" || n != "200" {
		t.Fatalf("after the pipeline STRLEN big = %q, n = %q", l, n)
	}
	// A transaction the script left open is discarded by Reset.
	s.must("MULTI\nSET n 0\n")
	if err := s.conn.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.must("GET n \\gset n\n")
	if n := s.get("n"); n != "200" {
		t.Fatalf("after Reset of an open MULTI n = %q, want 200", n)
	}
	assertInterruptEndsBLPOP(t, s)
	if err := s.conn.Close(); err != nil {
		t.Fatalf("Close after Interrupt: %v", err)
	}
}

// TestTLSConnectErrors checks that each way TLS and the server disagree
// fails the connect with the server's address and what to do.
func TestTLSConnectErrors(t *testing.T) {
	strict := tlstest.Start(t, tlstest.Options{RequireClientCert: true})
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"client certificate required and missing",
			Config{Addr: strict.TLSAddr, TLS: tlsConfig(t, strict.URL("cacert="+strict.CA))}, "pass ?cert="},
		{"server certificate not trusted",
			Config{Addr: strict.TLSAddr, TLS: tlsConfig(t, strict.URL("cacert="+strict.OtherCA))}, "?cacert="},
		{"rediss:// to a plain port",
			Config{Addr: strict.Inst.Addr(), TLS: tlsConfig(t, strict.URL(strict.Trusted())), ConnectTimeout: 2 * time.Second}, "use redis://"},
		{"redis:// to the TLS port",
			Config{Addr: strict.TLSAddr, AppName: "plain"}, "use rediss://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, err := NewTarget(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := target.Connect(context.Background(), 0)
			if err == nil {
				conn.Close()
				t.Fatal("connected")
			}
			if code(err) != engine.CodeConnect || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.cfg.Addr) {
				t.Fatalf("%v (code %q)\nwant a connect error naming %s and saying %q", err, code(err), tt.cfg.Addr, tt.want)
			}
			t.Log(err)
		})
	}
}

// TestEngineRunsOverTLS drives TLS sessions through the engine asked for
// event loops: the first session's ErrNoLoop moves every client to a
// goroutine, and every transaction runs.
func TestEngineRunsOverTLS(t *testing.T) {
	srv := tlstest.Start(t, tlstest.Options{})
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("t.redis", []byte("\\set k random(1, 50)\nSET key::k :client_id\n\\startpipeline\nINCR tx:count\nGET key::k\n\\endpipeline\n"), syms, redisdialect.Script())
	if err != nil {
		t.Fatal(err)
	}
	target, err := NewTarget(Config{Addr: srv.TLSAddr, AppName: "firedrill-tls-engine", TLS: tlsConfig(t, srv.URL("cacert="+srv.CA))})
	if err != nil {
		t.Fatal(err)
	}
	const clients, txs = 4, 200
	res, err := engine.Run(context.Background(), target, engine.Config{
		Scripts: []*script.Script{sc}, Symbols: syms, Clients: clients, Transactions: txs, MaxTries: 1,
		Threads: 2, Stderr: io.Discard, RandomSeed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Total.Count != clients*txs {
		t.Fatalf("%d transactions, want %d", res.Totals.Total.Count, clients*txs)
	}
	c, err := redisconn.Dial(context.Background(), redisconn.Config{Network: "unix", Addr: srv.Inst.Socket(), Password: srv.Inst.Password()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Do(context.Background(), "GET", "tx:count"); err != nil || r.Str != fmt.Sprint(clients*txs) {
		t.Fatalf("tx:count = %+v, %v; want %d", r, err, clients*txs)
	}
}

// BenchmarkSetGetOverTLS is what TLS costs a SET and a GET next to plain
// TCP on the same loopback server (both on a blocking session).
func BenchmarkSetGetOverTLS(b *testing.B) {
	srv := tlstest.Start(b, tlstest.Options{})
	cfg, err := redisconn.ParseURL(srv.URL("cacert=" + srv.CA))
	if err != nil {
		b.Fatal(err)
	}
	conf, err := cfg.TLS.Config(cfg.Addr)
	if err != nil {
		b.Fatal(err)
	}
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("hot.redis", []byte("SET key::k :k\nGET key::k\n"), syms, redisdialect.Script())
	if err != nil {
		b.Fatal(err)
	}
	vars := script.NewVars(syms)
	k, _ := syms.Lookup("k")
	vars.SetInt(k, 12345)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"tcp", Config{Addr: srv.Inst.Addr(), Password: srv.Inst.Password()}}, {"tls", Config{Addr: srv.TLSAddr, Password: srv.Inst.Password(), TLS: conf}}} {
		b.Run(tc.name, func(b *testing.B) {
			target, err := NewTarget(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			conn, err := target.Connect(context.Background(), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			b.ReportAllocs()
			for b.Loop() {
				runHot(b, conn, sc.Commands, vars)
			}
		})
	}
}
