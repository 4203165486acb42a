package redisconn

import (
	"bufio"
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
)

// startRedis starts a throwaway server stopped when the test ends.
func startRedis(t *testing.T, opts redisinstance.Options) *redisinstance.Instance {
	t.Helper()
	inst, err := redisinstance.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop redis: %v", err)
		}
	})
	return inst
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn  string
		want Config
		err  string // a part of the error; "" = none
	}{
		{"redis://127.0.0.1:6380/2", Config{Network: "tcp", Addr: "127.0.0.1:6380", DB: 2}, ""},
		// The port defaults to Redis's; the database to 0.
		{"redis://localhost", Config{Network: "tcp", Addr: "localhost:6379"}, ""},
		{"redis://app:s3cret@10.0.0.1:7000/1", Config{Network: "tcp", Addr: "10.0.0.1:7000", User: "app", Password: "s3cret", DB: 1}, ""},
		// A lone user-info is the default user's password (redis-cli -u).
		{"redis://s3cret@h:1", Config{Network: "tcp", Addr: "h:1", Password: "s3cret"}, ""},
		{"redis://:s3cret@h:1", Config{Network: "tcp", Addr: "h:1", Password: "s3cret"}, ""},
		{"redis://h:1?db=3&password=pw", Config{Network: "tcp", Addr: "h:1", DB: 3, Password: "pw"}, ""},
		{"redis:///tmp/r.sock?db=4", Config{Network: "unix", Addr: "/tmp/r.sock", DB: 4}, ""},
		{"unix:///tmp/r.sock", Config{Network: "unix", Addr: "/tmp/r.sock"}, ""},
		{"rediss://h:6379/0", Config{Network: "tcp", Addr: "h:6379", TLS: &TLS{}}, ""},
		{"rediss://h:1?cacert=/c.pem&cert=/u.pem&key=/u.key&insecure=true", Config{Network: "tcp", Addr: "h:1", TLS: &TLS{CACert: "/c.pem", Cert: "/u.pem", Key: "/u.key", Insecure: true}}, ""},
		// TLS options on a plain URL are a mistake worth naming.
		{"redis://h:1?cacert=/c.pem", Config{}, "use rediss://"},
		{"rediss://h:1?insecure=maybe", Config{}, "insecure=true"},
		{"rediss:///tmp/r.sock", Config{}, "unix socket"},
		{"redis://h:1/zero", Config{}, "not a number"},
		{"redis://h:1/1?db=2", Config{}, "twice"},
		{"redis://h:1?timeout=3", Config{}, "unknown parameter"},
		{"http://h:1", Config{}, "not a Redis URL"},
		{"redis://", Config{}, "no host"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.dsn)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseURL(%q) error %v, want one saying %q", tt.dsn, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParseURL(%q): %v", tt.dsn, err)
		case tt.err == "" && !reflect.DeepEqual(got, tt.want):
			t.Errorf("ParseURL(%q) = %+v, want %+v", tt.dsn, got, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q): the error shows the password: %v", tt.dsn, err)
		}
	}
}

