package redis

import (
	"github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/internal/promexport"
)

var _ promexport.Named = Backend{}

// MetricNames are Redis's key tables, for the names and units of its
// sampled series on /metrics.
func (Backend) MetricNames() promexport.Names {
	var n promexport.Names
	for _, k := range redismetric.Keys {
		n.Keys = append(n.Keys, promexport.Key(k))
	}
	return n
}
