// Package pgrules holds the diagnosis rules that read PostgreSQL's own
// series (pg_stat_activity, locks, pg_stat_slru, WAL, pg_stat_statements,
// plans, settings) and its scripts' SQL: one file per rule, listed in
// Rules, which the postgres backend registers.
package pgrules

import "github.com/firedrill/firedrill/diagnose"

// Rules lists PostgreSQL's rules, one line each: adding one is a file here
// and a line below. Their order breaks ties between findings.
func Rules() []diagnose.Rule {
	return []diagnose.Rule{
		multixactSLRUThrash{},
		multixactCreation{},
		xminHorizonHeld{},
		subtransactionOverflow{},
		diagnose.GeneratorLimited(generatorServer),
		transactionGuards{},
		deadlock{},
		lockContention{},
		missingIndex{},
		connectionSaturation{},
		commitBound{},
		checkpointPressure{},
		tempSpill{},
		idleBlocker{},
	}
}
