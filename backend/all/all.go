// Package all registers every kind of database for tests: the
// conformance tests loop over it, and tests of the neutral layers that
// need a real kind take their registry from it. It is for test code only
// (the layering test refuses any other importer); the binary's registry
// is built in cmd/firedrill, whose test checks that both hold the same
// kinds.
package all

import (
	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/mariadb"
	"github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/db/redis"
)

// Registry returns every kind firedrill is built with, for a test.
func Registry() *backend.Registry {
	return backend.NewRegistry(
		postgres.New(),
		mariadb.New(),
		redis.New(),
	)
}
