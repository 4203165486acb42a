// Package all is the one place that registers every backend: a new kind
// of database is one line here. The database-neutral layers reach a
// backend's own packages only through this file.
package all

import (
	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/mariadb"
	"github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/db/redis"
)

// Registry returns every backend firedrill is built with.
func Registry() *backend.Registry {
	return backend.NewRegistry(
		postgres.New(),
		mariadb.New(),
		redis.New(),
	)
}
