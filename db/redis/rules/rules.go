// Package redisrules holds the diagnosis rules that read Redis's own
// series (INFO, LATENCY, SLOWLOG, COMMANDSTATS): one file per rule, listed
// in Rules, which the redis backend registers.
package redisrules

import (
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
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
		// Redis tells nothing of its clients' activity: the rule judges by
		// firedrill's side alone.
		diagnose.GeneratorLimited(diagnose.GeneratorServer{}),
	}
}

// connectionSaturation is connection-saturation on Redis: an application
// pool that ran dry (Redis says nothing of its side of it). Its own
// connection limit is redis-client-saturation's: a pool that ran dry
// while Redis refused connections is that finding's, not a second one.
type connectionSaturation struct{}

var _ diagnose.Rule = connectionSaturation{}

func (connectionSaturation) ID() string { return "connection-saturation" }

// Inputs: the pool's waits are client metrics; INFO tells whether Redis
// refused connections (then the pool's waits are redis-client-saturation's).
func (connectionSaturation) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{rm.Info}}
}

func (connectionSaturation) Check(run *timeline.Run) []diagnose.Finding {
	pools := diagnose.PoolFindings(run, redisPool)
	for _, limit := range (redisClientSaturation{}).Check(run) {
		_, pools = diagnose.OneCause(run, limit, pools)
	}
	return pools
}

// redisPool is what a saturated pool's finding says of Redis.
var redisPool = diagnose.PoolServer{LimitSetting: "maxclients",
	References: []string{"https://redis.io/docs/latest/develop/reference/clients/#maximum-concurrent-connected-clients"}}
