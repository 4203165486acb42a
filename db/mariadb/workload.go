package mariadb

import (
	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	"github.com/firedrill/firedrill/engine"
)

var _ engine.LoopTarget = (*mdbtarget.Target)(nil)

// workloadConfig is what db/mariadb/client's Config takes.
type workloadConfig = mdbtarget.Config

// newWorkloadTarget makes the engine's target of a workload: the MySQL
// protocol on the engine's event loop.
func newWorkloadTarget(cfg workloadConfig) (engine.Target, error) {
	return mdbtarget.NewTarget(cfg)
}
