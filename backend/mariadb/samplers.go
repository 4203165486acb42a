package mariadb

import (
	"context"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

var _ backend.Sampled = (*target)(nil)

// Samplers are the host's (CPU, memory, the data directory's disk, and
// firedrill itself), read every tick. MariaDB's own (processlist, InnoDB
// locks and status, global status) come with sampler/mariadb.
func (tg *target) Samplers(ctx context.Context, timeout time.Duration) (*backend.Sampling, error) {
	dataDir := ""
	if tg.inst != nil {
		dataDir = tg.inst.DataDir()
	}
	s := &backend.Sampling{Close: func() error { return nil }}
	for _, smp := range host.New(dataDir) {
		everyTick := smp.Name() == hostmetric.Host || smp.Name() == hostmetric.Self
		s.Sources = append(s.Sources, backend.Source{Sampler: smp, EveryTick: everyTick})
	}
	return s, nil
}
