// Package runner executes a scenario: it brings up the target (an embedded
// throwaway server, or the given one), runs setup, then drives the
// workloads, fires the events and ticks the samplers on one clock, writing
// everything into a run directory (package timeline's format). It is the
// pipeline of DESIGN.md from the scenario to the timeline; diagnosis and
// reports read the directory it leaves.
package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/service"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Options configure one run of a scenario.
type Options struct {
	Scenario *scenario.Scenario
	// RunDir is the run directory to create; if empty, a new directory
	// named after the time and the scenario is made under OutDir.
	RunDir string
	OutDir string // default "runs"
	// DSN overrides the scenario's target with a given server.
	DSN        string
	AllowShell bool
	// AllowOutsideSchema lets setup, scripts and events on a given server
	// name objects outside the scenario's schema (refused by default).
	AllowOutsideSchema bool
	// RunAs is a confined account made beforehand (backend.Spec.RunAs).
	RunAs string
	// PrivilegesOnly skips the lexical confinement check
	// (backend.Spec.PrivilegesOnly): for tests only.
	PrivilegesOnly bool
	Version        string   // firedrill's version, for the manifest
	Command        []string // the command line, for the manifest
	// Log receives progress lines (server start, setup, events, errors).
	Log io.Writer
	// Secret, when set, is told each password the backend made itself
	// (an embedded server's), for the caller's own masking of Log.
	Secret func(password string)
	// OnTick is called after each tick with the intervals and samples
	// just recorded (for live output and live diagnosis); it runs on the
	// clock's goroutine and must be quick.
	OnTick func(t float64, intervals []timeline.Interval, samples []timeline.Sample)
	// OnMark is called for each event mark as it happens.
	OnMark func(timeline.Mark)
	// NoSamplers runs without reading the database or host (for the
	// sampler-overhead benchmark); the timeline has client metrics only.
	NoSamplers bool
	// OnStart is called with the run directory once the load is about to
	// start (the manifest with the plan is written).
	OnStart func(dir string)
	// Backends are the kinds of database the run may target, handed
	// down from the one place that builds the registry (cmd/firedrill);
	// it is required: the runner links no kind of its own.
	Backends *backend.Registry
	// Shard is the part of a split run this process runs (shard.go);
	// the zero value runs the whole scenario.
	Shard Shard
	// Keep, when set, keeps each embedded server for the next run with
	// the same Keep (firedrill capacity --reuse-server): this run takes
	// the server the run before left, and skips the setup that run did;
	// the caller stops the servers with Keep.Stop. Nil: a fresh server
	// per run, stopped at its end.
	Keep *backend.Keeper
	// StartAt is when the load starts (all shards of a split run at the
	// same moment); zero starts it as soon as the run is ready.
	StartAt time.Time
}

// Result is what a run left.
type Result struct {
	Dir      string
	Manifest timeline.Manifest
	Summary  timeline.Summary
}

// ErrInterrupted reports a run stopped by its context (SIGINT/SIGTERM);
// the run directory holds what was measured until then.
var ErrInterrupted = errors.New("run interrupted")

// ErrFailing reports a run stopped because a workload's transactions kept
// failing (the scenario's abort_on_failure); the run directory holds what
// was measured, with status failed.
var ErrFailing = errors.New("transactions kept failing")

// failingError is a run's ErrFailing, with what failed and where.
type failingError struct{ error }

// errNoBackends is what Run and Validate say when their caller handed
// them no registry of kinds.
var errNoBackends = errors.New("runner: Options.Backends is nil: the caller must hand down the registry of kinds (cmd/firedrill builds it)")

func (failingError) Is(target error) bool { return target == ErrFailing }

