package engine

import (
	"sync"
)

// collector gathers what clients measure without making them contend:
// clients record into one of a few mutex-guarded shards, and a tick swaps
// each shard's interval out and merges it (cockroach's workload does the
// same with per-worker histograms).
type collector struct {
	shards     []shard
	scripts    []int // number of commands per script
	perCommand bool
}

type shard struct {
	mu  sync.Mutex
	cur *Interval
	_   [40]byte // keep shards on separate cache lines
}

func newCollector(nShards int, scripts []int, perCommand bool) *collector {
	c := &collector{shards: make([]shard, nShards), scripts: scripts, perCommand: perCommand}
	for i := range c.shards {
		c.shards[i].cur = newInterval(scripts, perCommand)
	}
	return c
}

// shardFor returns the shard a client records into.
func (c *collector) shardFor(clientID int) *shard { return &c.shards[clientID%len(c.shards)] }

// drain moves everything recorded so far into into, leaving the shards empty.
// spare is a scratch interval swapped in for each shard.
func (c *collector) drain(into, spare *Interval) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		full := sh.cur
		sh.cur = spare
		sh.mu.Unlock()
		into.Merge(full)
		full.reset()
		spare = full
	}
}
