package redistarget

import (
	"context"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// hotScript is a typical Redis transaction: a key from a variable, a SET
// and a GET, then a pipeline of 16 SETs.
const hotScript = "\\set k 12345\nSET key::k :k\nGET key::k\n\\startpipeline\n" +
	"SET p1 v\nSET p2 v\nSET p3 v\nSET p4 v\nSET p5 v\nSET p6 v\nSET p7 v\nSET p8 v\n" +
	"SET p9 v\nSET p10 v\nSET p11 v\nSET p12 v\nSET p13 v\nSET p14 v\nSET p15 v\nSET p16 v\n\\endpipeline\n"

func prepareHot(tb testing.TB) (engine.Conn, []*script.Command, *script.Vars) {
	srv := startServer(tb)
	target, err := NewTarget(Config{Network: "unix", Addr: srv.Socket()})
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := target.Connect(context.Background(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("hot.redis", []byte(hotScript), syms, redisdialect.Script())
	if err != nil {
		tb.Fatal(err)
	}
	vars := script.NewVars(syms)
	k, _ := syms.Lookup("k")
	vars.SetInt(k, 12345)
	return conn, sc.Commands[1:], vars
}

func runHot(tb testing.TB, conn engine.Conn, cmds []*script.Command, vars *script.Vars) {
	for _, cmd := range cmds {
		if err := conn.Exec(context.Background(), cmd, vars); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestNoAllocationPerCommand holds the hot path to zero allocations: a
// command with variables, a plain one, and a pipeline.
func TestNoAllocationPerCommand(t *testing.T) {
	conn, cmds, vars := prepareHot(t)
	runHot(t, conn, cmds, vars) // buffers grown
	if n := testing.AllocsPerRun(200, func() { runHot(t, conn, cmds, vars) }); n != 0 {
		t.Fatalf("%.1f allocations per transaction of %d commands, want 0", n, len(cmds))
	}
}

func BenchmarkSetGet(b *testing.B) {
	conn, cmds, vars := prepareHot(b)
	set, get := cmds[0:1], cmds[1:2]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runHot(b, conn, set, vars)
		runHot(b, conn, get, vars)
	}
}

func BenchmarkPipeline16(b *testing.B) {
	conn, cmds, vars := prepareHot(b)
	var pipe []*script.Command
	for _, c := range cmds {
		if c.Kind != script.KindRedis || strings.HasPrefix(c.Text, "SET p") {
			pipe = append(pipe, c)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runHot(b, conn, pipe, vars)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/command")
}

// BenchmarkEncode is the client's own cost of writing a command, without
// the server.
func BenchmarkEncode(b *testing.B) {
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("e.redis", []byte("SET key::k :k\n"), syms, redisdialect.Script())
	if err != nil {
		b.Fatal(err)
	}
	vars := script.NewVars(syms)
	k, _ := syms.Lookup("k")
	vars.SetInt(k, 12345)
	c := &conn{}
	rc := sc.Commands[0].Redis
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.io.W, c.queued = c.io.W[:0], 0
		if err := c.encode(rc, vars); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplyEnd is the cost of finding where replies end.
func BenchmarkReplyEnd(b *testing.B) {
	replies := []byte("+OK\r\n$5\r\nhello\r\n:42\r\n*2\r\n$1\r\na\r\n$-1\r\n")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for at := 0; at < len(replies); {
			n, err := replyEnd(replies[at:])
			if err != nil || n == 0 {
				b.Fatal(err)
			}
			at += n
		}
	}
}

// BenchmarkEncodeLiteral is BenchmarkEncode for a command without
// variables (redis-benchmark's SET).
func BenchmarkEncodeLiteral(b *testing.B) {
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("e.redis", []byte("SET key:__rand_int__ xxx\n"), syms, redisdialect.Script())
	if err != nil {
		b.Fatal(err)
	}
	vars := script.NewVars(syms)
	c := &conn{}
	rc := sc.Commands[0].Redis
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.io.W, c.queued = c.io.W[:0], 0
		if err := c.encode(rc, vars); err != nil {
			b.Fatal(err)
		}
	}
}