// Run executes the scenario and returns when it is over. On any outcome
// the embedded server is stopped and removed (unless Options.Keep keeps
// it for the next run) and no session is left open on the target; the run directory holds what was measured, with the
// manifest's status saying how it ended.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	sc := opts.Scenario
	// One redactor for all this run prints and writes: it knows the
	// target's password however it was given (internal/secret).
	dsns := []string{opts.DSN, sc.Target.DSN, opts.RunAs}
	for _, t := range sc.Targets {
		dsns = append(dsns, t.Target.DSN)
	}
	red := secret.New(dsns...)
	opts.Log = red.Writer(opts.Log)
	defer func() { err = red.Error(err) }()
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}
	if opts.Backends == nil {
		return nil, errNoBackends
	}
	targets, err := resolveTargets(sc, opts)
	if err != nil {
		return nil, err
	}
	for _, tr := range targets {
		if sk, ok := tr.be.(backend.Secreted); ok {
			for _, v := range sk.Secrets(tr.sc) {
				red.LearnSecret(v)
				if opts.Secret != nil {
					opts.Secret(v)
				}
			}
		}
	}
	for _, tr := range targets {
		if p, ok := tr.be.(backend.Passworder); ok {
			red.Resolve(p.Password) // a passfile's or service file's password too
		}
		topts := opts
		topts.Scenario, topts.DSN = tr.sc, tr.dsn
		if err := preflight(tr.be, tr.sc, topts); err != nil {
			return nil, targetErr(tr, err)
		}
	}
	if err := CheckShard(opts, time.Now()); err != nil {
		return nil, err
	}
	settleKilled(opts, logf)
	dir, err := makeRunDir(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, timeline.ScriptsDir), timeline.DirMode); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	man := timeline.Manifest{
		Format: timeline.Format, Name: sc.Name, Started: time.Now().UTC(), Status: timeline.StatusRunning,
		Version: opts.Version, Command: red.Args(opts.Command), Interval: sc.SampleInterval.Seconds(), Host: hostInfo(),
	}
	if err := copyScenario(sc, dir, red); err != nil {
		return nil, err
	}
	man.Process = timeline.CurrentProcess() // a later firedrill tells from it whether this run was killed
	w, err := timeline.Create(dir)
	if err != nil {
		return nil, err
	}
	w.RedactWith(red.Redact)
	r := &run{opts: opts, sc: sc, dir: dir, w: w, man: &man, logf: logf, red: red, targets: targets}
	man.Shard = r.shardInfo()
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = cerr
		}
		man.Ended = time.Now().UTC()
		switch {
		case err == nil:
			man.Status = timeline.StatusCompleted
		case errors.Is(err, ErrInterrupted):
			man.Status, man.Error = timeline.StatusInterrupted, err.Error()
		case errors.Is(err, ErrDegraded):
			man.Status, man.Error = timeline.StatusDegraded, err.Error()
		default:
			man.Status, man.Error = timeline.StatusFailed, err.Error()
		}
		man.Error = red.Redact(man.Error)
		if werr := timeline.WriteJSON(dir, timeline.ManifestFile, &man); werr != nil && err == nil {
			err = werr
		}
		if res != nil {
			res.Manifest = man
		}
	}()
	if err := timeline.WriteJSON(dir, timeline.ManifestFile, &man); err != nil {
		return nil, err
	}

	// The target: a throwaway server of its backend, or the given one.
	secretOf := func(password string) {
		red.LearnSecret(password)
		if opts.Secret != nil {
			opts.Secret(password)
		}
	}
	// Each system: a throwaway server of its backend, or the given one.
	// Every one opened is closed on any outcome.
	err = r.openTargets(ctx, func(tr *targetRun) backend.Spec {
		if tr.dsn == "" {
			tr.keep = opts.Keep.For(tr.name)
		}
		return backend.Spec{Scenario: tr.sc, DSN: tr.dsn, Log: opts.Log, Redact: red.Redact, Secret: secretOf,
			AllowOutsideSchema: opts.AllowOutsideSchema, RunAs: opts.RunAs, PrivilegesOnly: opts.PrivilegesOnly, Connections: connections(tr.sc),
			Peer: r.peer, Keep: tr.keep}
	})
	if err != nil {
		return nil, interrupted(ctx, err)
	}
	r.recordTargets()
	defer func() {
		// A frozen or dead server gets one short try, so that the run
		// still ends near its deadline; what it could not do (settings
		// left changed) joins the run's error, whose status stays.
		if cerr := r.closeTargets(errors.Is(err, ErrDegraded)); cerr != nil {
			logf("%v", cerr)
			err = errors.Join(err, cerr)
		}
	}()

	if err := r.setup(ctx); err != nil { // on shard 0 only (shard.go)
		return nil, interrupted(ctx, err)
	}
	if err := r.plan(); err != nil {
		return nil, err
	}
	if err := r.startSamplers(ctx); err != nil {
		return nil, interrupted(ctx, err)
	}
	if err := timeline.WriteJSON(dir, timeline.ManifestFile, &man); err != nil {
		return nil, err
	}
	if err := r.waitStartAt(ctx); err != nil {
		return nil, interrupted(ctx, err)
	}
	if man.Shard != nil {
		man.Shard.Began = time.Now().UTC() // the timeline's 0, for merge
	}
	if opts.OnStart != nil {
		opts.OnStart(dir)
	}

	sum, err := r.execute(ctx)
	if derr := r.degraded(time.Since(r.start).Seconds()); err == nil {
		err = derr
	}
	if err != nil && !errors.Is(err, ErrInterrupted) && !errors.Is(err, ErrFailing) && !errors.Is(err, ErrDegraded) {
		return nil, err
	}
	timeline.RedactSummary(sum, red.Redact)
	if werr := timeline.WriteSummary(dir, sum); werr != nil {
		return nil, werr
	}
	return &Result{Dir: dir, Summary: *sum}, err
}

