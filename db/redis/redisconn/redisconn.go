// Package redisconn is a small synchronous Redis client for the control
// side of a run: setup, events (CONFIG SET, CLIENT KILL, a command), the
// settings snapshot and restoring what a run changed. It speaks RESP2 on
// one connection, one command at a time or a pipeline of them. The load
// itself goes through db/redis/client, on the engine's event loop.
package redisconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout bounds a dial and a command whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Config says how to reach a server and who to be there.
type Config struct {
	Network  string // "tcp" or "unix"
	Addr     string // host:port, or the socket's path
	User     string // ACL user; "" is the default user
	Password string // "" sends no AUTH
	DB       int    // SELECTed after connecting when not 0
	// Name is the connection's CLIENT SETNAME, so that samplers and
	// CLIENT KILL can tell firedrill's sessions apart; "" sets none.
	Name string
	// TLS, when set, speaks TLS to the server (rediss://).
	TLS *TLS
}

// Where is the server's address for messages: host:port or the socket's
// path, never a password.
func (c Config) Where() string { return c.Addr }

// ParseURL reads a redis:// URL: redis://[[user]:password@]host[:port][/db],
// or redis:///path/to/socket?db=N for a unix socket (also
// unix:///path?db=N); rediss:// is the same over TLS, with redis-cli's
// TLS options as parameters: ?cacert=/path/ca.crt, cert= and key= (a
// client certificate), insecure=true.
func ParseURL(dsn string) (Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url.Parse's message repeats the whole URL, password included.
		return Config{}, errors.New("not a redis:// URL (redis://[user:password@]host:port/db)")
	}
	cfg := Config{Network: "tcp"}
	switch u.Scheme {
	case "redis", "unix":
	case "rediss":
		cfg.TLS = &TLS{}
	default:
		return Config{}, fmt.Errorf("%s:// is not a Redis URL (want redis://host:port/db)", u.Scheme)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Password, _ = u.User.Password()
		if _, set := u.User.Password(); !set {
			// redis://secret@host: redis-cli and go-redis take a lone
			// user-info as the password of the default user.
			cfg.User, cfg.Password = "", u.User.Username()
		}
	}
	query := u.Query()
	for key := range query {
		switch key {
		case "db", "password":
		case "cacert", "cert", "key", "insecure":
			if cfg.TLS == nil {
				return Config{}, fmt.Errorf("parameter %q is a TLS option: use rediss://… for a server that speaks TLS", key)
			}
		default:
			return Config{}, fmt.Errorf("unknown parameter %q in the Redis URL (known: db, password; with rediss://: cacert, cert, key, insecure)", key)
		}
	}
	if p := query.Get("password"); p != "" {
		cfg.Password = p
	}
	if cfg.TLS != nil {
		cfg.TLS.CACert, cfg.TLS.Cert, cfg.TLS.Key = query.Get("cacert"), query.Get("cert"), query.Get("key")
		switch v := query.Get("insecure"); v {
		case "", "false", "0", "no":
		case "true", "1", "yes":
			cfg.TLS.Insecure = true
		default:
			return Config{}, fmt.Errorf("insecure=%q in the Redis URL: use insecure=true or leave it out", v)
		}
	}
	dbText := query.Get("db")
	if u.Host == "" || u.Scheme == "unix" {
		if cfg.TLS != nil {
			return Config{}, errors.New("rediss:// needs a host:port (TLS over a unix socket is not supported: use redis:///path/to.sock)")
		}
		if u.Path == "" {
			return Config{}, errors.New("the Redis URL names no host (redis://host:port/db) and no socket (redis:///path/to/redis.sock)")
		}
		cfg.Network, cfg.Addr = "unix", u.Path
	} else {
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "6379"
		}
		cfg.Addr = net.JoinHostPort(host, port)
		if path := strings.Trim(u.Path, "/"); path != "" {
			if dbText != "" {
				return Config{}, errors.New("the Redis URL names its database twice (/db and ?db=)")
			}
			dbText = path
		}
	}
	if dbText != "" {
		db, err := strconv.Atoi(dbText)
		if err != nil || db < 0 {
			return Config{}, fmt.Errorf("database %q in the Redis URL is not a number (redis://host:port/0)", dbText)
		}
		cfg.DB = db
	}
	return cfg, nil
}

// Conn is one connection to a server. It is not safe for concurrent use.
type Conn struct {
	cfg    Config
	conn   net.Conn
	reader *bufio.Reader
	buf    []byte
}

