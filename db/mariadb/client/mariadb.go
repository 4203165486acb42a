// Package mariadb runs script commands against MariaDB and MySQL on the
// engine's event loop: the client/server protocol spoken on the raw socket
// (handshake v10, mysql_native_password and caching_sha2_password's fast
// path, auth switch), text queries (COM_QUERY, with multi-statements for
// \; commands) and server-side prepared statements (COM_STMT_PREPARE /
// EXECUTE with binary rows). With Config.TLS a session asks for TLS
// (SSLRequest) and then runs on a goroutine of its own, reading and
// writing through crypto/tls (tls.go).
//
// The packet layer is written here rather than taken from
// go-sql-driver/mysql because the engine needs what database/sql cannot
// give: a session that does its own non-blocking reads and writes on a
// file descriptor and parks on the engine's Poller (so one event loop
// drives many clients, as pgbench and sysbench do), and no allocation per
// query (database/sql allocates rows, arguments and driver.Values for
// each one).
//
// Errors: 1213 (deadlock) is an engine.Deadlock failure, retried as
// pgbench retries its own; 1205 (lock wait timeout) is counted and retried
// as a deadlock too, since it is the same lost lock conflict (and is how
// deadlocks surface when innodb_deadlock_detect is off); 1020 (record
// changed since last read) is a serialization failure. Every server error
// carries the code "SQLSTATE/number" (40001/1213, HY000/1205, 42000/1064),
// so that errors of one SQLSTATE (HY000 is most of them) stay apart in the
// counts. A lost session is engine.CodeConnection, as with PostgreSQL.
package mariadb

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// Modes: how SQL commands are sent.
const (
	ModeSimple   = "simple"   // COM_QUERY with variables substituted into the text
	ModePrepared = "prepared" // COM_STMT_PREPARE once per session, then COM_STMT_EXECUTE
)

// Config says how to reach the server and what each session sets up.
type Config struct {
	Network string // "tcp" (default) or "unix"
	Addr    string // host:port, or the socket's path
	// User and Password authenticate (mysql_native_password, or
	// caching_sha2_password when the server has the user cached);
	// Database is the default database, "" for none.
	User, Password, Database string
	// Mode is ModeSimple (default) or ModePrepared.
	Mode string
	// Session holds session variables set after connecting (SET SESSION
	// name = value), e.g. transaction_isolation or innodb_lock_wait_timeout.
	Session map[string]string
	// AppName is sent as the connection attribute program_name.
	AppName string
	// ConnectTimeout bounds opening a session (default 10 s).
	ConnectTimeout time.Duration
	// TLS, when set, encrypts every session with it (its ServerName and
	// RootCAs verify the server, unless InsecureSkipVerify). Encrypted
	// sessions run on goroutines of their own, not on event loops.
	TLS *tls.Config
	// TLSOptional lets a session stay unencrypted when the server does
	// not offer TLS (a URL's tls=preferred); otherwise that fails with
	// ErrNoTLS.
	TLSOptional bool
}

// Target opens client sessions on one MariaDB or MySQL server.
type Target struct {
	cfg      Config
	addr     string // for messages: host:port or the socket's path
	prepared bool
	setup    string // the SET SESSION statement, or ""
}

var (
	_ engine.Target     = (*Target)(nil)
	_ engine.LoopTarget = (*Target)(nil)
)

