package redistarget

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	redis "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// session is a target's session with a script's variables, for running
// Redis scripts command by command.
type session struct {
	t    *testing.T
	conn engine.Conn
	syms *script.Symbols
	vars *script.Vars
}

func connect(t *testing.T, cfg Config) *session {
	t.Helper()
	target, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := target.Connect(context.Background(), 0)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	syms := script.NewSymbols()
	return &session{t: t, conn: conn, syms: syms, vars: script.NewVars(syms)}
}

// run parses src and executes its commands in order (no \if), returning
// the first error.
func (s *session) run(src string) error {
	s.t.Helper()
	return s.runFirst(src, -1)
}

// runFirst runs the first n commands of src (all of them if n < 0).
func (s *session) runFirst(src string, n int) error {
	s.t.Helper()
	sc, err := script.ParseDialect("test.redis", []byte(src), s.syms, redisdialect.Script())
	if err != nil {
		s.t.Fatalf("parse %q: %v", src, err)
	}
	for i, cmd := range sc.Commands {
		if i == n {
			break
		}
		if cmd.Kind == script.KindSet {
			v, err := cmd.Expr.Eval(&script.Env{Vars: s.vars})
			if err != nil {
				s.t.Fatal(err)
			}
			s.vars.SetValue(cmd.Var, v)
			continue
		}
		if err := s.conn.Exec(context.Background(), cmd, s.vars); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) must(src string) {
	s.t.Helper()
	if err := s.run(src); err != nil {
		s.t.Fatalf("%q: %v", src, err)
	}
}

// get returns a variable's text.
func (s *session) get(name string) string {
	s.t.Helper()
	r, ok := s.syms.Lookup(name)
	if !ok {
		s.t.Fatalf("no variable %q", name)
	}
	v, ok := s.vars.Text(r)
	if !ok {
		s.t.Fatalf("variable %q unset", name)
	}
	return v
}

// code is the engine's error code of err, "" for none.
func code(err error) string {
	var dbe *engine.DBError
	if errors.As(err, &dbe) {
		return dbe.Code
	}
	if err != nil {
		return "plain: " + err.Error()
	}
	return ""
}

func TestCommandsAndGset(t *testing.T) {
	srv := startServer(t)
	for _, cfg := range []Config{
		{Network: "unix", Addr: srv.Socket()},
		{Addr: srv.Addr()},
		{Addr: srv.Addr(), RESP3: true},
	} {
		name := cfg.Network + " " + cfg.Addr
		if cfg.RESP3 {
			name += " resp3"
		}
		t.Run(name, func(t *testing.T) {
			s := connect(t, cfg)
			s.must("\\set id 42\nDEL user:42 h z l\nSET user::id \"hello world\"\nGET user::id\n\\gset v\n")
			if got := s.get("v"); got != "hello world" {
				t.Errorf("GET = %q", got)
			}
			s.must("INCRBY counter:x 5 \\gset n\n")
			if n := s.get("n"); n == "" || n == "0" {
				t.Errorf("INCRBY = %q", n)
			}
			// A nil reply stores the empty string.
			s.must("GET no:such:key \\gset missing\n")
			if got := s.get("missing"); got != "" {
				t.Errorf("GET of a missing key = %q", got)
			}
			// An array (RESP2) or a map (RESP3) reply fills one
			// variable per element.
			s.must("HSET h a 1\nHGETALL h \\gset k val\nMGET user:42 no:such \\gset m1 m2\n")
			if k, v, m1, m2 := s.get("k"), s.get("val"), s.get("m1"), s.get("m2"); k != "a" || v != "1" || m1 != "hello world" || m2 != "" {
				t.Errorf("HGETALL/MGET stored %q %q %q %q", k, v, m1, m2)
			}
			// A double (RESP3's ',' type) and a simple string.
			s.must("ZADD z 1.5 m\nZSCORE z m \\gset score\nPING \\gset pong\n")
			if sc, p := s.get("score"), s.get("pong"); sc != "1.5" || p != "PONG" {
				t.Errorf("ZSCORE, PING stored %q, %q", sc, p)
			}
			// Arguments are binary-safe: the quoted bytes arrive as written.
			s.must("SET bin \"a\\x00b\\r\\n\"\nSTRLEN bin \\gset len\n")
			if got := s.get("len"); got != "5" {
				t.Errorf("STRLEN = %q, want 5", got)
			}
			// \gset with the wrong number of variables is an error of the script.
			if err := s.run("MGET a b \\gset only\n"); err == nil || !strings.Contains(err.Error(), "2 elements and \\gset 1 variables") {
				t.Errorf("MGET into one variable: %v", err)
			}
			// An undefined variable is the script's error, and nothing is sent.
			if err := s.run("SET :nope 1\nPING\n"); code(err) != `plain: undefined variable "nope" in argument 2` {
				t.Errorf("undefined variable: %v", err)
			}
			s.must("PING\n")
		})
	}
}

func TestErrorReplies(t *testing.T) {
	srv := startServer(t)
	s := connect(t, Config{Network: "unix", Addr: srv.Socket()})
	tests := []struct {
		src, code, msg string
	}{
		{"SET str v\nLPUSH str x\n", "WRONGTYPE", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"NOSUCHCOMMAND a\n", "ERR", "ERR unknown command 'NOSUCHCOMMAND'"},
		{"EVALSHA 0123456789012345678901234567890123456789 0\n", "NOSCRIPT", "NOSCRIPT No matching script"},
		{"INCR str\n", "ERR", "ERR value is not an integer or out of range"},
	}
	for _, tc := range tests {
		err := s.run(tc.src)
		if code(err) != tc.code || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("%q: code %q, error %v; want %s: %s", tc.src, code(err), err, tc.code, tc.msg)
		}
	}
	// The session goes on after error replies.
	s.must("PING\n")
}

