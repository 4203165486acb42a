// Package pgdialect is the language PostgreSQL workloads' scripts are
// written in, for the backend, its rules and its client alike.
package pgdialect

import (
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqllex"
)

// Script is pgbench's language: SQL lexed as psql lexes PostgreSQL's and
// split as psql splits it for pgbench, parameters numbered $1 ….
func Script() script.Dialect { return script.Dialect{Name: "postgresql", SQL: sqllex.PostgreSQL} }