// NewTarget checks cfg and returns the target it describes.
func NewTarget(cfg Config) (*Target, error) {
	if cfg.Network == "" {
		cfg.Network = "tcp"
	}
	if cfg.Network != "tcp" && cfg.Network != "unix" {
		return nil, fmt.Errorf("mariadb target: network %q (use tcp or unix)", cfg.Network)
	}
	if cfg.Addr == "" {
		return nil, fmt.Errorf("mariadb target: no server address")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	t := &Target{cfg: cfg, addr: cfg.Addr}
	switch cfg.Mode {
	case "", ModeSimple:
	case ModePrepared:
		t.prepared = true
	default:
		return nil, fmt.Errorf("mariadb target: mode %q (use simple or prepared)", cfg.Mode)
	}
	setup, err := sessionStatement(cfg.Session)
	if err != nil {
		return nil, fmt.Errorf("mariadb target: %w", err)
	}
	t.setup = setup
	return t, nil
}

// Addr names the server for messages: host:port or the socket's path.
func (t *Target) Addr() string { return t.addr }

// sessionStatement builds the SET SESSION of the session variables, in name
// order: numbers and DEFAULT as they are, anything else as a quoted string.
func sessionStatement(vars map[string]string) (string, error) {
	if len(vars) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		if !isVariableName(name) {
			return "", fmt.Errorf("session variable %q: not a variable name", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("SET SESSION ")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteString(" = ")
		v := vars[name]
		if isNumber(v) || strings.EqualFold(v, "DEFAULT") {
			b.WriteString(v)
		} else {
			b.WriteString(quoteString(v))
		}
	}
	return b.String(), nil
}

func isVariableName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isNumber(s string) bool {
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '-' && i == 0:
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// quoteString quotes s as a MySQL string literal.
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

// Connect opens one client's session for a goroutine of its own: its waits
// block in poll(2).
func (t *Target) Connect(ctx context.Context, clientID int) (engine.Conn, error) {
	c, err := t.open(ctx, sockio.Blocking{})
	if err != nil {
		return nil, err
	}
	c.goroutine = true
	return c, nil
}

// ConnectLoop opens a client's session for an event loop.
func (t *Target) ConnectLoop(ctx context.Context, clientID int, p engine.Poller) (engine.Conn, error) {
	if t.cfg.TLS != nil {
		return nil, engine.ErrNoLoop // crypto/tls blocks: the engine gives the client a goroutine
	}
	return t.open(ctx, p)
}

// open dials the server, takes the socket's descriptor for raw,
// non-blocking I/O, and runs the handshake and session setup.
func (t *Target) open(ctx context.Context, p engine.Poller) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, t.cfg.Network, t.cfg.Addr)
	if err != nil {
		return nil, &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to %s: %w", t.addr, err)}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	fd, err := sockio.DupFD(nc.(syscall.Conn))
	var tlsOn net.Conn // the socket crypto/tls will use, if the target wants TLS
	if t.cfg.TLS != nil && err == nil {
		tlsOn = nc
	} else {
		nc.Close() // the duplicate keeps the session open
	}
	if err != nil {
		return nil, &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to %s: %w", t.addr, err)}
	}
	c := &conn{
		t: t, io: sockio.NewConn(fd, p),
		stmts: make(map[*script.SQL]*stmt),
	}
	deadline, _ := ctx.Deadline()
	// The handshake and the session settings wait in poll(2) without a
	// limit: the context's end (ConnectTimeout, or the run stopping on
	// a frozen server) shuts the socket down under them.
	release := shutdownOnDone(ctx, fd)
	err = c.handshake(deadline, tlsOn)
	if err != nil {
		release()
		c.closeTLSless(tlsOn)
		return nil, cutShort(ctx, t.addr, err)
	}
	if tlsOn != nil && c.io.TLS() == nil {
		tlsOn.Close() // tls=preferred, and the server has none
	}
	if t.setup != "" {
		if err := c.simpleQuery(t.setup); err != nil {
			release()
			c.closeFD()
			return nil, cutShort(ctx, t.addr, fmt.Errorf("session settings on %s (%s): %w", t.addr, t.setup, err))
		}
	}
	release()
	if tc := c.io.TLS(); tc != nil {
		_ = tc.SetDeadline(time.Time{}) // only opening the session is bounded
	}
	return c, nil
}

// shutdownOnDone shuts the socket fd down when ctx ends, until release is
// called; release waits for a shutdown under way, so that fd may be
// closed (and its number reused) after it.
func shutdownOnDone(ctx context.Context, fd int) (release func()) {
	var mu sync.Mutex
	released := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !released {
			_ = syscall.Shutdown(fd, syscall.SHUT_RDWR)
		}
	})
	return func() {
		stop()
		mu.Lock()
		released = true
		mu.Unlock()
	}
}

// cutShort says why opening a session failed when its context ended
// under it: the server did not answer in time, or the run stopped.
func cutShort(ctx context.Context, addr string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to %s: %w (%v)", addr, ctx.Err(), err)}
}

// closeTLSless closes a session that failed to open: its descriptor, and
// the socket kept for TLS if TLS never started on it.
func (c *conn) closeTLSless(tlsOn net.Conn) {
	if tlsOn != nil && c.io.TLS() == nil {
		tlsOn.Close()
	}
	c.closeFD()
}
