package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/firedrill/firedrill/backend"
	redissampler "github.com/firedrill/firedrill/db/redis/sampler"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
)

var _ backend.Sampled = (*target)(nil)

// Samplers connects Redis's samplers (INFO, the latency monitor, the slow
// log, commandstats; once a second, on one connection named
// firedrill-sampler) and the host's, which read the data directory's disk
// when the server is embedded.
func (tg *target) Samplers(ctx context.Context, timeout time.Duration) (*backend.Sampling, error) {
	set, err := redissampler.New(ctx, tg.conn, redissampler.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("samplers: %w", err)
	}
	dataDir := ""
	if tg.inst != nil {
		dataDir = tg.inst.DataDir()
	}
	return &backend.Sampling{
		Sources:    sampler.Schedule(set.Samplers(), host.New(dataDir)),
		Close:      set.Close,
		Unanswered: redissampler.Unanswered,
	}, nil
}
