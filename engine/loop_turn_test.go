package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// turnTarget is a fake LoopTarget whose sessions log when a command is
// built and when it would be sent, after waiting for the loop's turn end
// (sockio.TurnWaiter) as db/http/client's requests do.
type turnTarget struct {
	mu  sync.Mutex
	log []string
}

type turnConn struct {
	t  *turnTarget
	id int
	p  Poller
}

var _ LoopTarget = (*turnTarget)(nil)

func (t *turnTarget) Connect(ctx context.Context, id int) (Conn, error) {
	return &turnConn{t: t, id: id, p: sockio.Blocking{}}, nil
}

func (t *turnTarget) ConnectLoop(_ context.Context, id int, p Poller) (Conn, error) {
	return &turnConn{t: t, id: id, p: p}, nil
}

func (t *turnTarget) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.log = append(t.log, s)
}

func (c *turnConn) Exec(context.Context, *script.Command, *script.Vars) error {
	c.t.add(fmt.Sprint("build ", c.id))
	if tw, ok := c.p.(sockio.TurnWaiter); ok {
		if err := tw.WaitTurnEnd(); err != nil {
			return err
		}
	}
	c.t.add(fmt.Sprint("send ", c.id))
	return nil
}
func (*turnConn) Reset(context.Context) error { return nil }
func (*turnConn) Interrupt(bool)              {}
func (*turnConn) Close() error                { return nil }

// On an event loop a session that waits for the turn's end sends after
// every other client the loop resumed in that turn has built its
// command: the loop starts its clients in one turn, so all four build
// before any sends, and the sends keep the clients' order.
func TestLoopTurnEnd(t *testing.T) {
	t.Parallel()
	syms := script.NewSymbols()
	sc, err := script.Parse("turn", []byte("SELECT 1;\n"), syms)
	if err != nil {
		t.Fatal(err)
	}
	target := &turnTarget{}
	res, err := Run(context.Background(), target, Config{Scripts: []*script.Script{sc}, Symbols: syms, Clients: 4, Threads: 1, Transactions: 1, MaxTries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Total.Count != 4 {
		t.Fatalf("%d transactions, want 4", res.Totals.Total.Count)
	}
	firstSend := slices.IndexFunc(target.log, func(s string) bool { return strings.HasPrefix(s, "send") })
	want := []string{"build 0", "build 1", "build 2", "build 3", "send 0", "send 1", "send 2", "send 3"}
	if firstSend != 4 || !slices.Equal(target.log, want) {
		t.Fatalf("log %q, want %q", target.log, want)
	}
}