func TestDoAndPipelineOnARealServer(t *testing.T) {
	t.Parallel()
	inst := startRedis(t, redisinstance.Options{})
	ctx := t.Context()
	c, err := Dial(ctx, Config{Network: "unix", Addr: inst.Socket(), DB: 3, Name: "firedrill-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Do(ctx, "SET", "k", "a value\r\nwith CRLF"); err != nil || r.Text() != "OK" {
		t.Fatalf("SET: %v %+v", err, r)
	}
	if r, err := c.Do(ctx, "GET", "k"); err != nil || r.Text() != "a value\r\nwith CRLF" {
		t.Errorf("GET: %v %+v", err, r)
	}
	if r, err := c.Do(ctx, "GET", "missing"); err != nil || !r.Nil {
		t.Errorf("GET of a missing key: %v %+v, want nil", err, r)
	}
	if r, err := c.Do(ctx, "CLIENT", "GETNAME"); err != nil || r.Text() != "firedrill-test" {
		t.Errorf("CLIENT GETNAME: %v %+v", err, r)
	}
	// The database was selected: db 0 does not have the key.
	if r, err := c.Do(ctx, "CLIENT", "INFO"); err != nil || !strings.Contains(r.Text(), " db=3 ") {
		t.Errorf("CLIENT INFO: %v %q, want db=3", err, r.Text())
	}
	_, err = c.Do(ctx, "INCR", "k")
	var redisErr *Error
	if !errors.As(err, &redisErr) || redisErr.Prefix() != "ERR" {
		t.Errorf("INCR of a string: %v, want an ERR reply", err)
	}
	_, err = c.Do(ctx, "LPUSH", "k", "x")
	if !errors.As(err, &redisErr) || redisErr.Prefix() != "WRONGTYPE" {
		t.Errorf("LPUSH on a string: %v, want WRONGTYPE", err)
	}
	replies, err := c.Pipeline(ctx, []string{"RPUSH", "l", "a", "b"}, []string{"LRANGE", "l", "0", "-1"}, []string{"NOSUCHCOMMAND"}, []string{"PING"})
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Int != 2 || strings.Join(replies[1].Strings(), ",") != "a,b" || replies[2].Err == nil || replies[3].Text() != "PONG" {
		t.Errorf("pipeline replies: %+v", replies)
	}
}

func TestDialErrorsSayWhereAndWhat(t *testing.T) {
	t.Parallel()
	inst := startRedis(t, redisinstance.Options{Password: "right-one"})
	ctx := t.Context()
	_, err := Dial(ctx, Config{Network: "tcp", Addr: inst.Addr(), Password: "wrong-one"})
	if err == nil || !strings.Contains(err.Error(), inst.Addr()) || !strings.Contains(err.Error(), "password") {
		t.Errorf("wrong password: %v, want the address and a hint", err)
	}
	if err != nil && strings.Contains(err.Error(), "wrong-one") {
		t.Errorf("the error shows the password: %v", err)
	}
	c, err := Dial(ctx, Config{Network: "tcp", Addr: inst.Addr(), Password: "right-one"})
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
	_, err = Dial(ctx, Config{Network: "unix", Addr: inst.Dir() + "/no.sock"})
	if err == nil || !strings.Contains(err.Error(), "no.sock") {
		t.Errorf("no server: %v, want the socket named", err)
	}
}

// Cancelling the context interrupts a command the server holds.
func TestCancelInterruptsABlockedCommand(t *testing.T) {
	t.Parallel()
	inst := startRedis(t, redisinstance.Options{})
	c, err := Dial(t.Context(), Config{Network: "unix", Addr: inst.Socket()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.Do(ctx, "BLPOP", "never", "30")
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("BLPOP cancelled after %v: %v, want context.Canceled at once", time.Since(start), err)
	}
}

func TestReadReplyRefusesWhatIsNotRESP2(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "+OK", "+OK\n", "?what\r\n", ":12x\r\n", "$5\r\nab\r\n", "$2\r\nabcd\r\n", "$-2\r\n",
		"*2\r\n:1\r\n", "*-5\r\n", "$999999999999\r\n", strings.Repeat("*1\r\n", 20) + ":1\r\n",
		"%1\r\n+a\r\n+b\r\n", // a RESP3 map
	} {
		if r, err := ReadReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("ReadReply(%q) = %+v, want an error", in, r)
		}
	}
}

func FuzzReadReply(f *testing.F) {
	for _, seed := range []string{
		"+OK\r\n", "-ERR unknown command 'x'\r\n", ":42\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$3\r\nfoo\r\n*1\r\n:1\r\n", "*3\r\n$4\r\nsave\r\n$0\r\n\r\n:0\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadReply(bufio.NewReader(strings.NewReader(string(data))))
		if err != nil {
			return
		}
		// What decodes, encoded again, decodes to the same reply.
		enc := encode(nil, r)
		again, err := ReadReply(bufio.NewReader(strings.NewReader(string(enc))))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("reply %+v from %q re-encodes to %q, which decodes to %+v, %v", r, data, enc, again, err)
		}
	})
}

// encode writes a reply back in RESP2.
func encode(b []byte, r Reply) []byte {
	switch r.Type {
	case Status, ErrorT:
		b = append(b, byte(r.Type))
		b = append(b, r.Str...)
	case Integer:
		b = append(b, ':')
		b = append(b, r.Text()...)
	case Bulk:
		if r.Nil {
			return append(b, "$-1\r\n"...)
		}
		b = append(b, '$')
		b = append(b, []byte(itoa(len(r.Str)))...)
		b = append(b, "\r\n"...)
		b = append(b, r.Str...)
	case Array:
		if r.Nil {
			return append(b, "*-1\r\n"...)
		}
		b = append(b, '*')
		b = append(b, []byte(itoa(len(r.Elems)))...)
		b = append(b, "\r\n"...)
		for _, e := range r.Elems {
			b = encode(b, e)
		}
		return b
	}
	return append(b, "\r\n"...)
}

func itoa(n int) string { return (&Reply{Type: Integer, Int: int64(n)}).Text() }

// Whatever the URL, ParseURL never panics and its errors never show the
// password it was given.
func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{"redis://u:pw@h:1/2", "redis://pw@h", "redis:///tmp/s.sock?db=1&password=pw", "rediss://h", "redis://h:1/x?db=2",
		"rediss://:pw@h:1/0?cacert=/c.crt&cert=/u.crt&key=/u.key&insecure=true"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		cfg, err := ParseURL(dsn)
		if err != nil {
			if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && len(pw) > 3 && strings.Contains(err.Error(), pw) {
					t.Fatalf("ParseURL(%q): the error shows the password: %v", dsn, err)
				}
			}
			return
		}
		if cfg.Addr == "" || cfg.DB < 0 || (cfg.Network != "tcp" && cfg.Network != "unix") {
			t.Fatalf("ParseURL(%q) = %+v", dsn, cfg)
		}
	})
}
