package mariadb

import (
	"github.com/firedrill/firedrill/engine"
	mdbtarget "github.com/firedrill/firedrill/target/mariadb"
)

var _ engine.LoopTarget = (*mdbtarget.Target)(nil)

// workloadConfig is what target/mariadb's Config takes.
type workloadConfig = mdbtarget.Config

// newWorkloadTarget makes the engine's target of a workload: the MySQL
// protocol on the engine's event loop.
func newWorkloadTarget(cfg workloadConfig) (engine.Target, error) {
	return mdbtarget.NewTarget(cfg)
}
