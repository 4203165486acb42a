package postgres_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
)

// With as many event loops as Ps and more (-j 2 and -j 5 on this
// machine's cores), every transaction is counted once, in the totals, the
// histograms and the per-command statistics, although each loop records
// into a shard of its own; and the GOMAXPROCS the run raised to leave a P
// beside its loops is back when it ends.
func TestEveryLoopCountsItsTransactions(t *testing.T) {
	const clients, perClient = 8, 40
	procs := runtime.GOMAXPROCS(0)
	threads := []int{2, procs, procs + 3}
	slices.Sort(threads)
	for _, threads := range slices.Compact(threads) {
		t.Run(fmt.Sprintf("j%d", threads), func(t *testing.T) {
			for _, mode := range []pgtarget.QueryMode{pgtarget.Simple, pgtarget.Prepared} {
				cfg := newConfig(t, "select-only", "builtin:select-only")
				cfg.Clients, cfg.Transactions, cfg.Threads, cfg.PerCommand = clients, perClient, threads, true
				res := runOK(t, mode, cfg)
				const want = clients * perClient
				tot := res.Totals
				if tot.Total.Count != want || tot.Hist.Count() != want || tot.Scripts[0].Hist.Count() != want {
					t.Errorf("%v: Count = %d, histogram %d, script histogram %d; want %d",
						mode, tot.Total.Count, tot.Hist.Count(), tot.Scripts[0].Hist.Count(), want)
				}
				for i, c := range tot.Scripts[0].Commands {
					if c.Count != want {
						t.Errorf("%v: command %d counted %d times, want %d", mode, i, c.Count, want)
					}
				}
				if got := runtime.GOMAXPROCS(0); got != procs {
					t.Errorf("%v: GOMAXPROCS %d after the run, want %d as before", mode, got, procs)
				}
			}
		})
	}
}