func TestPipeline(t *testing.T) {
	srv := startServer(t)
	s := connect(t, Config{Addr: srv.Addr()})
	var b strings.Builder
	b.WriteString("\\set v 7\nDEL str\n\\startpipeline\n")
	for range 16 {
		b.WriteString("INCRBY p :v\n")
	}
	b.WriteString("\\endpipeline\nGET p \\gset total\n")
	s.must(b.String())
	if got := s.get("total"); got != "112" {
		t.Fatalf("16 pipelined INCRBY 7 = %q", got)
	}
	// An error inside a pipeline is returned at its end, after every
	// reply was read: the session stays in step.
	err := s.run("SET str x\n\\startpipeline\nINCR p\nINCR str\nINCR p\n\\endpipeline\n")
	if code(err) != "ERR" {
		t.Fatalf("pipeline with an error: %v", err)
	}
	s.must("GET p \\gset after\n")
	if got := s.get("after"); got != "114" {
		t.Fatalf("after the failed pipeline p = %q, want 114 (both INCRs ran)", got)
	}
	// A pipeline larger than the write buffer's flush point.
	b.Reset()
	b.WriteString("\\startpipeline\n")
	big := strings.Repeat("x", 1000)
	for range 200 {
		b.WriteString("SET big " + big + "\n")
	}
	b.WriteString("\\endpipeline\nSTRLEN big \\gset n\n")
	s.must(b.String())
	if got := s.get("n"); got != "1000" {
		t.Fatalf("STRLEN big = %q", got)
	}
}

func TestConnectionSetup(t *testing.T) {
	srv := startServer(t, redis.Options{Password: "s3cret", Settings: map[string]string{"databases": "4"}})
	// Password, database and client name at connect, in both protocols.
	for _, resp3 := range []bool{false, true} {
		s := connect(t, Config{Network: "unix", Addr: srv.Socket(), Password: "s3cret", DB: 3, AppName: "firedrill test", RESP3: resp3})
		s.must("SET only:in:3 yes\nCLIENT GETNAME \\gset name\n")
		if got := s.get("name"); got != "firedrill-test" {
			t.Errorf("resp3=%v: client name %q", resp3, got)
		}
	}
	connectAs := func(cfg Config) error {
		target, err := NewTarget(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := target.Connect(context.Background(), 0)
		if err == nil {
			c.Close()
		}
		return err
	}
	// An ACL user by name.
	if got := srv.do(t, "ACL", "SETUSER", "loader", "on", ">pw", "~*", "+@all"); got != "+OK\r\n" {
		t.Fatalf("ACL SETUSER: %q", got)
	}
	for _, resp3 := range []bool{false, true} {
		s := connect(t, Config{Addr: srv.Addr(), User: "loader", Password: "pw", RESP3: resp3})
		s.must("ACL WHOAMI \\gset who\n")
		if got := s.get("who"); got != "loader" {
			t.Errorf("resp3=%v: ACL WHOAMI = %q", resp3, got)
		}
	}
	// A wrong password is the server's error, by its code, and the
	// message does not hold the password.
	err := connectAs(Config{Network: "unix", Addr: srv.Socket(), Password: "wrong-password"})
	if code(err) != "WRONGPASS" || strings.Contains(err.Error(), "wrong-password") || !strings.Contains(err.Error(), srv.Socket()) {
		t.Errorf("wrong password: %q %v", code(err), err)
	}
	// No password where one is needed: the first command says so.
	err = connectAs(Config{Network: "unix", Addr: srv.Socket(), AppName: "x"})
	if code(err) != "NOAUTH" {
		t.Errorf("no password: %q %v", code(err), err)
	}
	// A server that accepts but never answers: the handshake gives up at
	// the connect timeout, as a failure to connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	err = connectAs(Config{Addr: l.Addr().String(), AppName: "x", ConnectTimeout: 300 * time.Millisecond})
	if code(err) != engine.CodeConnect || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 3*time.Second {
		t.Errorf("silent server: %q %v after %v", code(err), err, time.Since(start))
	}
	// Nothing listening: a connect error naming the address.
	err = connectAs(Config{Network: "unix", Addr: srv.Dir() + "/none.sock"})
	if code(err) != engine.CodeConnect || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("no server: %q %v", code(err), err)
	}
}

