package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisevent"
	"github.com/firedrill/firedrill/scenario"
)

// setupKeyPrefix names the string keys setup.keys preloads:
// firedrill:key:<n>. A collection's keys are firedrill:<type>:<n>
// (firedrill:list:1, firedrill:zset:3), its type as TYPE names it.
const setupKeyPrefix = redisevent.KeyPrefix + "key:"

// setupClientName is the CLIENT SETNAME of the connection that loads
// setup.keys, as the slow log and CLIENT LIST show it.
const setupClientName = "firedrill-setup"

// Setup's pipelining: a round trip carries up to setupBatch commands or
// about setupBatchBytes of arguments, and a command adds up to
// setupElements elements of a collection (or setupCommandBytes of them),
// so that no one command stalls the server long enough to matter.
const (
	setupBatch        = 1000
	setupBatchBytes   = 4 << 20
	setupElements     = 1000
	setupCommandBytes = 1 << 20
)

// Setup checks that the server answers and preloads setup.keys: Count
// string keys firedrill:key:1 … firedrill:key:<Count> of Size bytes, then
// each collection, in pipelined batches. They are under firedrill's prefix
// on a given server too, and stay after the run (as PostgreSQL's setup
// tables stay in firedrill's schema). Setup ends before the samplers take
// their first reading, which is their baseline: the slow log, the latency
// monitor and the command counts show the load, not the preloading.
func (tg *target) Setup(ctx context.Context) error {
	c, err := tg.dialWork(ctx, setupClientName)
	if err != nil {
		return fmt.Errorf("setup: %w\nIs the server running and accepting connections there? Check --dsn or target.dsn, or remove them to use an embedded server.", err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "PING"); err != nil {
		return fmt.Errorf("setup: PING %s: %w", tg.conn.Where(), err)
	}
	keys := tg.sc.Setup.Keys
	if keys.Count > 0 {
		begin := time.Now()
		tg.logf("setup: %d keys %s1…%d of %d bytes", keys.Count, setupKeyPrefix, keys.Count, keys.Size)
		p := &pipeline{ctx: ctx, send: c.Pipeline, where: fmt.Sprintf("setup.keys at %s:%d:%d", tg.sc.File, keys.Pos.Line, keys.Pos.Col)}
		value := strings.Repeat("x", int(keys.Size))
		for n := 1; n <= keys.Count; n++ {
			if err := p.add("SET", setupKeyPrefix+strconv.Itoa(n), value); err != nil {
				return err
			}
		}
		if err := p.flush(); err != nil {
			return err
		}
		tg.logf("setup: %d keys in %s", keys.Count, time.Since(begin).Round(time.Millisecond))
	}
	for _, coll := range keys.Collections {
		begin := time.Now()
		prefix := collectionKeyPrefix(coll.Type)
		tg.logf("setup: %d %s %s1…%d of %d %s of %d bytes", coll.Count, coll.Type.Key, prefix, coll.Count, coll.Elements, coll.Type.Elements, coll.Size)
		p := &pipeline{ctx: ctx, send: c.Pipeline,
			where: fmt.Sprintf("setup.keys.%s at %s:%d:%d", coll.Type.Key, tg.sc.File, coll.Pos.Line, coll.Pos.Col)}
		for n := 1; n <= coll.Count; n++ {
			if err := loadCollection(p, coll, prefix+strconv.Itoa(n)); err != nil {
				return err
			}
		}
		if err := p.flush(); err != nil {
			return err
		}
		tg.logf("setup: %d %s in %s", coll.Count, coll.Type.Key, time.Since(begin).Round(time.Millisecond))
	}
	return nil
}

// collectionKeyPrefix is what a collection type's preloaded keys start
// with: firedrill:list: for lists, and so on.
func collectionKeyPrefix(t scenario.KeyType) string {
	return redisevent.KeyPrefix + t.Name + ":"
}

// loadCollection queues the commands that make key one of coll's
// collections: UNLINK first (a run on a given server finds the previous
// run's, and RPUSH, SADD or XADD would grow it), then its elements a
// command at a time. Set and sorted-set members are their numbers,
// zero-padded to Size so that they differ; a sorted set's scores are the
// same numbers; hash fields are f<n>; stream entries have one field, v.
func loadCollection(p *pipeline, coll scenario.CollectionKeys, key string) error {
	if err := p.add("UNLINK", key); err != nil {
		return err
	}
	value := strings.Repeat("x", int(coll.Size))
	if coll.Type.Name == "stream" { // XADD adds one entry
		for range coll.Elements {
			if err := p.add("XADD", key, "*", "v", value); err != nil {
				return err
			}
		}
		return nil
	}
	perCommand := int(min(int64(setupElements), max(1, setupCommandBytes/coll.Size)))
	var cmd []string
	for n := 1; n <= coll.Elements; n++ {
		if cmd == nil {
			cmd = make([]string, 0, 2+2*perCommand)
			cmd = append(cmd, collectionCommand(coll.Type), key)
		}
		number := strconv.Itoa(n)
		switch coll.Type.Name {
		case "list":
			cmd = append(cmd, value)
		case "hash":
			cmd = append(cmd, "f"+number, value)
		case "set":
			cmd = append(cmd, padNumber(number, coll.Size))
		case "zset":
			cmd = append(cmd, number, padNumber(number, coll.Size))
		}
		if n%perCommand == 0 || n == coll.Elements {
			if err := p.add(cmd...); err != nil {
				return err
			}
			cmd = nil
		}
	}
	return nil
}

// collectionCommand is the command that adds elements to a collection of
// type t.
func collectionCommand(t scenario.KeyType) string {
	return map[string]string{"list": "RPUSH", "hash": "HSET", "set": "SADD", "zset": "ZADD", "stream": "XADD"}[t.Name]
}

// padNumber left-pads a member's number with zeros to size bytes.
func padNumber(number string, size int64) string {
	if int64(len(number)) >= size {
		return number
	}
	return strings.Repeat("0", int(size)-len(number)) + number
}

// pipeline sends setup's commands in batches and checks every reply.
type pipeline struct {
	ctx   context.Context
	send  func(context.Context, ...[]string) ([]redisconn.Reply, error)
	where string // "setup.keys.lists at file:line:col", for errors
	batch [][]string
	bytes int
}

// add queues a command, sending the batch when it is full.
func (p *pipeline) add(args ...string) error {
	p.batch = append(p.batch, args)
	for _, a := range args {
		p.bytes += len(a)
	}
	if len(p.batch) >= setupBatch || p.bytes >= setupBatchBytes {
		return p.flush()
	}
	return nil
}

// flush sends what is queued.
func (p *pipeline) flush() error {
	if len(p.batch) == 0 {
		return nil
	}
	replies, err := p.send(p.ctx, p.batch...)
	if err != nil {
		return fmt.Errorf("%s: %w", p.where, err)
	}
	for i, r := range replies {
		if r.Err != nil {
			return fmt.Errorf("%s: %s %s: %w", p.where, p.batch[i][0], p.batch[i][1], r.Err)
		}
	}
	p.batch, p.bytes = p.batch[:0], 0
	return nil
}
