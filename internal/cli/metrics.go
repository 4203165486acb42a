package cli

import (
	"context"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// metricsFlags are --metrics-addr and --metrics-linger: a live
// Prometheus endpoint for the run (internal/promexport).
type metricsFlags struct{ promexport.Flags }

func (m *metricsFlags) register(f *pflag.FlagSet) { m.Register(f) }

// liveMetrics is a run's endpoint while it is up; nil without
// --metrics-addr.
type liveMetrics struct{ *promexport.Endpoint }

// start binds --metrics-addr before the run (promexport.Flags.Start),
// its series named from the key tables of backends' kinds; nil, nil
// without the flag.
func (m *metricsFlags) start(env *clikit.Env, backends *backend.Registry) (*liveMetrics, error) {
	ep, err := m.Start(env.Stderr, metricNames(backends)...)
	if ep == nil || err != nil {
		return nil, err
	}
	return &liveMetrics{ep}, nil
}

// hook makes the runner feed the exporter, beside the callbacks ropts
// already has: the exporter starts with the run's labels when the run
// directory exists, and reads each tick and mark.
func (lm *liveMetrics) hook(ropts *runner.Options, sc *scenario.Scenario, dsn string) {
	*ropts = lm.with(sc, dsn, "", *ropts)
}

// with returns ropts hooked to the exporter (see hook); runIDPrefix goes
// before the run directory's name in run_id (a drill's directory, as its
// variants' directories are named after the variants).
func (lm *liveMetrics) with(sc *scenario.Scenario, dsn, runIDPrefix string, ropts runner.Options) runner.Options {
	if lm == nil {
		return ropts
	}
	kind := sc.Target.Kind
	if be, err := ropts.Backends.Resolve(sc, dsn); err == nil {
		kind = be.Kind()
	}
	var shard string
	if ropts.Shard.Split() {
		shard = ropts.Shard.String() // one shard of several (--shard i/N)
	}
	onStart, onTick, onMark := ropts.OnStart, ropts.OnTick, ropts.OnMark
	ropts.OnStart = func(dir string) {
		lm.Exporter().Start(promexport.Labels{Scenario: sc.Name, RunID: runIDPrefix + filepath.Base(dir), Backend: kind, Shard: shard}, sc.Duration)
		if onStart != nil {
			onStart(dir)
		}
	}
	ropts.OnTick = func(t float64, ivs []timeline.Interval, samples []timeline.Sample) {
		lm.Exporter().Tick(t, ivs, samples)
		if onTick != nil {
			onTick(t, ivs, samples)
		}
	}
	ropts.OnMark = func(mk timeline.Mark) {
		lm.Exporter().Mark(mk)
		if onMark != nil {
			onMark(mk)
		}
	}
	return ropts
}

// findings serves a diagnosis of the run so far (firedrill_finding).
func (lm *liveMetrics) findings(fs []diagnose.Finding) {
	if lm != nil {
		lm.Exporter().Findings(fs)
	}
}

// finish marks the run over (firedrill_run_finished 1).
func (lm *liveMetrics) finish() {
	if lm != nil {
		lm.Finish()
	}
}

// stop keeps serving the final values for --metrics-linger, then stops
// the server (promexport.Endpoint.Stop).
func (lm *liveMetrics) stop(ctx context.Context) {
	if lm != nil {
		lm.Stop(ctx)
	}
}
