package main

import (
	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/mariadb"
	"github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/db/redis"
)

// kinds is the registry of every kind of database firedrill is built
// with: the one place that names them. A new kind is its folder under
// db/ plus one line here; the commands, the runner and the reports
// receive this registry and never reach for a kind themselves.
func kinds() *backend.Registry {
	return backend.NewRegistry(
		postgres.New(),
		mariadb.New(),
		redis.New(),
	)
}
