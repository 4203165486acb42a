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
