// Package redisrules holds the diagnosis rules that read Redis's own
// series (INFO, LATENCY, SLOWLOG, COMMANDSTATS): one file per rule, listed
// in Rules, which the redis backend registers.
package redisrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// Rules lists Redis's rules, one line each: adding one is a file here and
// a line below. Their order breaks ties between findings.
func Rules() []diagnose.Rule {
	return []diagnose.Rule{
		connectionSaturation{},
		aofFsyncStall{},
		redisForkStall{},
		redisSlowCommands{},
		redisClientSaturation{},
	}
}

// connectionSaturation is connection-saturation on Redis: an application
// pool that ran dry (Redis says nothing of its side of it; its own
// connection limit is redis-client-saturation's).
type connectionSaturation struct{}

var _ diagnose.Rule = connectionSaturation{}

func (connectionSaturation) ID() string { return "connection-saturation" }

// Inputs: the pool's waits are client metrics.
func (connectionSaturation) Inputs() diagnose.Inputs { return diagnose.Inputs{} }

func (connectionSaturation) Check(run *timeline.Run) []diagnose.Finding {
	return diagnose.PoolFindings(run, diagnose.PoolServer{})
}
