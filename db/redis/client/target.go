// Package redistarget runs the commands of Redis scripts (the dialect of
// db/redis/redisdialect) against a Redis server: RESP2, or RESP3 after
// HELLO 3, spoken on the raw socket with non-blocking system calls, so that clients run
// on the engine's event loops without allocating per command.
package redistarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
)

// Config says how to reach a Redis server and what each session sets up.
type Config struct {
	// Network is "tcp" (default) or "unix"; Addr is host:port or the
	// socket's path.
	Network, Addr string
	// User and Password are sent with AUTH (or HELLO's AUTH) when
	// Password is set; User defaults to Redis's "default" user.
	User, Password string
	// DB is the database number selected at connect (SELECT), when not 0.
	DB int
	// AppName is the client name (CLIENT SETNAME), so that sessions can
	// be told apart in CLIENT LIST; spaces become '-', which Redis
	// refuses in names.
	AppName string
	// RESP3 speaks RESP3 (HELLO 3) instead of RESP2.
	RESP3 bool
	// ConnectTimeout bounds opening a session, handshake included
	// (default 10 s).
	ConnectTimeout time.Duration
	// TLS, when set, speaks TLS to the server (rediss://). Such sessions
	// cannot run on an event loop (TLS needs Go's blocking reads and
	// writes): each client gets a goroutine.
	TLS *tls.Config
}

// Target opens client sessions on one Redis server.
type Target struct {
	cfg   Config
	hello []byte // the handshake's commands, sent at once
	count int    // and how many replies they get
}

var (
	_ engine.Target     = (*Target)(nil)
	_ engine.LoopTarget = (*Target)(nil)
)

// NewTarget checks cfg and prepares the handshake every session sends.
func NewTarget(cfg Config) (*Target, error) {
	switch cfg.Network {
	case "":
		cfg.Network = "tcp"
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, fmt.Errorf("redis target: network %q: use tcp or unix", cfg.Network)
	}
	if cfg.Addr == "" {
		return nil, errors.New("redis target: no address (host:port or a unix socket's path)")
	}
	if cfg.DB < 0 {
		return nil, fmt.Errorf("redis target: database %d: a database number is 0 or more", cfg.DB)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	t := &Target{cfg: cfg}
	name := strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '-'
		}
		return r
	}, cfg.AppName)
	user := cfg.User
	if user == "" {
		user = "default"
	}
	if cfg.RESP3 {
		args := []string{"HELLO", "3"}
		if cfg.Password != "" {
			args = append(args, "AUTH", user, cfg.Password)
		}
		if name != "" {
			args = append(args, "SETNAME", name)
		}
		t.add(args...)
	} else {
		if cfg.Password != "" {
			if cfg.User != "" {
				t.add("AUTH", user, cfg.Password)
			} else {
				t.add("AUTH", cfg.Password)
			}
		}
		if name != "" {
			t.add("CLIENT", "SETNAME", name)
		}
	}
	if cfg.DB != 0 {
		t.add("SELECT", strconv.Itoa(cfg.DB))
	}
	if t.count == 0 && cfg.TLS != nil {
		// A TLS 1.3 server refuses a missing client certificate after
		// the handshake: one exchange makes that fail the connect.
		t.add("PING")
	}
	return t, nil
}

// add appends one command to the handshake.
func (t *Target) add(args ...string) {
	t.hello = appendCommand(t.hello, args...)
	t.count++
}

// appendCommand encodes a command as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// Addr names the server in messages: host:port or the socket's path.
func (t *Target) Addr() string { return t.cfg.Addr }

// Connect opens a client's session that blocks in poll(2) when it waits
// (a goroutine per client: runs with an application pool).
func (t *Target) Connect(ctx context.Context, _ int) (engine.Conn, error) {
	c, err := t.connect(ctx, sockio.Blocking{})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ConnectLoop opens a client's session whose waits go through p. The
// connect and the handshake (a dial, the server's replies to AUTH and
// SETNAME) run off the client's event loop (sockio.OpenParked), as
// db/postgres/client's do.
func (t *Target) ConnectLoop(ctx context.Context, _ int, p engine.Poller) (engine.Conn, error) {
	if t.cfg.TLS != nil {
		return nil, engine.ErrNoLoop
	}
	c, err := sockio.OpenParked(ctx, p,
		func() (*conn, error) { return t.connect(ctx, sockio.Blocking{}) },
		func(c *conn) { _ = c.closeFD() })
	if err != nil {
		if errors.Is(err, sockio.ErrGivenUp) {
			err = &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to redis at %s: %w", t.cfg.Addr, err)}
		}
		return nil, err
	}
	c.io.SetPoller(p)
	return c, nil
}

// connect dials the server and sends the handshake, within the connect
// timeout.
func (t *Target) connect(ctx context.Context, p engine.Poller) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, t.cfg.Network, t.cfg.Addr)
	if err != nil {
		return nil, &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to redis at %s: %w", t.cfg.Addr, err)}
	}
	if t.cfg.TLS != nil {
		return t.connectTLS(ctx, nc)
	}
	fd, err := rawFD(nc)
	if err != nil {
		return nil, &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to redis at %s: %w", t.cfg.Addr, err)}
	}
	c := newConn(fd, p, t.cfg.Addr)
	if t.count > 0 {
		deadline, _ := ctx.Deadline()
		if err := c.handshake(t.hello, t.count, deadline); err != nil {
			c.closeFD()
			return nil, err
		}
	}
	return c, nil
}

// connectTLS runs the TLS handshake on nc, then the session's own,
// within ctx's deadline.
func (t *Target) connectTLS(ctx context.Context, nc net.Conn) (*conn, error) {
	tc := tls.Client(nc, t.cfg.TLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, &engine.DBError{Code: engine.CodeConnect,
			Err: fmt.Errorf("connect to redis at %s: TLS handshake: %w", t.cfg.Addr, redisconn.ExplainTLS(err))}
	}
	c := newConn(-1, sockio.Blocking{}, t.cfg.Addr)
	c.io.StartTLS(tc)
	deadline, _ := ctx.Deadline()
	_ = tc.SetDeadline(deadline)
	if err := c.handshake(t.hello, t.count, deadline); err != nil {
		c.closeFD()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return c, nil
}

// rawFD takes a non-blocking duplicate of the connection's socket and
// closes the connection, so that the session owns its descriptor outside
// Go's netpoller.
func rawFD(nc net.Conn) (int, error) {
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("%T has no socket", nc)
	}
	return sockio.DupFD(sc)
}