// interrupted turns an error caused by the context's cancellation into
// ErrInterrupted.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrInterrupted, err)
	}
	return err
}

func makeRunDir(opts Options) (string, error) {
	if opts.RunDir != "" {
		if entries, err := os.ReadDir(opts.RunDir); err == nil && len(entries) > 0 {
			return "", fmt.Errorf("run directory %s exists and is not empty; choose another or remove it", opts.RunDir)
		}
		if err := os.MkdirAll(opts.RunDir, timeline.DirMode); err != nil {
			return "", fmt.Errorf("create run directory: %w", err)
		}
		// An empty directory made beforehand becomes private too.
		return opts.RunDir, os.Chmod(opts.RunDir, timeline.DirMode)
	}
	out := opts.OutDir
	if out == "" {
		out = "runs"
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", out, err)
	}
	base := time.Now().Format("20060102-150405") + "-" + opts.Scenario.Name
	for i := 0; ; i++ {
		dir := filepath.Join(out, base)
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", dir, i+1)
		}
		if err := os.Mkdir(dir, timeline.DirMode); err == nil {
			return dir, nil
		} else if !os.IsExist(err) {
			return "", fmt.Errorf("create run directory: %w", err)
		}
	}
}

// copyScenario keeps the scenario as run, its target.dsn's password masked.
func copyScenario(sc *scenario.Scenario, dir string, red *secret.Redactor) error {
	if sc.Source == nil {
		return nil
	}
	return timeline.WriteFile(dir, timeline.ScenarioFile, sc.RedactedSource(red.Redact))
}

func hostInfo() timeline.Host {
	// The host's CPUs, not the ones firedrill may use (affinity, cgroup
	// quota): the firedrill sampler records those apart.
	h := timeline.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: host.OnlineCPUs()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			h.MemBytes = kb * 1024
		}
	}
	return h
}

// run is the state of one scenario run.
type run struct {
	opts Options
	sc   *scenario.Scenario
	dir  string
	w    *timeline.Writer
	man  *timeline.Manifest
	logf func(string, ...any)
	red  *secret.Redactor // masks the targets' passwords in all the run writes
	// targets are the systems under test: one, or the scenario's
	// targets: in the file's order.
	targets []*targetRun
	// host reads the machine and firedrill once for a run of several
	// targets (host.go); nil otherwise.
	host *targetRun

	workloads []*workloadRun
	// services are the scenario's services (services:), sampled as the
	// source "service"; nil without.
	services *service.Set
	events   []event.Event
	// eventTargets are each event's target, in events' order.
	eventTargets []*targetRun
	start        time.Time
	evMarks      eventMarks   // the events' marks, closed at the deadline
	outages      atomic.Int32 // numbers the outage marks
	// unreachable are the outages not recovered when their workload
	// ended: a server that died (deadline.go, degraded).
	unreachable struct {
		sync.Mutex
		outages []unreachable
	}
}

// workloadRun is one workload ready to run.
type workloadRun struct {
	tr      *targetRun // the system it loads
	spec    *scenario.Workload
	cfg     engine.Config
	scripts []*script.Script
	target  engine.Target
	ticks   chan time.Time
	start   time.Duration
	stop    time.Duration
	result  *engine.Result
	err     error
	// locations name each script for messages: its file as the scenario
	// gives it, or its copy in the run directory.
	locations []string
}

