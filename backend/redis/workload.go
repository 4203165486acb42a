package redis

import (
	"fmt"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// Workload makes the engine's target for one workload's clients, each
// connection named appName (CLIENT SETNAME).
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, errNotBuilt)
}
