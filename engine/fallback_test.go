package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firedrill/firedrill/script"
)

// scriptedTarget is a fake engine.Target whose sessions fail or stall as
// told, and count what they ran.
type scriptedTarget struct {
	fail  func(n int64) bool // whether the n-th command (from 1) fails
	delay time.Duration
	execs atomic.Int64
	conns atomic.Int64
	// seen is the value of the variable id at the last command, with
	// watch.
	watch bool
	id    script.VarRef
	seen  atomic.Int64
}

type scriptedConn struct{ t *scriptedTarget }

func (t *scriptedTarget) Connect(context.Context, int) (Conn, error) {
	t.conns.Add(1)
	return scriptedConn{t}, nil
}

func (c scriptedConn) Exec(_ context.Context, _ *script.Command, vars *script.Vars) error {
	n := c.t.execs.Add(1)
	if c.t.watch {
		if v, err := vars.Value(c.t.id); err == nil {
			c.t.seen.Store(v.Int)
		}
	}
	if c.t.delay > 0 {
		time.Sleep(c.t.delay)
	}
	if c.t.fail != nil && c.t.fail(n) {
		return &DBError{Code: "XX000", Err: errors.New("the cache missed")}
	}
	return nil
}
func (scriptedConn) Reset(context.Context) error { return nil }
func (scriptedConn) Interrupt(bool)              {}
func (scriptedConn) Close() error                { return nil }

var _ Target = (*scriptedTarget)(nil)

// A client falls back after a failed transaction, and after a slow one
// when After is set, on a session of its own on the fallback's target,
// with the variables the first script set; the intervals count it.
func TestFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		primary       *scriptedTarget
		after         time.Duration
		want, wantMin int64 // fallbacks of 20 transactions
	}{
		// Every other transaction fails: those fall back.
		{name: "failures", primary: &scriptedTarget{fail: func(n int64) bool { return n%2 == 0 }}, want: 10},
		// Each takes at least 3 ms, above After: every one falls back.
		{name: "slow", primary: &scriptedTarget{delay: 3 * time.Millisecond}, after: time.Millisecond, want: 20},
		// Fast and successful: none falls back.
		{name: "fast", primary: &scriptedTarget{}, after: time.Hour, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			syms := script.NewSymbols()
			first, err := script.Parse("cache", []byte("\\set id random(1, 1000)\nGET k\n"), syms)
			if err != nil {
				t.Fatal(err)
			}
			fallback, err := script.Parse("db", []byte("SELECT v FROM t WHERE id = :id;\n"), syms)
			if err != nil {
				t.Fatal(err)
			}
			first.Weight = 1
			id, _ := syms.Lookup("id")
			db := &scriptedTarget{watch: true, id: id}
			res, err := Run(context.Background(), tc.primary, Config{
				Scripts: []*script.Script{first}, Symbols: syms, Clients: 2, Transactions: 10, MaxTries: 1,
				ContinueOnError: true, Goroutines: true,
				Fallback: &Fallback{Target: db, Scripts: []*script.Script{fallback}, After: tc.after},
			})
			if err != nil {
				t.Fatal(err)
			}
			tot := res.Totals
			if tot.Fallbacks != tc.want || tot.FallbackFailed != 0 || db.execs.Load() != tc.want {
				t.Fatalf("fallbacks %d (failed %d), %d commands on the fallback target; want %d",
					tot.Fallbacks, tot.FallbackFailed, db.execs.Load(), tc.want)
			}
			if tc.want > 0 && (db.conns.Load() != 2 || db.seen.Load() < 1 || db.seen.Load() > 1000) {
				t.Fatalf("fallback target: %d sessions (want one per client), id seen %d", db.conns.Load(), db.seen.Load())
			}
		})
	}
}

// A fallback that fails too is counted as failed, and its error kept.
func TestFallbackFails(t *testing.T) {
	t.Parallel()
	syms := script.NewSymbols()
	first, _ := script.Parse("cache", []byte("GET k\n"), syms)
	fallback, _ := script.Parse("db", []byte("SELECT 1;\n"), syms)
	first.Weight = 1
	always := func(int64) bool { return true }
	res, err := Run(context.Background(), &scriptedTarget{fail: always}, Config{
		Scripts: []*script.Script{first}, Symbols: syms, Clients: 1, Transactions: 5, MaxTries: 1, ContinueOnError: true,
		Fallback: &Fallback{Target: &scriptedTarget{fail: always}, Scripts: []*script.Script{fallback}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Fallbacks != 5 || res.Totals.FallbackFailed != 5 || res.FallbackError == nil {
		t.Fatalf("fallbacks %d, failed %d, error %v; want 5, 5 and the error", res.Totals.Fallbacks, res.Totals.FallbackFailed, res.FallbackError)
	}
}
