package service

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// A request through a service of ample threads and no limits allocates
// nothing on the engine's event loops, as a transaction without one does
// not: the allocations of two runs that differ only in their number of
// transactions, divided by that difference.
func TestServeOnLoopsAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop requests: counted without it (make test-memory)")
	}
	cfg := scenario.Service{Name: "api", Instances: 1, MaxThreads: 200, AcceptCount: 100,
		Pool: scenario.ServicePool{Size: 4, ConnectionTimeout: time.Minute}}
	const clients = 4
	mallocs := func(perClient int) uint64 {
		syms := script.NewSymbols()
		sc, err := script.Parse("tx", []byte("\\set x random(1, 1000)\n"), syms)
		if err != nil {
			t.Fatal(err)
		}
		svc := New(cfg)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := engine.Run(context.Background(), noDB{}, engine.Config{
			Scripts: []*script.Script{sc}, Symbols: syms, Clients: clients, Transactions: perClient,
			MaxTries: 1, Scale: 1, Gate: svc.Gate("db"), Pool: svc.Connections(), PoolTimeout: time.Hour, RandomSeed: 1,
		})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Totals.Total.Count; got != int64(clients*perClient) {
			t.Fatalf("%d transactions, want %d", got, clients*perClient)
		}
		if svc.c.left.Load() != int64(clients*perClient) {
			t.Fatalf("%d requests through the service, want %d", svc.c.left.Load(), clients*perClient)
		}
		return after.Mallocs - before.Mallocs
	}
	const few, many = 1_000, 21_000
	small, large := mallocs(few), mallocs(many)
	perTx := (float64(large) - float64(small)) / float64(clients*(many-few))
	t.Logf("%d allocations for %d transactions, %d for %d: %.4f per transaction", small, clients*few, large, clients*many, perTx)
	if perTx > 0.01 {
		t.Errorf("%.3f allocations per request through the service, want 0", perTx)
	}
}
