package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// connPool is an application-style connection pool: a fixed number of
// slots, each holding a connection or, after one broke, nothing until the
// next borrower reconnects it. Waiting for a slot is what HikariCP's
// connectionTimeout bounds.
type connPool struct {
	target Target
	// loop, set when the clients run on event loops (with a Gate), opens
	// the sessions on them, each with a slotPoller.
	loop  LoopTarget
	gens  atomic.Uint64
	slots chan *poolSlot
	all   []*poolSlot
	mu    sync.Mutex // guards the conn fields of all, for close
}

type poolSlot struct {
	conn Conn
	// connFails counts the failed attempts in a row to open its
	// connection, for the backoff (under the borrower's ownership).
	connFails int
	// On event loops: where the session's waits go, and which session
	// it is (a new number for each connection opened).
	poller slotPoller
	gen    uint64
}

func newConnPool(size int, target Target) *connPool {
	p := &connPool{target: target, slots: make(chan *poolSlot, size)}
	for range size {
		s := &poolSlot{}
		p.all = append(p.all, s)
		p.slots <- s
	}
	return p
}

// fill opens every slot's connection, as a pool with minimum-idle equal to
// its size does (HikariCP's recommended setting). A slot whose connection
// retryLater says to leave is connected by its first borrower.
func (p *connPool) fill(ctx context.Context, retryLater func(error) bool) error {
	for i, s := range p.all {
		c, err := p.connect(ctx, s, -1-i)
		if err != nil && retryLater(err) {
			continue
		}
		if err != nil {
			p.close()
			return err
		}
		p.setConn(s, c)
	}
	return nil
}

// connect opens a session for slot s.
func (p *connPool) connect(ctx context.Context, s *poolSlot, id int) (Conn, error) {
	if p.loop != nil {
		return p.loop.ConnectLoop(ctx, id, &s.poller)
	}
	return p.target.Connect(ctx, id)
}

// errPoolTimeout is the failure of a borrower that waited too long.
var errPoolTimeout = errors.New("connection is not available, request timed out")

// acquire waits for a slot at most timeout; the slot's conn may be nil
// (the borrower connects it).
func (p *connPool) acquire(ctx context.Context, timeout time.Duration, timer **time.Timer) (*poolSlot, error) {
	select {
	case s := <-p.slots:
		return s, nil
	default:
	}
	if *timer == nil {
		*timer = time.NewTimer(timeout)
	} else {
		(*timer).Reset(timeout)
	}
	select {
	case s := <-p.slots:
		(*timer).Stop()
		return s, nil
	case <-(*timer).C:
		return nil, errPoolTimeout
	case <-ctx.Done():
		(*timer).Stop()
		return nil, ctx.Err()
	}
}

// release gives a slot back; broken closes its connection first.
func (p *connPool) release(s *poolSlot, broken bool) {
	if broken && s.conn != nil {
		p.mu.Lock()
		c := s.conn
		s.conn = nil
		p.mu.Unlock()
		_ = c.Close()
	}
	s.poller.cur = nil
	p.slots <- s
}

// setConn records a connection a borrower opened for its slot.
func (p *connPool) setConn(s *poolSlot, c Conn) {
	p.mu.Lock()
	s.conn, s.gen = c, p.gens.Add(1)
	p.mu.Unlock()
}

// close closes every connection (the run is over: no borrower is left).
func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.all {
		if s.conn != nil {
			_ = s.conn.Close()
			s.conn = nil
		}
	}
}
