// Package httptarget runs the requests of HTTP scripts (the dialect of
// db/http/httpdialect) against an HTTP service: HTTP/1.1 with keep-alive
// on the raw socket, one request at a time per connection (no
// pipelining), read with non-blocking system calls so that clients run
// on the engine's event loops without allocating per request. HTTPS goes
// through crypto/tls on a goroutine per client, as the other kinds' TLS
// sessions do. Redirects are not followed: a 3xx is an answer.
package httptarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// Header is a header sent with every request of a target.
type Header struct{ Name, Value string }

// Config says how to reach a service and what every request carries.
type Config struct {
	// URL is the service's base: http or https, host[:port], and a path
	// prefix the scripts' paths are joined to.
	URL string
	// Headers are sent with every request (the target's headers:).
	Headers []Header
	// Timeout bounds each request, from sending it to its reply's last
	// byte (default 30 s).
	Timeout time.Duration
	// ConnectTimeout bounds opening a connection, TLS included (default
	// 10 s).
	ConnectTimeout time.Duration
	// TLS configures https (nil: the system's roots, the URL's host as
	// the server name).
	TLS *tls.Config
	// AppName goes into the User-Agent, so that the service's logs tell
	// the workloads apart.
	AppName string
	// Stats, when set, are the counters the target adds to (shared by
	// the workloads of one service); nil makes the target its own.
	Stats *Stats
}

// DefaultTimeout is a request's limit when Config.Timeout is not set.
const DefaultTimeout = 30 * time.Second

// Target opens connections to one HTTP service.
type Target struct {
	cfg    Config
	addr   string // host:port, for dialing and messages
	prefix string // the URL's path, without a trailing '/'
	tls    *tls.Config
	// fixed is the header lines every request carries (Host, User-Agent,
	// the target's headers).
	fixed []byte
	stats *Stats
	// epoch is when the target was made: requests are timed as monotonic
	// offsets from it, one clock read at each end (time.Now reads the
	// wall clock too).
	epoch time.Time
}

var (
	_ engine.Target     = (*Target)(nil)
	_ engine.LoopTarget = (*Target)(nil)
)

// NewTarget checks cfg.
func NewTarget(cfg Config) (*Target, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("http target: url: %w", err)
	}
	// shown is the URL as errors show it: no password, no query (where
	// tokens go).
	shown := *u
	shown.RawQuery, shown.Fragment, shown.User = "", "", nil
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http target: url %s: the scheme must be http or https", shown.String())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http target: url %s: no host", shown.String())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("http target: url %s: a base URL has no query or fragment (put them in the script's request lines)", shown.String())
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	t := &Target{cfg: cfg, addr: net.JoinHostPort(u.Hostname(), port), prefix: strings.TrimRight(u.EscapedPath(), "/"), stats: cfg.Stats, epoch: time.Now()}
	if t.stats == nil {
		t.stats = &Stats{}
	}
	if u.Scheme == "https" {
		t.tls = cfg.TLS
		if t.tls == nil {
			t.tls = &tls.Config{}
		}
		if t.tls.ServerName == "" {
			t.tls = t.tls.Clone()
			t.tls.ServerName = u.Hostname()
		}
	}
	t.fixed = append(t.fixed, "Host: "+u.Host+"\r\n"...)
	agent := "firedrill"
	if cfg.AppName != "" {
		agent += " (" + strings.Map(func(r rune) rune {
			if r < ' ' || r > '~' || r == '(' || r == ')' {
				return '-'
			}
			return r
		}, cfg.AppName) + ")"
	}
	t.fixed = append(t.fixed, "User-Agent: "+agent+"\r\n"...)
	for _, h := range cfg.Headers {
		if !validHeader(h.Name, h.Value) {
			return nil, fmt.Errorf("http target: header %q: a name of letters, digits and -, and a value on one line", h.Name)
		}
		t.fixed = append(t.fixed, h.Name+": "+h.Value+"\r\n"...)
	}
	return t, nil
}

func validHeader(name, value string) bool {
	if name == "" || strings.ContainsAny(value, "\r\n\x00") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// Addr names the service in messages: host:port.
func (t *Target) Addr() string { return t.addr }

// Stats are the target's request counters, which its sampler reads.
func (t *Target) Stats() *Stats { return t.stats }

// Prepare registers the endpoints of scripts' requests in the target's
// statistics (Request.ID); it is called before the run, for every
// workload that loads the target.
func (t *Target) Prepare(scripts []*script.Script) {
	for _, s := range scripts {
		for _, cmd := range s.Commands {
			if req, ok := cmd.Custom.(*httpdialect.Request); ok {
				req.ID = t.stats.register(req.Endpoint)
			}
		}
	}
}

// Connect opens a client's connection that waits in poll(2) (a goroutine
// per client: runs with shared connections, and https).
func (t *Target) Connect(ctx context.Context, _ int) (engine.Conn, error) {
	c := &conn{t: t, base: sockio.Blocking{}}
	if err := c.dial(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// ConnectLoop opens a client's connection whose waits go through p; the
// dial runs off the event loop (sockio.OpenParked). An https target
// cannot run on a loop.
func (t *Target) ConnectLoop(ctx context.Context, _ int, p engine.Poller) (engine.Conn, error) {
	if t.tls != nil {
		return nil, engine.ErrNoLoop
	}
	c := &conn{t: t, base: p, loop: true}
	if err := c.dial(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// socket is a dialed connection: a raw descriptor, or a TLS session.
type socket struct {
	fd  int
	tls *tls.Conn
}

// open dials the service within the connect timeout.
func (t *Target) open(ctx context.Context) (socket, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return socket{fd: -1}, t.connectError(err)
	}
	if t.tls != nil {
		tc := tls.Client(nc, t.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return socket{fd: -1}, t.connectError(explainTLS(err))
		}
		return socket{fd: -1, tls: tc}, nil
	}
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return socket{fd: -1}, t.connectError(fmt.Errorf("%T has no socket", nc))
	}
	fd, err := sockio.DupFD(sc)
	if err != nil {
		return socket{fd: -1}, t.connectError(err)
	}
	return socket{fd: fd}, nil
}

// connectError is a failed connect, with what to do about it.
func (t *Target) connectError(err error) error {
	hint := ""
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		hint = " (is the service running and listening there? check the target's url or --dsn)"
	case errors.Is(err, context.DeadlineExceeded):
		hint = fmt.Sprintf(" (no answer within %v: is the host reachable?)", t.cfg.ConnectTimeout)
	}
	return &engine.DBError{Code: engine.CodeConnect, Fault: engine.Unavailable,
		Err: fmt.Errorf("connect to http service at %s: %w%s", t.addr, err, hint)}
}

// explainTLS says what to do about a failed TLS handshake.
func explainTLS(err error) error {
	var unknown interface{ Unwrap() error }
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec):
		return fmt.Errorf("TLS handshake: %w (the service does not speak TLS there: use http:// rather than https://)", err)
	case strings.Contains(err.Error(), "certificate"):
		return fmt.Errorf("TLS handshake: %w (firedrill trusts the system's certificate authorities: add the service's CA to them, or point SSL_CERT_FILE at it)", err)
	case errors.As(err, &unknown):
	}
	return fmt.Errorf("TLS handshake: %w", err)
}
