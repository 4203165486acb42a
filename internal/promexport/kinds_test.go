package promexport

import (
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/db/redis/redismetric"
)

// testNames are the key tables of every kind, as their backends offer
// them (backend/<kind>/metricnames.go); this package's tests cannot link
// the backends, which link it.
func testNames() []Names {
	pg := Names{Labels: pgmetric.PlaceholderLabels()}
	for _, k := range pgmetric.Keys {
		pg.Keys = append(pg.Keys, Key(k))
	}
	var mdb, redis Names
	for _, k := range mariadbmetric.Keys {
		mdb.Keys = append(mdb.Keys, Key(k))
	}
	for _, k := range redismetric.Keys {
		redis.Keys = append(redis.Keys, Key(k))
	}
	return []Names{pg, mdb, redis}
}

// keyTables lists every kind's keys and the host's, in the order the
// documentation's table lists them.
func keyTables() []Key {
	var keys []Key
	for _, n := range append(testNames(), hostNames()) {
		keys = append(keys, n.Keys...)
	}
	return keys
}
