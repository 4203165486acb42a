// Package kinds is the registration: the one place that names every kind
// of database firedrill is built with. A new kind is its folder under db/
// plus one line in Registry. The binary (cmd/firedrill) builds its
// registry here and hands it down; the commands, the runner and the
// reports receive it and never import this package (the layering test
// refuses any importer but cmd/firedrill and test code). The conformance
// tests in this folder loop over every kind it registers.
package kinds

import (
	"github.com/firedrill/firedrill/backend"
	httpkind "github.com/firedrill/firedrill/db/http"
	"github.com/firedrill/firedrill/db/mariadb"
	"github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/db/redis"
)

// Registry returns every kind firedrill is built with; the first is the
// default kind (a scenario naming none, a key=value DSN).
func Registry() *backend.Registry {
	return backend.NewRegistry(
		postgres.New(),
		mariadb.New(),
		redis.New(),
		httpkind.New(),
	)
}