func TestConnectionLossAndInterrupt(t *testing.T) {
	srv := startServer(t)
	s := connect(t, Config{Network: "unix", Addr: srv.Socket(), AppName: "victim"})
	s.must("PING\n")
	// Killed by the server: the connection's error, and Reset says the
	// session is gone.
	if got := srv.do(t, "CLIENT", "KILL", "SKIPME", "no", "TYPE", "normal"); !strings.HasPrefix(got, ":") {
		t.Fatalf("CLIENT KILL: %q", got)
	}
	err := s.run("PING\n")
	if code(err) != engine.CodeConnection {
		t.Fatalf("after CLIENT KILL: %q %v", code(err), err)
	}
	if err := s.conn.Reset(context.Background()); err == nil {
		t.Fatal("Reset of a lost session succeeded")
	}

	// Interrupt ends a command that would block for ever.
	assertInterruptEndsBLPOP(t, connect(t, Config{Network: "unix", Addr: srv.Socket()}))
}

// assertInterruptEndsBLPOP checks that Interrupt ends a command that
// would block for ever, as a lost connection.
func assertInterruptEndsBLPOP(t *testing.T, s *session) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.run("BLPOP never:pushed 0\n") }()
	time.Sleep(100 * time.Millisecond)
	s.conn.Interrupt(false)
	select {
	case err := <-done:
		if code(err) != engine.CodeConnection {
			t.Fatalf("interrupted BLPOP: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Interrupt did not end BLPOP")
	}
}

