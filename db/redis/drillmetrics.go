package redis

import (
	"github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/drills/measure"
)

var _ measure.Measured = Backend{}

// DrillMetrics are what drills may expect of a Redis run beyond the
// clients' numbers: aof_delayed_fsync, the AOF writes made without
// waiting any longer for a late fsync (redis_info), summed over the
// window.
func (Backend) DrillMetrics() []measure.Metric {
	return []measure.Metric{{
		Name: "aof_delayed_fsync",
		Sum:  []measure.Series{{Source: redismetric.Info, Key: redismetric.AOFDelayedFsync}},
	}}
}
