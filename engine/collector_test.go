package engine

import "testing"

// Draining on every tick must keep one interval per shard: a spare handed
// back in twice would end up in two shards at once, whose clients would
// then write it under different locks and lose counts.
func TestDrainKeepsShardsDistinct(t *testing.T) {
	t.Parallel()
	c := newCollector(4, 1)
	into, spare := c.newInterval(), c.newInterval()
	for tick := 1; tick <= 5; tick++ {
		for i := range c.shards {
			c.shards[i].cur.Total.Count++
		}
		spare = c.drain(into, spare)
		seen := map[*Interval]bool{spare: true}
		for i := range c.shards {
			if seen[c.shards[i].cur] {
				t.Fatalf("tick %d: shard %d shares its interval with another shard or the spare", tick, i)
			}
			seen[c.shards[i].cur] = true
		}
		if into.Total.Count != int64(4*tick) {
			t.Fatalf("tick %d: drained %d transactions, want %d", tick, into.Total.Count, 4*tick)
		}
	}
}

// Each event loop records into a shard of its own: two loops sharing one
// would bounce its lock and interval between their cores on every
// transaction. Without loops (a session that cannot run on one), clients
// go back to spreading over every shard.
func TestLoopsHaveTheirOwnShards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ clients, threads int }{
		{8, 1}, {8, 2}, {8, 3}, {8, 8}, {8, 16}, // more threads than clients: one loop per client
		{1000, 64}, // more loops than 2×GOMAXPROCS
	} {
		cfg := &Config{Clients: tc.clients, Threads: tc.threads}
		r := &run{cfg: cfg, col: newCollector(shardCount(cfg), 1)}
		clients := make([]*client, tc.clients)
		for i := range clients {
			clients[i] = &client{id: i, r: r, shard: r.col.shardFor(i)}
		}
		if err := r.makeLoops(clients); err != nil {
			t.Fatal(err)
		}
		owner := map[*shard]*eventLoop{}
		for _, l := range r.loops {
			for _, c := range l.clients {
				if o, ok := owner[c.shard]; ok && o != l {
					t.Errorf("%d clients, -j %d: client %d shares its shard with another loop's clients", tc.clients, tc.threads, c.id)
				}
				owner[c.shard] = l
			}
		}
		r.closeLoops()
		for _, c := range clients {
			if c.shard != r.col.shardFor(c.id) {
				t.Errorf("%d clients, -j %d: client %d kept its loop's shard without a loop", tc.clients, tc.threads, c.id)
			}
		}
	}
}