// Dial connects, authenticates, selects the database and names the
// connection. Its errors name the server's address and what to check.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Network == "" {
		cfg.Network = "tcp"
	}
	dialCtx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var dialer net.Dialer
	var tlsConf *tls.Config
	if cfg.TLS != nil {
		conf, err := cfg.TLS.Config(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("connect to Redis at %s: %w", cfg.Where(), err)
		}
		tlsConf = conf
	}
	netConn, err := dialer.DialContext(dialCtx, cfg.Network, cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to Redis at %s: %w (is the server running there?)", cfg.Where(), err)
	}
	if tlsConf != nil {
		tlsConn := tls.Client(netConn, tlsConf)
		if err := tlsConn.HandshakeContext(dialCtx); err != nil {
			netConn.Close()
			return nil, fmt.Errorf("connect to Redis at %s: TLS handshake: %w", cfg.Where(), ExplainTLS(err))
		}
		netConn = tlsConn
	}
	c := &Conn{cfg: cfg, conn: netConn, reader: bufio.NewReaderSize(netConn, 16<<10)}
	var hello [][]string
	if cfg.Password != "" {
		if cfg.User != "" {
			hello = append(hello, []string{"AUTH", cfg.User, cfg.Password})
		} else {
			hello = append(hello, []string{"AUTH", cfg.Password})
		}
	}
	if cfg.DB != 0 {
		hello = append(hello, []string{"SELECT", strconv.Itoa(cfg.DB)})
	}
	if cfg.Name != "" {
		hello = append(hello, []string{"CLIENT", "SETNAME", cfg.Name})
	}
	if len(hello) == 0 {
		// One exchange at connect, so that a server that cannot be
		// talked to (a TLS port to redis://, a TLS 1.3 server refusing
		// the client's certificate after the handshake) fails the dial,
		// not the first command.
		hello = append(hello, []string{"PING"})
	}
	replies, err := c.Pipeline(dialCtx, hello...)
	if err == nil {
		for n, r := range replies {
			// A user whose ACL forbids CLIENT SETNAME goes unnamed:
			// the name only tells firedrill's sessions apart.
			if r.Err != nil && !(hello[n][0] == "CLIENT" && r.Err.Prefix() == "NOPERM") {
				err = fmt.Errorf("%s: %w", hello[n][0], r.Err)
				break
			}
		}
	}
	if err != nil {
		hint := ""
		var replyErr *Error
		switch {
		case strings.HasPrefix(err.Error(), "AUTH"):
			hint = " (check the user and password in the redis:// URL)"
		case errors.As(err, &replyErr):
		case cfg.TLS != nil:
			err = ExplainTLS(c.alertBehind(err))
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
			errors.Is(err, syscall.EPIPE), errors.Is(err, errProtocol):
			hint = " (" + PlainHint + ")"
		}
		c.Close()
		return nil, fmt.Errorf("connect to Redis at %s: %w%s", cfg.Where(), err, hint)
	}
	return c, nil
}

// alertBehind returns the TLS alert a server sent before hanging up, when
// writing to it failed: a TLS 1.3 server that refuses the client's
// certificate says why after the handshake and closes, and a write that
// meets the closed socket would hide the reason. Otherwise err.
func (c *Conn) alertBehind(err error) error {
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "write" {
		return err
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, rerr := c.reader.ReadByte(); IsRemoteAlert(rerr) {
		return fmt.Errorf("redis at %s: %w", c.cfg.Where(), rerr)
	}
	return err
}

// Close ends the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// Config is what the connection was dialed with.
func (c *Conn) Config() Config { return c.cfg }

// Do sends one command and reads its reply. A reply that is a Redis error
// is returned as *Error; an error of the connection (or ctx ending) leaves
// it unusable.
func (c *Conn) Do(ctx context.Context, args ...string) (Reply, error) {
	replies, err := c.Pipeline(ctx, args)
	if err != nil {
		return Reply{}, err
	}
	if replies[0].Err != nil {
		return replies[0], replies[0].Err
	}
	return replies[0], nil
}

// Pipeline sends the commands at once and reads their replies in order;
// a Redis error is in its reply's Err, not in the returned error.
func (c *Conn) Pipeline(ctx context.Context, commands ...[]string) ([]Reply, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", c.cfg.Where(), err)
	}
	// Cancelling ctx (Ctrl-C) interrupts a command the server is slow to answer.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.buf = c.buf[:0]
	for _, args := range commands {
		c.buf = AppendCommand(c.buf, args...)
	}
	if _, err := c.conn.Write(c.buf); err != nil {
		return nil, c.ioError(ctx, err)
	}
	replies := make([]Reply, len(commands))
	for n := range replies {
		r, err := ReadReply(c.reader)
		if err != nil {
			return nil, c.ioError(ctx, err)
		}
		replies[n] = r
	}
	return replies, nil
}

// ioError says where an I/O error happened, or that ctx ended.
func (c *Conn) ioError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("redis at %s: %w", c.cfg.Where(), ctxErr)
	}
	return fmt.Errorf("redis at %s: %w", c.cfg.Where(), err)
}

// withDefaultTimeout gives ctx DefaultTimeout when it has no deadline.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, arg := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(arg)), 10)
		b = append(b, '\r', '\n')
		b = append(b, arg...)
		b = append(b, '\r', '\n')
	}
	return b
}
