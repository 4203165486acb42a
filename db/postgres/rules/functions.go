package pgrules

import (
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// fnBody is a function the run read at its end, with its body parsed by
// sqlcheck.ParsePLpgSQL.
type fnBody struct {
	Fn pgmetric.Function
	sqlcheck.Body
}

// runFunctions are the function bodies the run read at its end, parsed.
func runFunctions(run *timeline.Run) []fnBody {
	var out []fnBody
	for _, s := range run.SourceSamples(pgmetric.Functions) {
		var fns []pgmetric.Function
		if !diagnose.Detail(&s, &fns) {
			continue
		}
		out = out[:0]
		for _, f := range fns {
			out = append(out, fnBody{Fn: f, Body: sqlcheck.ParsePLpgSQL(f.Body)})
		}
	}
	return out
}

// runForeignKeys are the foreign keys the run read at its end.
func runForeignKeys(run *timeline.Run) []pgmetric.ForeignKey {
	var out []pgmetric.ForeignKey
	for _, s := range run.SourceSamples(pgmetric.ForeignKeys) {
		var fks []pgmetric.ForeignKey
		if diagnose.Detail(&s, &fks) {
			out = fks
		}
	}
	return out
}
