// Package redisdialect is the language Redis workloads' scripts are
// written in, for the backend, its events and its client alike.
package redisdialect

import "github.com/firedrill/firedrill/script"

// Script is one Redis command per line between the meta-commands, split
// into arguments as redis-cli splits what is typed at its prompt.
func Script() script.Dialect { return script.Dialect{Name: "redis", Lines: true} }
