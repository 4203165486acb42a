package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firedrill/firedrill/script"
)

// loopCounter is a fake LoopTarget whose commands do nothing but count,
// per client, so that its clients run on an event loop.
type loopCounter struct{ execs [2]atomic.Int64 }

type loopCounterConn struct {
	t  *loopCounter
	id int
}

var _ LoopTarget = (*loopCounter)(nil)

func (t *loopCounter) Connect(_ context.Context, id int) (Conn, error) {
	return &loopCounterConn{t, id}, nil
}

func (t *loopCounter) ConnectLoop(_ context.Context, id int, _ Poller) (Conn, error) {
	return &loopCounterConn{t, id}, nil
}

func (c *loopCounterConn) Exec(context.Context, *script.Command, *script.Vars) error {
	c.t.execs[c.id%2].Add(1)
	return nil
}
func (*loopCounterConn) Reset(context.Context) error { return nil }
func (*loopCounterConn) Interrupt(bool)              {}
func (*loopCounterConn) Close() error                { return nil }

// A sleeper due soon is woken on time while another client of the same
// loop sleeps far longer: the loop's earliest due time follows the
// earliest sleeper, not the first or the last one to sleep. Client 0
// sleeps 10 s (the run's end wakes it); client 1 sleeps 20 ms per
// transaction and must get through most of its ≈ 25 in half a second.
func TestLoopWakesTheEarliestSleeper(t *testing.T) {
	t.Parallel()
	syms := script.NewSymbols()
	sc, err := script.Parse("sleepers", []byte("\\if :client_id = 0\n\\sleep 10 s\n\\else\n\\sleep 20 ms\n\\endif\nSELECT 1;\n"), syms)
	if err != nil {
		t.Fatal(err)
	}
	target := &loopCounter{}
	_, err = Run(context.Background(), target, Config{Scripts: []*script.Script{sc}, Symbols: syms, Clients: 2, Threads: 1,
		Duration: 500 * time.Millisecond, MaxTries: 1})
	if err != nil {
		t.Fatal(err)
	}
	// 20 ms sleeps in 500 ms: 25 at most; a loop that woke client 1 only
	// at client 0's time would show none.
	if n := target.execs[1].Load(); n < 10 {
		t.Fatalf("client 1 ran %d transactions of 20 ms sleeps in 500 ms, want at least 10", n)
	}
	if n := target.execs[0].Load(); n > 1 {
		t.Fatalf("client 0 ran %d transactions, want at most 1 (it sleeps 10 s)", n)
	}
}
