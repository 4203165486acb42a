package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// targetRun is one system of a run: the only one of a scenario of one
// system (name ""), or one of its targets:. Each has its own backend,
// server, samplers and frozen-server watch; all share the run's clock.
type targetRun struct {
	name string             // the target's name; "" in a run of one system
	sc   *scenario.Scenario // the scenario as the target sees it (ForTarget)
	dsn  string             // the given server; "" for an embedded one
	be   backend.Backend
	tgt  backend.Target // nil until opened
	// keep is the slot of Options.Keep its embedded server is kept in;
	// nil when none is kept.
	keep *backend.Kept
	// eventKinds are the kinds of event the backend's targets have.
	eventKinds []event.Kind
	env        *event.Env // what its events may touch
	sampling   *backend.Sampling
	samplers   []backend.Source
	lastRead   []time.Time // when each sampler was last read
	// settingsDue asks the clock for a settings snapshot (after a settings
	// event), recorded as a sample of the backend's SettingsSource.
	settingsDue atomic.Bool
	freeze      *freezeWatch // when the server stopped answering
	// frozenOutage names the outage marks of the open frozen window
	// (under freeze.mu).
	frozenOutage string
	settings     map[string]string // the server's, for run.json
	// stalled says the server has left the samplers' queries unanswered
	// since stallSince (the tick whose reads first timed out); only the
	// clock touches these.
	stalled     bool
	stallSince  float64
	stallReads  int      // reads the open stall failed
	stallSource []string // the samplers it cut, in tick order
}

// resolveTargets finds each system's backend: the scenario's target (and
// the --dsn) for a run of one, each of its targets: otherwise, in the
// file's order.
func resolveTargets(sc *scenario.Scenario, opts Options) ([]*targetRun, error) {
	if len(sc.Targets) == 0 {
		be, err := opts.Backends.Resolve(sc, opts.DSN)
		if err != nil {
			return nil, err
		}
		return []*targetRun{{sc: sc, dsn: opts.DSN, be: be, eventKinds: backend.EventKindsOf(be)}}, nil
	}
	if opts.DSN != "" {
		return nil, fmt.Errorf("--dsn URL gives the server of a scenario of one system; this one has several (%s): give each its own with --dsn NAME=URL",
			joinNames(sc.TargetNames()))
	}
	var out []*targetRun
	var errs []error
	for _, name := range sc.TargetNames() {
		view := sc.ForTarget(name)
		be, err := opts.Backends.Resolve(view, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, &targetRun{name: name, sc: view, dsn: view.Target.DSN, be: be, eventKinds: backend.EventKindsOf(be)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// several says whether the run has named targets (Manifest.Targets).
func (r *run) several() bool { return len(r.targets) > 0 && r.targets[0].name != "" }

// target is the target called name ("" in a run of one system: the only
// one).
func (r *run) target(name string) *targetRun {
	for _, tr := range r.targets {
		if tr.name == name {
			return tr
		}
	}
	return r.targets[0]
}

// openTargets opens every target in order; when one fails, those already
// open are closed before the error returns, so that no throwaway server
// outlives a run that could not start.
func (r *run) openTargets(ctx context.Context, spec func(tr *targetRun) backend.Spec) error {
	for _, tr := range r.targets {
		tgt, err := tr.be.Open(ctx, spec(tr))
		if err != nil {
			if tr.name != "" {
				err = fmt.Errorf("target %s: %w", tr.name, err)
			}
			return errors.Join(err, r.closeTargets(false))
		}
		tr.tgt = tgt
	}
	return nil
}

// peer is backend.Spec.Peer: a target opened before the one opening
// (the scenario has them in the order they open).
func (r *run) peer(name string) (backend.Peer, error) {
	for _, tr := range r.targets {
		if tr.name != name || name == "" {
			continue
		}
		if tr.tgt == nil {
			return backend.Peer{}, fmt.Errorf("target %s is not open yet: targets open in the file's order", name)
		}
		p := backend.Peer{Kind: tr.be.Kind()}
		if e, ok := tr.tgt.(backend.Eventful); ok {
			p.ConnString = e.EventEnv(false, func(string) string { return "" }).ConnString
		}
		return p, nil
	}
	return backend.Peer{}, fmt.Errorf("the run has no target %q", name)
}

// closeTargets closes the targets opened, last first. frozen gives a
// server that stopped answering one short try (backend.Target.Close).
func (r *run) closeTargets(frozen bool) error {
	var errs []error
	for i := len(r.targets) - 1; i >= 0; i-- {
		tr := r.targets[i]
		if tr.tgt == nil {
			continue
		}
		if err := tr.tgt.Close(frozen && tr.frozenAtEnd()); err != nil {
			if tr.name != "" {
				err = fmt.Errorf("target %s: %w", tr.name, err)
			}
			errs = append(errs, err)
		}
		if tr.sampling != nil && tr.sampling.Close != nil {
			tr.sampling.Close()
			tr.sampling = nil
		}
		tr.tgt = nil
	}
	return errors.Join(errs...)
}

// frozenAtEnd says whether the target's server had stopped answering by
// the end of the run (a run whose load never started has no watch: it is
// judged frozen, as a run of one system was).
func (tr *targetRun) frozenAtEnd() bool {
	return tr.freeze == nil || len(tr.freeze.windows) > 0 || tr.freeze.frozenSince >= 0
}

// recordTargets writes the targets into the manifest: a run of one system
// keeps Target, Settings and Samplers as it always has; a run of several
// has each in Targets, with Target the first's.
func (r *run) recordTargets() {
	if !r.several() {
		tr := r.targets[0]
		if tr.tgt != nil {
			r.man.Target = tr.tgt.Info()
		}
		return
	}
	r.man.Targets = r.man.Targets[:0]
	for _, tr := range r.targets {
		nt := timeline.NamedTarget{Name: tr.name, Settings: tr.settings}
		if tr.tgt != nil {
			nt.Target = tr.tgt.Info()
		}
		nt.Samplers = samplerInfos(tr)
		r.man.Targets = append(r.man.Targets, nt)
	}
	r.man.Target, r.man.Settings = r.man.Targets[0].Target, r.man.Targets[0].Settings
}

// samplerInfos are a target's samplers for run.json, with what they could
// not read.
func samplerInfos(tr *targetRun) []timeline.SamplerInfo {
	var out []timeline.SamplerInfo
	if tr.sampling == nil {
		return nil
	}
	has := map[string]bool{}
	for _, s := range tr.samplers {
		has[s.Name()] = true
		out = append(out, timeline.SamplerInfo{Name: s.Name(), Notes: tr.sampling.Notes[s.Name()]})
	}
	for _, name := range sortedKeys(tr.sampling.Notes) {
		if !has[name] {
			out = append(out, timeline.SamplerInfo{Name: name, Notes: tr.sampling.Notes[name]})
		}
	}
	return out
}

// anyFrozen says whether some target's server has not answered for a
// while at t.
func (r *run) anyFrozen(t float64) bool {
	for _, tr := range r.targets {
		if tr.freeze != nil && tr.freeze.frozen(t) {
			return true
		}
	}
	return false
}
