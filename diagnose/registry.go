package diagnose

// Rules lists every rule, one line each: adding a rule is one file and
// one line here. The conformance test runs each of them.
func Rules() []Rule {
	return []Rule{
		multixactSLRUThrash{},
		xminHorizonHeld{},
		subtransactionOverflow{},
		generatorLimited{},
		transactionGuards{},
		deadlock{},
		lockContention{},
		missingIndex{},
		connectionSaturation{},
		commitBound{},
		failingTransactions{},
		checkpointPressure{},
		tempSpill{},
		idleBlocker{},
		aofFsyncStall{},
		redisForkStall{},
		redisSlowCommands{},
		redisClientSaturation{},
	}
}
