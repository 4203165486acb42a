package engine

import (
	"sync"

	"github.com/firedrill/firedrill/timeline"
)

// collector gathers what clients measure without making them contend:
// clients record into one of a few mutex-guarded shards, and a tick swaps
// each shard's interval out and merges it (cockroach's workload does the
// same with per-worker histograms).
type collector struct {
	shards   []shard
	scripts  int
	poolWait bool
}

type shard struct {
	mu  sync.Mutex
	cur *Interval
	_   [64 - 16]byte // keep shards on separate cache lines
}

func newCollector(nShards int, scripts int) *collector {
	c := &collector{shards: make([]shard, nShards), scripts: scripts}
	for i := range c.shards {
		c.shards[i].cur = newInterval(scripts)
	}
	return c
}

// shardFor returns the shard a client records into.
func (c *collector) shardFor(clientID int) *shard { return &c.shards[clientID%len(c.shards)] }

// drain moves everything recorded so far into into, leaving the shards empty.
// spare is a scratch interval swapped in for the first shard; each shard's
// old interval, emptied, becomes the next one's, and the last is returned:
// the caller's spare for the next drain (reusing the one passed in would
// put one interval in two shards).
func (c *collector) drain(into, spare *Interval) *Interval {
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
	return spare
}

// newInterval returns an empty interval shaped like the shards'.
func (c *collector) newInterval() *Interval {
	iv := newInterval(c.scripts)
	if c.poolWait {
		iv.PoolWait = timeline.NewHistogram()
	}
	return iv
}

// withPoolWait makes every interval record pool waits.
func (c *collector) withPoolWait() {
	c.poolWait = true
	for i := range c.shards {
		c.shards[i].cur.PoolWait = timeline.NewHistogram()
	}
}
