package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisevent"
)

// setupKeyPrefix names the keys setup.keys preloads: firedrill:key:<n>.
const setupKeyPrefix = redisevent.KeyPrefix + "key:"

// setupBatch is how many SETs setup sends per round trip.
const setupBatch = 1000

// Setup checks that the server answers and preloads setup.keys: Count
// string keys firedrill:key:1 … firedrill:key:<Count> of Size bytes, in
// pipelined batches. They are under firedrill's prefix on a given server
// too, and stay after the run (as PostgreSQL's setup tables stay in
// firedrill's schema).
func (tg *target) Setup(ctx context.Context) error {
	c, err := tg.dialWork(ctx, "firedrill-setup")
	if err != nil {
		return fmt.Errorf("setup: %w\nIs the server running and accepting connections there? Check --dsn or target.dsn, or remove them to use an embedded server.", err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "PING"); err != nil {
		return fmt.Errorf("setup: PING %s: %w", tg.conn.Where(), err)
	}
	keys := tg.sc.Setup.Keys
	if keys.Count == 0 {
		return nil
	}
	tg.logf("setup: %d keys %s1…%d of %d bytes", keys.Count, setupKeyPrefix, keys.Count, keys.Size)
	value := strings.Repeat("x", int(keys.Size))
	begin := time.Now()
	batch := make([][]string, 0, setupBatch)
	for n := 1; n <= keys.Count; n++ {
		batch = append(batch, []string{"SET", setupKeyPrefix + strconv.Itoa(n), value})
		if len(batch) < setupBatch && n < keys.Count {
			continue
		}
		replies, err := c.Pipeline(ctx, batch...)
		if err != nil {
			return fmt.Errorf("setup.keys at %s:%d:%d: %w", tg.sc.File, keys.Pos.Line, keys.Pos.Col, err)
		}
		for _, r := range replies {
			if r.Err != nil {
				return fmt.Errorf("setup.keys at %s:%d:%d: SET: %w", tg.sc.File, keys.Pos.Line, keys.Pos.Col, r.Err)
			}
		}
		batch = batch[:0]
	}
	tg.logf("setup: %d keys in %s", keys.Count, time.Since(begin).Round(time.Millisecond))
	return nil
}
