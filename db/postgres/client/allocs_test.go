package postgres_test

import (
	"runtime"
	"testing"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
)

// A transaction on an event loop allocates nothing: the loop, the
// session's socket layer and the wire decoding reuse their buffers. A run
// has fixed costs (sessions, histograms, the result), so what is counted
// is the difference between a long run and a short one, per transaction
// more: a hot path that allocated once per transaction would show 1, an
// allocation per command 2 or more.
func TestLoopTransactionsDoNotAllocate(t *testing.T) {
	for _, mode := range []pgtarget.QueryMode{pgtarget.Simple, pgtarget.Prepared} {
		t.Run(mode.String(), func(t *testing.T) {
			mallocs := func(perClient int) uint64 {
				cfg := newConfig(t, "select-only", "builtin:select-only")
				cfg.Clients, cfg.Threads, cfg.Transactions = 4, 2, perClient
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				runOK(t, mode, cfg)
				runtime.ReadMemStats(&after)
				return after.Mallocs - before.Mallocs
			}
			const short, long = 500, 5500
			mallocs(short) // warm up: lazily built tables, the server's caches
			s, l := mallocs(short), mallocs(long)
			perTx := (float64(l) - float64(s)) / float64(4*(long-short))
			t.Logf("%d allocations for %d transactions, %d for %d: %.4f per transaction more", s, 4*short, l, 4*long, perTx)
			if perTx > 0.05 {
				t.Errorf("%.3f allocations per transaction on the loop, want 0", perTx)
			}
		})
	}
}