// plan parses every workload's scripts and builds the engines' configs
// and the events, so that mistakes surface before any load starts.
func (r *run) plan() error {
	runEnd := r.sc.Duration
	if len(r.sc.Services) > 0 {
		r.services = service.NewSet(r.sc.Services)
	}
	for i := range r.sc.Workloads {
		spec := &r.sc.Workloads[i]
		tr := r.target(spec.Target)
		syms := script.NewSymbols()
		scripts, infos, err := loadScripts(tr.sc, spec, syms, r.dir, r.red.Redact)
		if err != nil {
			return err
		}
		wl, err := tr.tgt.Workload(spec, scripts, AppName(spec.Name))
		if err != nil {
			return targetErr(tr, err)
		}
		pool := spec.Pool
		if pool == 0 {
			pool = wl.Pool // the target's own (an HTTP service's connections:)
		}
		fn, clients, rateModel, maxRate := shape(spec)
		fn, clients, maxRate, runs := r.opts.Shard.shareShape(fn, clients, rateModel, maxRate)
		stop := spec.Stop
		if stop == 0 || stop > runEnd {
			stop = runEnd
		}
		seed := uint64(time.Now().UnixNano())
		if spec.Seed != nil {
			seed = *spec.Seed
		} else if r.opts.Shard.Split() {
			seed = uint64(r.opts.StartAt.UnixNano()) // what the shards share
		}
		seed = r.opts.Shard.shardSeed(seed)
		scale := spec.Scale
		if scale == 0 {
			scale = max(tr.sc.Setup.PgbenchScale, 1)
		}
		fallback, fallbackInfo, err := r.planFallback(spec, syms)
		if err != nil {
			return err
		}
		wr := &workloadRun{tr: tr, spec: spec, scripts: scripts, target: wl.Target, start: spec.Start, stop: stop,
			ticks: make(chan time.Time, 1)}
		var defines []engine.Define
		for _, k := range sortedKeys(spec.Defines) {
			defines = append(defines, engine.Define{Name: k, Value: spec.Defines[k]})
		}
		wr.cfg = engine.Config{
			Scripts: scripts, Symbols: syms, Defines: defines, Scale: scale,
			Clients: clients, Duration: stop - spec.Start, LatencyLimit: spec.LatencyLimit,
			MaxTries: max(spec.MaxTries, 1), PerCommand: true, RandomSeed: seed,
			Ticks: wr.ticks, FinalProgress: true, Shape: fn, Pool: r.opts.Shard.sharePool(pool), PoolTimeout: spec.PoolTimeout,
			ContinueOnError: true, Stderr: r.opts.Log,
			FailureLimit: engine.FailureLimit{Ratio: r.sc.AbortOnFailure.Ratio, For: r.sc.AbortOnFailure.For},
			OnOutage:     r.outageMarker(spec.Name, tr.name),
			Fallback:     fallback,
		}
		if spec.Service != "" {
			r.throughService(wr, tr, rateModel)
			clients = wr.cfg.Clients
		}
		for i, src := range spec.Scripts {
			loc := timeline.ScriptsDir + "/" + infos[i].File
			if src.File != "" {
				loc = src.File
			}
			wr.locations = append(wr.locations, loc)
		}
		if rateModel {
			wr.cfg.Rate = maxRate
			if wr.cfg.Rate <= 0 {
				wr.cfg.Rate = 1 // the shape sets the real rate
			}
		}
		if wr.cfg.Duration <= 0 {
			return fmt.Errorf("workload %s: starts at %v, after the run's end %v", spec.Name, spec.Start, stop)
		}
		if runs { // a shard may have no client of a small workload
			r.workloads = append(r.workloads, wr)
		}
		r.man.Workloads = append(r.man.Workloads, timeline.WorkloadInfo{
			Name: spec.Name, Target: tr.name, Scripts: infos, Clients: clients, Rate: maxRate, Pool: r.opts.Shard.sharePool(pool),
			Start: spec.Start.Seconds(), Stop: stop.Seconds(), Mode: wl.Mode, Settings: spec.Settings,
			// What the scripts read but never set, as the scenario gave it
			// (not the engine's default scale of 1), for the lock-order analysis.
			Defines: spec.Defines, Scale: cmp.Or(spec.Scale, tr.sc.Setup.PgbenchScale),
			Fallback: fallbackInfo, Service: spec.Service,
		})
	}
	for i := range r.sc.Events {
		if !r.opts.Shard.Leads() {
			break // events happen once, on shard 0
		}
		spec := r.sc.Events[i]
		tr := r.target(spec.Target)
		ev, err := event.New(tr.eventKinds, spec)
		if err != nil {
			return fmt.Errorf("event %s: %w", spec.Name, err)
		}
		r.events = append(r.events, ev)
		r.eventTargets = append(r.eventTargets, tr)
		r.man.Events = append(r.man.Events, timeline.EventInfo{
			Name: spec.Name, Target: spec.Target, Kind: spec.Kind, At: spec.At.Seconds(), Duration: spec.Duration.Seconds()})
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// startSamplers connects each target's samplers and takes its settings
// snapshot.
func (r *run) startSamplers(ctx context.Context) error {
	if r.opts.NoSamplers || !r.opts.Shard.Leads() { // samplers run once, on shard 0
		return nil
	}
	for _, tr := range r.targets {
		if sampled, ok := tr.tgt.(backend.Sampled); ok {
			timeout := sampler.Timeout(r.sc.SampleInterval)
			sampling, err := sampled.Samplers(ctx, timeout)
			if err != nil {
				return targetErr(tr, err)
			}
			tr.sampling, tr.samplers = sampling, sampling.Sources
		}
		if conf, ok := tr.tgt.(backend.Configured); ok {
			if settings, err := conf.Settings(ctx); err == nil {
				tr.settings = timeline.RedactSettings(settings, r.red.Redact) // primary_conninfo may hold a password
			} else {
				r.logf("%sreading the server's settings: %v", tr.prefix(), err)
			}
		}
	}
	r.shareHost()
	if !r.several() {
		tr := r.targets[0]
		r.man.Samplers, r.man.Settings = samplerInfos(tr), tr.settings
	} else if r.host != nil {
		r.man.Samplers = samplerInfos(r.host)
	}
	r.recordTargets()
	return nil
}

// connections is the most sessions the scenario's workloads may open at
// once: each workload's clients (the largest stage), or its pool.
func connections(sc *scenario.Scenario) int {
	n := 0
	for i := range sc.Workloads {
		_, clients, _, _ := shape(&sc.Workloads[i])
		if p := sc.Workloads[i].Pool; p > 0 {
			clients = p
		}
		if svc, ok := sc.ServiceByName(sc.Workloads[i].Service); ok {
			clients = svc.Instances * svc.Pool.Size
		}
		n += clients
	}
	return n
}

// execute runs workloads, events and samplers on one clock until the
// scenario's duration, and returns the summary.
func (r *run) execute(ctx context.Context) (*timeline.Summary, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.start = time.Now()
	deadline := r.start.Add(r.sc.Duration + hardStopGrace) // see deadline.go
	for _, tr := range r.targets {
		tr.freeze = newFreezeWatch(r.sc.SampleInterval, tr.samplers)
		tr.freeze.onEdge = func(e frozenEdge) { r.markFrozen(tr, e) }
		tr.env = &event.Env{AllowShell: r.opts.AllowShell, AppName: AppName}
		if eventful, ok := tr.tgt.(backend.Eventful); ok {
			tr.env = eventful.EventEnv(r.opts.AllowShell, AppName)
		}
	}
	// On a frozen server, cancelled in time for the engines to close what
	// is stuck by the deadline, however late the clock notices the end.
	hardStop := time.AfterFunc(time.Until(deadline)-engineStopTime-closeTime, func() { r.stopIfFrozen(cancel) })
	defer hardStop.Stop()
	var tickMu sync.Mutex // guards pending, filled by the engines' callbacks
	var pending []timeline.Interval
	var wg sync.WaitGroup
	failing := make(chan error, 1) // a workload stopped by its failure limit
	for _, wr := range r.workloads {
		wr.cfg.OnProgress = func(p *engine.Progress) {
			iv := p.Timeline(wr.spec.Name, wr.start)
			r.w.Add(timeline.Record{Interval: iv})
			tickMu.Lock()
			pending = append(pending, *iv)
			tickMu.Unlock()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if wr.start > 0 {
				select {
				case <-time.After(wr.start - time.Since(r.start)):
				case <-runCtx.Done():
					return
				}
			}
			r.logf("workload %s: starting %s", wr.spec.Name, describeShape(wr))
			wr.result, wr.err = engine.Run(runCtx, wr.target, wr.cfg)
			var fe *engine.FailingError
			if errors.As(wr.err, &fe) {
				select {
				case failing <- failingError{fmt.Errorf("workload %s: %w at %s", wr.spec.Name, fe, wr.location(fe.Script, fe.Command))}:
				default: // another workload stopped the run first
				}
				return
			}
			if wr.result != nil && wr.result.RefusedClients > 0 {
				r.logf("workload %s: %d clients could not open a connection at least once; they retried with backoff, waiting %.1f s in all",
					wr.spec.Name, wr.result.RefusedClients, wr.result.ReconnectWait.Seconds())
			}
			if wr.result != nil && wr.result.FallbackError != nil {
				r.logf("workload %s: fallbacks to %s failed, the first with: %v", wr.spec.Name, wr.spec.Fallback.Target, wr.result.FallbackError)
			}
			if wr.result != nil && wr.result.Backoff > 0 {
				r.logf("workload %s: clients whose transactions kept failing at once waited %.1f s in all before retrying (backoff)",
					wr.spec.Name, wr.result.Backoff.Seconds())
			}
			switch {
			case wr.err != nil && !errors.Is(wr.err, engine.ErrAborted):
				r.logf("workload %s: %v", wr.spec.Name, wr.err)
			case wr.result != nil && wr.result.AbortedClient > 0:
				r.logf("workload %s: %d clients aborted", wr.spec.Name, wr.result.AbortedClient)
			}
		}()
	}
	var evWG sync.WaitGroup
	for i, ev := range r.events {
		spec, tr := r.sc.Events[i], r.eventTargets[i]
		evWG.Add(1)
		go func() {
			defer evWG.Done()
			r.fire(runCtx, ev, spec, tr)
		}()
	}

	// The clock: every tick closes the workloads' intervals and reads
	// the samplers, so both land on the same instants.
	ticker := time.NewTicker(r.sc.SampleInterval)
	defer ticker.Stop()
	end := time.NewTimer(r.sc.Duration)
	defer end.Stop()
	workloadsDone := make(chan struct{})
	go func() { wg.Wait(); close(workloadsDone) }()
	r.sample(runCtx, time.Now(), nil, true) // the baseline for rates
	var runErr error
loop:
	for {
		select {
		case now := <-ticker.C:
			for _, wr := range r.workloads {
				select {
				case wr.ticks <- now:
				default: // the engine is behind; it closes a longer interval next time
				}
			}
			// Give the engines a moment to hand over the intervals just
			// closed, so OnTick sees them with the samples of this tick.
			time.Sleep(2 * time.Millisecond)
			tickMu.Lock()
			ivs := pending
			pending = nil
			tickMu.Unlock()
			r.sampleTick(runCtx, now, ivs, deadline)
		case <-end.C:
			break loop
		case err := <-failing:
			runErr = err
			r.logf("%v: stopping the run", err)
			cancel() // the other workloads and the events stop now
			break loop
		case <-ctx.Done():
			runErr = fmt.Errorf("%w after %.0f s", ErrInterrupted, time.Since(r.start).Seconds())
			r.logf("interrupted: stopping workloads and events")
			break loop
		}
	}
	// Workloads end by their own duration (or the cancellation); events
	// still running at the end are cut short.
	cancelWait := time.AfterFunc(5*time.Second, cancel)
	<-workloadsDone
	cancelWait.Stop()
	cancel()
	r.waitEvents(&evWG, deadline)
	tickMu.Lock()
	ivs := pending
	tickMu.Unlock()
	r.sampleLast(ivs)      // the last samples, after the load, of the servers that answer
	r.collectEvidence(ctx) // for PostgreSQL: plans of the top statements, for missing-index
	if err := r.w.Flush(); err != nil {
		return nil, fmt.Errorf("write timeline: %w", err)
	}
	sum := &timeline.Summary{Duration: time.Since(r.start).Seconds()}
	for _, wr := range r.workloads {
		if wr.result == nil {
			if wr.err != nil && runErr == nil && ctx.Err() == nil {
				return nil, fmt.Errorf("workload %s: %w", wr.spec.Name, wr.err)
			}
			continue
		}
		sum.Workloads = append(sum.Workloads, summarize(wr.spec.Name, wr.result, wr.scripts, wr.start))
		wr.result = nil // the summary has it all: a long script's per-command statistics need not stay while the run is written
	}
	r.holdToPlan(sum)
	return sum, runErr
}

// location names a script command for messages: file:line.
func (wr *workloadRun) location(script, command int) string {
	if script < 0 || script >= len(wr.scripts) {
		return "an unknown script"
	}
	loc := wr.locations[script]
	if cmds := wr.scripts[script].Commands; command >= 0 && command < len(cmds) {
		return fmt.Sprintf("%s:%d", loc, cmds[command].Pos.Line)
	}
	return loc
}

// outageMarker returns a workload's engine.Config.OnOutage: it marks each
// outage's start and end on the timeline (kind timeline.MarkOutage),
// named outage-N in the order they start.
func (r *run) outageMarker(workload, target string) func(engine.Outage) {
	var name, cause string
	var began float64
	return func(o engine.Outage) {
		if o.End == 0 && !o.Recovered {
			name = fmt.Sprintf("outage-%d", r.outages.Add(1))
			began, cause = time.Since(r.start).Seconds(), firstLine(o.Message)
			r.mark(timeline.Mark{Event: name, Target: target, Kind: timeline.MarkOutage, Phase: timeline.PhaseStart,
				Detail: map[string]any{"workload": workload, "code": o.Code, "cause": firstLine(o.Message)}})
			r.logf("workload %s: connections failing: %s (%s)", workload, firstLine(o.Message), o.Code)
			return
		}
		took := (o.End - o.Start).Seconds()
		codes := make([]string, 0, len(o.Codes))
		for code := range o.Codes {
			codes = append(codes, code)
		}
		sort.Slice(codes, func(i, j int) bool { return o.Codes[codes[i]] > o.Codes[codes[j]] })
		var byCode []string
		for _, code := range codes {
			byCode = append(byCode, fmt.Sprintf("%d × %s", o.Codes[code], code))
		}
		outcome := fmt.Sprintf("recovered after %.1f s; %d tries failed (%s)", took, o.Failures, strings.Join(byCode, ", "))
		if !o.Recovered {
			outcome = fmt.Sprintf("not recovered when the workload ended, %.1f s later; %d tries failed (%s)", took, o.Failures, strings.Join(byCode, ", "))
			r.unreachable.Lock()
			r.unreachable.outages = append(r.unreachable.outages, unreachable{workload: workload, start: began, cause: cause})
			r.unreachable.Unlock()
		}
		r.mark(timeline.Mark{Event: name, Target: target, Kind: timeline.MarkOutage, Phase: timeline.PhaseEnd, Outcome: outcome,
			Detail: map[string]any{"workload": workload, "code": o.Code, "failures": o.Failures, "codes": o.Codes, "duration_s": took}})
		r.logf("workload %s: outage %s", workload, outcome)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func describeShape(wr *workloadRun) string {
	c := wr.cfg
	s := fmt.Sprintf("%d clients", c.Clients)
	if c.Rate > 0 {
		s = fmt.Sprintf("rate %.0f/s over %d clients", c.Rate, c.Clients)
	}
	if c.Shape != nil {
		s += fmt.Sprintf(", %d stages", len(wr.spec.Stages))
	}
	if c.Pool > 0 {
		s += fmt.Sprintf(", pool of %d", c.Pool)
	}
	return s + fmt.Sprintf(", for %v", c.Duration)
}

// sample reads each target's samplers that are due (every one with all)
// and records the samples; a target judged frozen is not read at the end
// (all), having nothing more to say.
func (r *run) sample(ctx context.Context, now time.Time, ivs []timeline.Interval, all bool) {
	t := now.Sub(r.start).Seconds()
	var samples []timeline.Sample
	for _, tr := range r.targets {
		if all && tr.freeze != nil && tr.freeze.frozen(t) {
			continue
		}
		samples = append(samples, r.sampleTarget(ctx, tr, now, r.targetIntervals(tr, ivs), all)...)
	}
	if r.host != nil {
		samples = append(samples, r.sampleTarget(ctx, r.host, now, nil, all)...)
	}
	if r.services != nil {
		smp := timeline.Sample{Source: svcmetric.Source, T: t, Values: r.services.SampleAt(now)}
		r.w.Add(timeline.Record{Sample: &smp})
		samples = append(samples, smp)
	}
	if err := r.w.Flush(); err != nil {
		r.logf("write timeline: %v", err)
	}
	if r.opts.OnTick != nil {
		r.opts.OnTick(t, ivs, samples)
	}
}

// targetIntervals are the intervals of the workloads that load tr.
func (r *run) targetIntervals(tr *targetRun, ivs []timeline.Interval) []timeline.Interval {
	if !r.several() {
		return ivs
	}
	var out []timeline.Interval
	for _, iv := range ivs {
		for _, wr := range r.workloads {
			if wr.tr == tr && wr.spec.Name == iv.Workload {
				out = append(out, iv)
			}
		}
	}
	return out
}

// sampleTarget reads one target's due samplers, records their samples
// and judges from them and ivs whether its server answers.
func (r *run) sampleTarget(ctx context.Context, tr *targetRun, now time.Time, ivs []timeline.Interval, all bool) []timeline.Sample {
	t := now.Sub(r.start).Seconds()
	samples := make([]timeline.Sample, 0, len(tr.samplers))
	if tr.lastRead == nil {
		tr.lastRead = make([]time.Time, len(tr.samplers))
	}
	var probe serverProbe // whether the server answered the samplers' queries (deadline.go)
	var servers []bool    // per sample: a read of the server that failed
	if tr.sampling != nil {
		probe.judge = tr.sampling.Unanswered
	}
	for i, s := range tr.samplers {
		if !all && !s.Due(now, tr.lastRead[i], r.sc.SampleInterval) {
			continue
		}
		tr.lastRead[i] = now
		t0 := time.Now()
		values, detail, err := s.Sample(ctx)
		smp := timeline.Sample{Source: s.Name(), Target: tr.name, T: t, Values: values,
			Duration: float64(time.Since(t0).Microseconds()) / 1000}
		if err != nil {
			smp.Error = err.Error()
		}
		probe.note(s.Server, err, err != nil && ctx.Err() != nil)
		if detail != nil {
			if b, merr := json.Marshal(detail); merr == nil {
				smp.Detail = b
			} else {
				smp.Error = fmt.Sprintf("encode detail: %v", merr)
			}
		}
		samples = append(samples, smp)
		servers = append(servers, s.Server && err != nil)
	}
	r.noteStall(tr, t, samples, servers, probe)
	for i := range samples {
		r.w.Add(timeline.Record{Sample: &samples[i]})
	}
	if conf, ok := tr.tgt.(backend.Configured); ok && tr.settingsDue.Swap(false) && tr.sampling != nil {
		if settings, err := conf.Settings(ctx); err == nil {
			b, _ := json.Marshal(timeline.RedactSettings(settings, r.red.Redact))
			r.w.Add(timeline.Record{Sample: &timeline.Sample{Source: conf.SettingsSource(), Target: tr.name, T: t, Detail: b}})
		} else {
			r.logf("%sreading the server's settings after a settings event: %v", tr.prefix(), err)
		}
	}
	if tr.freeze != nil {
		tr.freeze.tick(t, ivs, probe.unanswered())
	}
	return samples
}

// prefix names the target in log lines of a run of several.
func (tr *targetRun) prefix() string {
	if tr.name == "" {
		return ""
	}
	return "target " + tr.name + ": "
}

// targetErr names the target in an error of a run of several.
func targetErr(tr *targetRun, err error) error {
	if tr.name == "" || err == nil {
		return err
	}
	return fmt.Errorf("target %s: %w", tr.name, err)
}

// fire waits for an event's moment, runs it, and marks its start and end.
func (r *run) fire(ctx context.Context, ev event.Event, spec scenario.Event, tr *targetRun) {
	select {
	case <-time.After(spec.At - time.Since(r.start)):
	case <-ctx.Done():
		return
	}
	started := false
	outcome, detail, err := ev.Run(ctx, tr.env, func(d map[string]any) {
		started = true
		r.eventMark(timeline.Mark{Event: spec.Name, Target: spec.Target, Kind: spec.Kind, Phase: timeline.PhaseStart, Detail: d})
	})
	if !started {
		r.eventMark(timeline.Mark{Event: spec.Name, Target: spec.Target, Kind: spec.Kind, Phase: timeline.PhaseStart})
	}
	m := timeline.Mark{Event: spec.Name, Target: spec.Target, Kind: spec.Kind, Phase: timeline.PhaseEnd, Outcome: outcome, Detail: detail}
	if err != nil {
		m.Error = err.Error()
		r.logf("event %s (%s): %v", spec.Name, spec.Kind, err)
	} else {
		r.logf("event %s (%s): %s", spec.Name, spec.Kind, outcome)
	}
	r.keepPlannedEnd(&m, spec)
	r.eventMark(m)
	if changer, ok := ev.(event.SettingsChanger); ok && changer.ChangesSettings() && err == nil {
		tr.settingsDue.Store(true) // the clock snapshots them: it owns the samplers' session
	}
}

func (r *run) mark(m timeline.Mark) {
	if m.T == 0 { // not placed by the caller
		m.T = time.Since(r.start).Seconds()
	}
	r.w.Add(timeline.Record{Mark: &m})
	if r.opts.OnMark != nil {
		r.opts.OnMark(m)
	}
}

// collectEvidence records what the target gathers once the load has
// ended (for PostgreSQL: the top statements' plans). Failing is logged
// and recorded in the samples, never the run's failure.
func (r *run) collectEvidence(ctx context.Context) {
	if ctx.Err() != nil || !r.opts.Shard.Leads() {
		return
	}
	for _, tr := range r.targets {
		ev, ok := tr.tgt.(backend.Evidenced)
		if !ok || tr.freeze.frozen(time.Since(r.start).Seconds()) {
			continue
		}
		samples, err := ev.Evidence(ctx)
		if err != nil {
			r.logf("%s%v", tr.prefix(), err)
		}
		t := time.Since(r.start).Seconds()
		for i := range samples {
			samples[i].T, samples[i].Target = t, tr.name
			r.w.Add(timeline.Record{Sample: &samples[i]})
		}
	}
}
