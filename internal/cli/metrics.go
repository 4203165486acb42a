package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/backend/all"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// metricsFlags are --metrics-addr and --metrics-linger: a live
// Prometheus endpoint for the run (internal/promexport).
type metricsFlags struct {
	addr   string
	linger time.Duration
}

func (m *metricsFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.addr, "metrics-addr", "", "serve the run's live metrics for Prometheus at http://HOST:PORT/metrics while it runs (e.g. 127.0.0.1:9464; README: Prometheus and Grafana)")
	f.DurationVar(&m.linger, "metrics-linger", 0, "with --metrics-addr, keep serving the final values this long after the run ends (e.g. 30s, so a last scrape gets them; Ctrl-C ends it sooner)")
}

// liveMetrics is a run's endpoint while it is up; nil without
// --metrics-addr.
type liveMetrics struct {
	exp    *promexport.Exporter
	srv    *promexport.Server
	linger time.Duration
	stderr io.Writer
}

// start binds --metrics-addr before the run, so a busy port is an error
// that names it before anything starts; nil, nil without the flag.
func (m *metricsFlags) start(env *clikit.Env) (*liveMetrics, error) {
	if m.addr == "" {
		if m.linger != 0 {
			return nil, clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--metrics-linger needs --metrics-addr"))
		}
		return nil, nil
	}
	exp := promexport.New(clikit.Version)
	srv, err := promexport.Listen(m.addr, exp)
	if err != nil {
		return nil, clikit.WithCode(clikit.ExitUsage, err)
	}
	fmt.Fprintf(env.Stderr, "firedrill: serving live metrics at %s\n", srv.URL())
	return &liveMetrics{exp: exp, srv: srv, linger: m.linger, stderr: env.Stderr}, nil
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
	if be, err := all.Registry().Resolve(sc, dsn); err == nil {
		kind = be.Kind()
	}
	var shard string
	if ropts.Shard.Split() {
		shard = ropts.Shard.String() // one shard of several (--shard i/N)
	}
	onStart, onTick, onMark := ropts.OnStart, ropts.OnTick, ropts.OnMark
	ropts.OnStart = func(dir string) {
		lm.exp.Start(promexport.Labels{Scenario: sc.Name, RunID: runIDPrefix + filepath.Base(dir), Backend: kind, Shard: shard}, sc.Duration)
		if onStart != nil {
			onStart(dir)
		}
	}
	ropts.OnTick = func(t float64, ivs []timeline.Interval, samples []timeline.Sample) {
		lm.exp.Tick(t, ivs, samples)
		if onTick != nil {
			onTick(t, ivs, samples)
		}
	}
	ropts.OnMark = func(mk timeline.Mark) {
		lm.exp.Mark(mk)
		if onMark != nil {
			onMark(mk)
		}
	}
	return ropts
}

// finish marks the run over (firedrill_run_finished 1).
func (lm *liveMetrics) finish() {
	if lm != nil {
		lm.exp.Finish()
	}
}

// stop keeps serving the final values for --metrics-linger (or until ctx
// ends: Ctrl-C), then stops the server.
func (lm *liveMetrics) stop(ctx context.Context) {
	if lm == nil {
		return
	}
	lm.exp.Finish()
	if lm.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(lm.stderr, "firedrill: serving the final metrics at %s for %v (Ctrl-C ends it)\n", lm.srv.URL(), lm.linger)
		t := time.NewTimer(lm.linger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if err := lm.srv.Shutdown(); err != nil {
		fmt.Fprintf(lm.stderr, "firedrill: stopping the metrics server: %v\n", err)
	}
}
