package diagnose

// Neutral lists the rules that hold for every kind of database: they read
// only client metrics, host series and the manifest. A kind's own rules
// live in its folder (db/<kind>/rules) and come with it from the registry
// of kinds; a new neutral rule is one file here and one line below.
func Neutral() []Rule {
	return []Rule{
		failingTransactions{},
	}
}
