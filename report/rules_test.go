package report

import (
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// everyRule is every rule of every kind, as the command line hands it to
// the threshold checks.
func everyRule() []diagnose.Rule { return kinds.Registry().AllRules() }

// diagnoseRun diagnoses run with its kind's rules, as the command line does.
func diagnoseRun(run *timeline.Run) []diagnose.Finding {
	return diagnose.Diagnose(run, kinds.Registry().Rules(run.Manifest.Target.Kind))
}
