package mariadb

import (
	"context"
	"fmt"
	"time"

	"github.com/firedrill/firedrill/backend"
	mdbsampler "github.com/firedrill/firedrill/db/mariadb/sampler"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
)

var _ backend.Sampled = (*target)(nil)

// Samplers connects MariaDB's samplers (one session; their statements
// carry /* firedrill-sampler */) and the host's (CPU, memory, the data
// directory's disk, and firedrill itself): the host on every tick,
// the process list on every tick too, MariaDB's other sources at most
// once a second (mdbsampler.EveryTick says why).
func (tg *target) Samplers(ctx context.Context, timeout time.Duration) (*backend.Sampling, error) {
	// As the account of --dsn, in no database: on a given server with
	// --run-as it may have no privilege on firedrill's.
	set, err := mdbsampler.New(ctx, tg.config("").FormatDSN(), mdbsampler.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("samplers: %w", err)
	}
	dataDir := ""
	if tg.inst != nil {
		dataDir = tg.inst.DataDir()
	}
	hosts := host.New(dataDir)
	if tg.inst != nil { // the embedded server's processes: its CPU apart from firedrill's
		hosts = append(hosts, host.Server(tg.inst.PID))
	}
	return &backend.Sampling{
		Sources:    sampler.Schedule(set.Samplers(), hosts),
		Notes:      set.Notes(),
		Close:      set.Close,
		Unanswered: mdbsampler.Unanswered,
	}, nil
}
