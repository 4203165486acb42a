// Package redis samples a Redis server's insides on one shared connection:
// one file per source (INFO, the latency monitor, the slow log, INFO
// commandstats), each with a doc comment that lists every value key it
// emits. Their names and keys are spelled in db/redis/redismetric.
//
// The connection is named with CLIENT SETNAME (Options.Name), so that
// CLIENT LIST, CLIENT KILL and the slow log can tell it from the
// workloads'; its own commands (INFO, LATENCY, SLOWLOG) are left out of
// commandstats.
package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/sampler"
)

// DefaultName is the samplers' connection name (CLIENT SETNAME).
const DefaultName = "firedrill-sampler"

// reconnectPause is how long after a failed connection attempt commands
// fail at once instead of trying again: while the server is down, a tick
// costs one attempt, not one per sampler.
const reconnectPause = time.Second

// Options configure the samplers' connection.
type Options struct {
	// Timeout bounds each command (and each connection attempt); 0 = 2 s.
	Timeout time.Duration
	// Name is the connection's CLIENT SETNAME; "" = DefaultName.
	Name string
}

// Set is the samplers of one Redis server, sharing one connection. Its
// samplers are meant to be run one after another (as a tick does); a
// mutex keeps concurrent use safe but serial.
type Set struct {
	session  *session
	samplers []sampler.Sampler
}

// New connects to the server at cfg (its password is sent with AUTH,
// never shown) and returns its samplers.
func New(ctx context.Context, cfg redisconn.Config, opts Options) (*Set, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	cfg.Name = opts.Name
	s := &session{config: cfg, timeout: opts.Timeout}
	if _, err := s.do(ctx, "PING"); err != nil {
		s.close()
		return nil, fmt.Errorf("Redis samplers: %w", err)
	}
	return &Set{session: s, samplers: []sampler.Sampler{
		&info{session: s},
		&latency{session: s},
		&slowlog{session: s},
		&commandStats{session: s},
	}}, nil
}

// Samplers are the set's samplers, in the order a tick runs them.
func (set *Set) Samplers() []sampler.Sampler { return set.samplers }

// Close ends the connection.
func (set *Set) Close() error { return set.session.close() }

// Unanswered says whether a sampler's error is the server not answering
// in time, rather than an answer (the frozen-server watch).
func Unanswered(err error) bool {
	var redisErr *redisconn.Error
	if errors.As(err, &redisErr) {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || isTimeout(err)
}

// isTimeout reports a network timeout (the deadline the command set).
func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}

// session is the connection the samplers share, opened again after it
// broke (a server restart).
type session struct {
	config  redisconn.Config
	timeout time.Duration

	mu       sync.Mutex
	conn     *redisconn.Conn
	failedAt time.Time // last failed connection attempt, or command the server left unanswered
	failed   error     // why, for the commands refused until reconnectPause is over
}

// do runs one command within the timeout. An error of the connection
// closes it; the next command reconnects.
func (s *session) do(ctx context.Context, args ...string) (redisconn.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.conn == nil {
		if time.Since(s.failedAt) < reconnectPause {
			// Wrapping the failure keeps its judgement: a server
			// that does not answer stays Unanswered for the whole
			// stall, not only at the reads that tried.
			return redisconn.Reply{}, fmt.Errorf("redis at %s: not connected (the last attempt failed under %s ago): %w", s.config.Where(), reconnectPause, s.failed)
		}
		conn, err := redisconn.Dial(ctx, s.config)
		if err != nil {
			s.failedAt, s.failed = time.Now(), err
			return redisconn.Reply{}, err
		}
		s.conn = conn
	}
	reply, err := s.conn.Do(ctx, args...)
	var redisErr *redisconn.Error
	if err != nil && !errors.As(err, &redisErr) {
		_ = s.conn.Close()
		s.conn = nil
		if Unanswered(err) {
			// A frozen server: the other samplers of this tick need
			// not each wait their timeout on a new connection.
			s.failedAt, s.failed = time.Now(), err
		}
	}
	if err != nil {
		return reply, fmt.Errorf("%s: %w", args[0], err)
	}
	return reply, nil
}

func (s *session) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}
