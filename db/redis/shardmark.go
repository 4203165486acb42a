package redis

import (
	"context"
	"fmt"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/redis/redisevent"
)

var _ backend.SetupMarker = (*target)(nil)

// shardMarkPrefix names the keys by which shard 0 tells the other shards
// of a split run that its setup is done: firedrill:shard-setup:<run>.
// They expire after a day.
const shardMarkPrefix = redisevent.KeyPrefix + "shard-setup:"

// MarkSetupDone records that the setup of the split run key is done.
func (tg *target) MarkSetupDone(ctx context.Context, key string) error {
	c, err := tg.dial(ctx, "firedrill-setup")
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Do(ctx, "SET", shardMarkPrefix+key, "1", "EX", "86400"); err != nil {
		return fmt.Errorf("SET %s: %w", shardMarkPrefix+key, err)
	}
	return nil
}

// SetupDone says whether shard 0 has marked the setup of the split run key
// done.
func (tg *target) SetupDone(ctx context.Context, key string) (bool, error) {
	c, err := tg.dial(ctx, "firedrill-setup")
	if err != nil {
		return false, err
	}
	defer c.Close()
	r, err := c.Do(ctx, "EXISTS", shardMarkPrefix+key)
	if err != nil {
		return false, fmt.Errorf("EXISTS %s: %w", shardMarkPrefix+key, err)
	}
	return r.Int == 1, nil
}
