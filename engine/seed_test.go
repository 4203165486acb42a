package engine

import (
	"testing"

	"github.com/firedrill/firedrill/script"
)

// TestThreadChooserPicksAsPgbench: a thread's chooser draws
// getrand(0, total-1) from its pg_prng, without allocating.
func TestThreadChooserPicksAsPgbench(t *testing.T) {
	var c threadChooser
	c.rng.Seed(7)
	ref := script.NewRand(7)
	for range 1000 {
		if got, want := c.pick(13), int(ref.Uniform(0, 12)); got != want {
			t.Fatalf("pick = %d, pg_prng gives %d", got, want)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { c.pick(13) }); n != 0 {
		t.Errorf("pick allocates %v times", n)
	}
}

// TestLoopsArePgbenchThreads: the event loops get pgbench's blocks of
// clients, so that a loop's clients are one pgbench thread's and share its
// script chooser and --rate pacer.
func TestLoopsArePgbenchThreads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ clients, threads int }{{5, 2}, {7, 3}, {8, 3}, {3, 8}, {10, 4}} {
		cfg := &Config{Clients: tc.clients, Threads: tc.threads, RandomSeed: 1}
		r := &run{cfg: cfg, col: newCollector(shardCount(cfg), 1)}
		r.initSeeds()
		clients := make([]*client, tc.clients)
		for i := range clients {
			clients[i] = &client{id: i, r: r, shard: r.col.shardFor(i)}
			clients[i].choose = r.choosers[script.ThreadOf(i, tc.clients, tc.threads)]
		}
		if err := r.makeLoops(clients); err != nil {
			t.Fatal(err)
		}
		for li, l := range r.loops {
			for _, c := range l.clients {
				if th := script.ThreadOf(c.id, tc.clients, tc.threads); th != li || c.choose != r.choosers[li] {
					t.Errorf("-c %d -j %d: client %d on loop %d, pgbench thread %d", tc.clients, tc.threads, c.id, li, th)
				}
			}
		}
		r.closeLoops()
	}
}