func TestResetEndsTransactions(t *testing.T) {
	srv := startServer(t)
	s := connect(t, Config{Addr: srv.Addr()})
	// A script that fails inside MULTI leaves the session queuing; Reset
	// discards the transaction, so the next one runs normally.
	if err := s.run("MULTI\nSET t 1\nNOSUCHCOMMAND\n"); code(err) != "ERR" {
		t.Fatalf("error inside MULTI: %v", err)
	}
	if err := s.conn.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.must("GET t \\gset t\n")
	if got := s.get("t"); got != "" {
		t.Fatalf("t = %q after DISCARD", got)
	}
	// A pipeline cut short (an error between its commands) is forgotten.
	if err := s.runFirst("\\startpipeline\nSET u 1\n\\endpipeline\n", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.must("PING \\gset p\nEXISTS u \\gset u\n")
	if p, u := s.get("p"), s.get("u"); p != "PONG" || u != "0" {
		t.Fatalf("after Reset of an unsent pipeline: %q %q", p, u)
	}
	// WATCH with EXEC: a changed key makes EXEC's reply nil.
	s.must("WATCH w\n")
	srv.do(t, "SET", "w", "changed")
	s.must("MULTI\nSET w mine\nEXEC \\gset r\n")
	if got := s.get("r"); got != "" {
		t.Fatalf("EXEC after a watched change stored %q", got)
	}
}

// TestLargeReplies reads replies larger than the read buffer: a 1 MB
// value and a 20,000-element array, in and out of a pipeline.
func TestLargeReplies(t *testing.T) {
	srv := startServer(t)
	big := strings.Repeat("0123456789", 100_000)
	if got := srv.do(t, "SET", "big", big); got != "+OK\r\n" {
		t.Fatalf("SET big: %q", got)
	}
	args := []string{"RPUSH", "list"}
	for i := range 20_000 {
		args = append(args, strings.Repeat("e", i%50))
	}
	srv.do(t, args...)
	s := connect(t, Config{Addr: srv.Addr()})
	s.must("GET big \\gset v\nLRANGE list 0 -1\n\\startpipeline\nGET big\nLRANGE list 0 -1\nGET big\n\\endpipeline\nLLEN list \\gset n\n")
	if got := s.get("v"); got != big {
		t.Fatalf("GET big: %d bytes, want %d", len(got), len(big))
	}
	if got := s.get("n"); got != "20000" {
		t.Fatalf("LLEN = %q", got)
	}
}

// TestServerStateErrors checks the codes of errors a stressed server
// gives: OOM above maxmemory, BUSY while a script runs too long.
// A server at maxclients replies so and hangs up: the engine must see a
// refusal to retry, with the server's words, not a broken connection.
func TestMaxClientsIsARefusal(t *testing.T) {
	srv := startServer(t, redis.Options{Settings: map[string]string{"maxclients": "1"}})
	cfg := Config{Network: "unix", Addr: srv.Socket(), AppName: "app"}
	connect(t, cfg) // the one client it takes
	target, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := target.Connect(context.Background(), 1)
	if err == nil {
		conn.Close()
		t.Fatal("a second client was accepted at maxclients 1")
	}
	if f := engine.FaultOf(err); f != engine.Refused || !strings.Contains(err.Error(), "max number of clients") {
		t.Errorf("at maxclients: %v (fault %v), want the server's refusal", err, f)
	}
}

func TestServerStateErrors(t *testing.T) {
	srv := startServer(t, redis.Options{Settings: map[string]string{"busy-reply-threshold": "100"}})
	s := connect(t, Config{Network: "unix", Addr: srv.Socket()})

	srv.do(t, "CONFIG", "SET", "maxmemory", "1")
	err := s.run("SET k v\n")
	if code(err) != "OOM" {
		t.Errorf("SET above maxmemory: %q %v", code(err), err)
	}
	srv.do(t, "CONFIG", "SET", "maxmemory", "0")

	done := make(chan string, 1)
	go func() {
		reply, err := srv.try("EVAL", "while true do end", "0")
		if err != nil {
			reply = err.Error()
		}
		done <- reply
	}()
	time.Sleep(300 * time.Millisecond)
	err = s.run("PING\n")
	if code(err) != "BUSY" {
		t.Errorf("PING during a long script: %q %v", code(err), err)
	}
	srv.do(t, "SCRIPT", "KILL")
	if got := <-done; !strings.HasPrefix(got, "-") {
		t.Errorf("killed script replied %q", got)
	}
	s.must("PING\n")
}

// countingPoller is an engine.Poller that waits in poll(2) and counts the
// waits, to see where a session waits.
type countingPoller struct{ reads int }

func (p *countingPoller) WaitRead(fd int) error  { p.reads++; return sockio.Poll(fd, false, -1) }
func (p *countingPoller) WaitWrite(fd int) error { return sockio.Poll(fd, true, -1) }
func (p *countingPoller) Forget(int)             {}

// TestConnectLoopParks checks that a loop client connecting waits
// through its Poller (so its event loop runs the other clients meanwhile),
// also for a server that accepts and never answers, and that the session
// then waits through the same Poller.
func TestConnectLoopParks(t *testing.T) {
	srv := startServer(t)
	target, err := NewTarget(Config{Network: "unix", Addr: srv.Socket(), AppName: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	p := &countingPoller{}
	c, err := target.ConnectLoop(context.Background(), 0, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p.reads == 0 {
		t.Fatal("ConnectLoop did not wait through the Poller")
	}
	before := p.reads
	s := &session{t: t, conn: c, syms: script.NewSymbols()}
	s.vars = script.NewVars(s.syms)
	s.must("CLIENT GETNAME \\gset name\n")
	if s.get("name") != "parked" || p.reads == before {
		t.Fatalf("session after ConnectLoop: name %q, %d waits through the Poller", s.get("name"), p.reads-before)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	silent, err := NewTarget(Config{Addr: l.Addr().String(), AppName: "x", ConnectTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p = &countingPoller{}
	if _, err := silent.ConnectLoop(context.Background(), 0, p); code(err) != engine.CodeConnect || p.reads == 0 {
		t.Fatalf("silent server: %q %v, %d waits through the Poller", code(err), err, p.reads)
	}
}
