package cli

import (
	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// diagnoseRun runs on run the neutral rules and those of its kind, as the
// registry of kinds has them: on each target's view of a run of several.
func diagnoseRun(backends *backend.Registry, run *timeline.Run) []diagnose.Finding {
	return diagnose.DiagnoseTargets(run, backends.Rules)
}

// everyRule is every rule of every kind: what a threshold or a drill's
// expectation may name.
func everyRule(backends *backend.Registry) []diagnose.Rule { return backends.AllRules() }
