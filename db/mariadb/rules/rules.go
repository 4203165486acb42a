// Package mariadbrules holds the diagnosis rules that read MariaDB's (and
// MySQL's) own series (SHOW GLOBAL STATUS, the process list, the InnoDB
// monitor and lock views): one file per rule, listed in Rules, which the
// mariadb backend registers.
package mariadbrules

import "github.com/firedrill/firedrill/diagnose"

// Rules lists MariaDB's rules, one line each: adding one is a file here
// and a line below. Their order breaks ties between findings.
func Rules() []diagnose.Rule {
	return []diagnose.Rule{
		deadlock{},
		connectionSaturation{},
		commitBound{},
		autoIncLock{},
		queryCacheLock{},
		hotRowLock{},
		idleBlocker{},
		diagnose.GeneratorLimited(generatorServer),
	}
}
