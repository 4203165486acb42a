package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/capacity"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
)

// capacityOpts are the flags of firedrill capacity.
type capacityOpts struct {
	backends     *backend.Registry
	dsns         dsnFlag
	runAs        string
	allowShell   bool
	allowOutside bool
	out          string
	quiet        bool
	verbose      bool
	jsonOut      string
	scen         scenarioFlags
	junit        junitFlag

	workload  string
	slos      []string
	vary      string
	step      time.Duration
	quick     bool
	warmup    time.Duration
	tolerance float64
	confirm   int
	start     float64
	maxSteps  int
	reuse     bool
}

// Step lengths of a capacity search.
const (
	capacityStep      = 30 * time.Second
	capacityQuickStep = 10 * time.Second
	// rateClientTx is the arrival rate one client carries in a step of
	// the open model: half the scenario's default (100/s), so that
	// latencies up to 20 ms keep up without the clients being the limit;
	// pooledClientTx with a pool, where clients share its connections
	// and cost the server nothing: latencies up to 100 ms keep up.
	rateClientTx   = 50
	pooledClientTx = 10
)

func newCapacityCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	o := &capacityOpts{backends: backends}
	cmd := &cobra.Command{
		Use:   "capacity SCENARIO.yaml",
		Short: "Find the highest load that meets the SLO, and what binds there",
		Long: `Search for the highest load one workload of the scenario sustains within
the service-level objectives (--slo), by running the scenario once per step,
and say what binds at the limit.

Open model (the default, --vary rate): the workload's arrival rate grows
by doubling from --start (default: the scenario's rate) until a step fails,
then the interval between the last passing and the first failing rate is
bisected until it is within --tolerance (default 2 %). Closed model
(--vary clients): the same over the number of clients. Stages of the
workload keep their shape, scaled to each step's level; other workloads
and events run as written. Each step runs for --step (30 s, --quick 10 s;
a staged workload's own length), and its first --warmup is left out.
On the open model the rate is carried by the scenario's clients when it
gives them (a closed workload's clients, or clients written beside rate:
"the same clients" as pgbench -c), else by enough for each step (one per
50/s, one per 10/s with a pool, at least 8).

A step fails when any SLO fails (--slo 'p99<50ms', 'p95<=20ms',
'p99.9<1s', 'max<2s', 'failed<0.1%'; repeatable), when the generator did not
keep up (it issued less than 99 % of the offered rate), or when the run
ended badly. When firedrill's own CPU was saturated at a failing step (or
it fell behind while its goroutines waited for a thread), the step is run
once more, and if the same happens it says that the client, not the
system, is the limit. The best passing level
is confirmed by re-running it (--confirm, default 2 runs), and reported
with the spread of its runs; a confirming run that fails moves the search
below it.

Then: the knee (the last step before p99 doubles), the Universal Scalability
Law fitted to the steps (σ, κ, R², the peak when it lies within twice the
measured concurrency: it is never extrapolated further), and what binds: the
top findings of the diagnosis at the first failing and last passing steps,
with their remedies, and the saturation signals (the host's CPU,
firedrill's, the server's where its kind samples it, the pool's wait). A
failing step at which the server's CPU was at the cores it can use while
firedrill's was not binds on the server's CPU; on a host with no CPU left
and neither at its limit, on the host's, naming the larger user of it.

Every step is a run directory (with its report.html) under one capacity
directory in --out, which also gets capacity.html (throughput against load,
latency against load with the SLO lines, the USL curve, what bound each
step) and capacity.json. On the embedded server every step starts a fresh
server, so one step's bloat does not leak into the next; on a given server
(--dsn, confined as 'run' confines it) the steps run one after another.
With --reuse-server, one embedded server serves every step: the first
step starts it and runs the scenario's setup, each later step runs on what
the steps before it left (their data, its bloat, settings events' changes,
warm caches), restarted only when a step needs more connections than it
allows; it is stopped when the search ends, Ctrl-C included.
Ctrl-C stops the step under way, cleans up as run does, and prints what was
found so far (exit code 130). Exit code 99 when no level met the SLO.`,
		Example: `  firedrill capacity scenario.yaml --workload browse --slo 'p99<50ms' --slo 'failed<0.1%'
  firedrill capacity scenario.yaml --vary clients --slo 'p95<20ms' --quick
  firedrill capacity cache.yaml --dsn redis://:PASSWORD@127.0.0.1:6379/0 --slo 'p99<2ms' --json -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(env, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "the workload whose load is varied (default: the scenario's only one)")
	f.StringArrayVar(&o.slos, "slo", nil, "an objective every passing step meets: p50|p90|p95|p99|p99.9|max<DURATION or failed<PERCENT (repeatable), as in 'p99<50ms', 'failed<0.1%'")
	f.StringVar(&o.vary, "vary", capacity.VaryRate, "what grows: rate (open model, transactions/s) or clients (closed model)")
	f.DurationVar(&o.step, "step", capacityStep, "how long each step runs")
	f.BoolVar(&o.quick, "quick", false, "steps of 10 s instead of 30 s")
	f.DurationVar(&o.warmup, "warmup", 0, "the start of each step left out of its measures (default: a sixth of the step)")
	f.Float64Var(&o.tolerance, "tolerance", capacity.DefaultTolerance, "stop bisecting when the interval is within this share of its low end")
	f.IntVar(&o.confirm, "confirm", capacity.DefaultConfirm, "runs that re-run the best passing level to confirm it")
	f.Float64Var(&o.start, "start", 0, "the first level: a rate, or a number of clients (default: the scenario's)")
	f.IntVar(&o.maxSteps, "max-steps", capacity.DefaultMaxSteps, "the most runs the search makes, confirming runs included")
	f.BoolVar(&o.reuse, "reuse-server", false, "one embedded server for every step, set up once, instead of a fresh one per step (later steps run on what earlier ones left)")
	f.StringArrayVar(&o.dsns.args, "dsn", nil, dsnUsage)
	f.StringVar(&o.runAs, "run-as", "", runAsUsage)
	f.BoolVar(&o.allowOutside, "allow-outside-schema", false, allowOutsideUsage)
	f.BoolVar(&o.allowShell, "allow-shell", false, "allow the scenario's shell events to run commands")
	f.StringVar(&o.out, "out", "runs", "directory under which the capacity directory (a run directory per step) is created")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only the table and the summary")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print each step's run log too (server start, setup)")
	f.StringVar(&o.jsonOut, "json", "", "also write the result as JSON (schema firedrill.capacity-result/v1) to this file; - for standard output (the table then goes to standard error)")
	o.scen.add(f)
	o.junit.add(f, "the search's outcome")
	return cmd
}

// capacityPlan is what each step changes in the scenario.
type capacityPlan struct {
	base     *scenario.Scenario
	workload scenario.Workload
	vary     string
	baseMax  float64 // the workload's highest rate or clients as written; 0 when none
	step     time.Duration
	staged   bool
	// clients, on the open model, are the clients that carry every
	// step's rate when the scenario gives them (as written, or by --set);
	// 0 when it leaves them to the rate, and then each step gets enough.
	clients int
}

func (o *capacityOpts) run(env *clikit.Env, path string) error {
	env, writeJSON := env.ForJSON(o.jsonOut)
	usage := func(err error) error { return clikit.WithCode(clikit.ExitUsage, err) }
	cfg := capacity.Config{Vary: o.vary, Tolerance: o.tolerance, Confirm: o.confirm, MaxSteps: o.maxSteps}
	for _, text := range o.slos {
		slo, err := capacity.ParseSLO(text)
		if err != nil {
			return usage(err)
		}
		cfg.SLOs = append(cfg.SLOs, slo)
	}
	switch {
	case o.vary != capacity.VaryRate && o.vary != capacity.VaryClients:
		return usage(fmt.Errorf("--vary %s: want rate (the open model) or clients (the closed model)", o.vary))
	case o.vary == capacity.VaryClients && len(cfg.SLOs) == 0:
		return usage(fmt.Errorf("--vary clients needs an --slo: on the closed model nothing else fails a step (as in --slo 'p95<20ms')"))
	case o.tolerance <= 0 || o.tolerance >= 1:
		return usage(fmt.Errorf("--tolerance %g: want a share between 0 and 1, as 0.02 for 2 %%", o.tolerance))
	case o.confirm < 0 || o.maxSteps < 1:
		return usage(fmt.Errorf("--confirm must be 0 or more and --max-steps 1 or more"))
	}
	if o.quick && o.step == capacityStep {
		o.step = capacityQuickStep
	}
	warmup := o.warmup
	if warmup == 0 {
		warmup = (o.step / 6).Round(100 * time.Millisecond)
	}
	if warmup >= o.step {
		return usage(fmt.Errorf("--warmup %v leaves nothing of a %v step to measure", warmup, o.step))
	}
	dsn, named, err := o.dsns.split()
	if err != nil {
		return usage(err)
	}
	for _, url := range named {
		env.Learn(url)
	}
	env.Learn(o.runAs)
	plan, err := o.plan(env, path, dsn, named)
	if err != nil {
		return usage(err)
	}
	if plan.staged {
		warmup = min(warmup, plan.step/2)
	}
	cfg.Start = o.start
	if cfg.Start <= 0 {
		cfg.Start = plan.defaultStart()
	}
	if o.vary == capacity.VaryClients && cfg.Start != math.Floor(cfg.Start) {
		return usage(fmt.Errorf("--start %g: a number of clients is whole", cfg.Start))
	}
	// One probe of the first level before anything runs: a key the
	// overrides cannot set is a usage error now, not at step 1.
	if _, err := o.stepScenario(env, path, dsn, named, plan, cfg.Start); err != nil {
		return usage(err)
	}
	capDir := filepath.Join(o.out, "capacity-"+time.Now().UTC().Format("20060102-150405")+"-"+slug(plan.base.Name))
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		return usage(fmt.Errorf("make the capacity directory: %w", err))
	}
	rep := &capacity.Report{Scenario: plan.base.Name, Workload: plan.workload.Name, SLOs: cfg.SLOs, Dir: capDir}
	where := "the given server"
	if dsn == "" && len(named) == 0 && plan.base.Target.Embedded() && len(plan.base.Targets) == 0 {
		where = "a fresh embedded server per step"
		if o.reuse {
			where = "one embedded server for all steps (--reuse-server)"
		}
	}
	// --reuse-server: each step's run takes the embedded servers the step
	// before kept; they are stopped when the search ends, however it ends.
	var keep *backend.Keeper
	if o.reuse {
		keep = &backend.Keeper{}
		defer keep.Stop()
	}
	if !o.quiet {
		length := o.step.String()
		if plan.staged {
			length = plan.step.String() + " (the workload's stages)"
		}
		carried := ""
		if o.vary == capacity.VaryRate {
			carried = ", carried by clients growing with it"
			if plan.clients > 0 {
				carried = fmt.Sprintf(", carried by the scenario's %d clients", plan.clients)
			}
		}
		fmt.Fprintf(env.Stderr, "firedrill: capacity of %s, workload %s: varying its %s from %s%s, steps of %s (the first %v left out), on %s\n",
			plan.base.Name, plan.workload.Name, o.vary, capacity.Level(o.vary, cfg.Start), carried, length, warmup, where)
	}
	ctx, stop := env.Context()
	defer stop()
	logw := clikit.PrefixWriter(env.Stderr, "firedrill:   ")
	steps := 0
	kinds := presentation(o.backends)
	runStep := func(ctx context.Context, level float64, confirm int) (capacity.Step, error) {
		steps++
		sc, err := o.stepScenario(env, path, dsn, named, plan, level)
		if err != nil {
			return capacity.Step{}, fmt.Errorf("step %d: %w", steps, err)
		}
		what := ""
		if confirm > 0 {
			what = fmt.Sprintf(" (confirming run %d)", confirm)
		}
		if !o.quiet {
			fmt.Fprintf(env.Stderr, "firedrill: step %d: %s%s …\n", steps, capacity.Level(o.vary, level), what)
		}
		ropts := runner.Options{
			Scenario: sc, Backends: o.backends, RunDir: filepath.Join(capDir, fmt.Sprintf("step-%02d-%s", steps, levelSlug(o.vary, level))),
			DSN: dsn, RunAs: o.runAs, AllowShell: o.allowShell, AllowOutsideSchema: o.allowOutside, Version: clikit.Version,
			Command: env.CommandLine(), Secret: env.LearnSecret, Keep: keep,
		}
		if o.verbose {
			ropts.Log = logw
		}
		res, runErr := runner.Run(ctx, ropts)
		if res == nil && runErr != nil && ctx.Err() == nil {
			// A run that did not start (a server slow to answer on a
			// busy machine) is tried once more before the search gives up.
			fmt.Fprintf(env.Stderr, "firedrill: step %d did not start (%v); trying it once more\n", steps, runErr)
			ropts.RunDir += "-retry"
			res, runErr = runner.Run(ctx, ropts)
		}
		if res == nil {
			if runErr == nil {
				runErr = errors.New("the run left no result")
			}
			return capacity.Step{}, fmt.Errorf("step %d at %s: %w", steps, capacity.Level(o.vary, level), runErr)
		}
		run, err := openRun(o.backends, res.Dir)
		if err != nil {
			return capacity.Step{}, fmt.Errorf("step %d: read back the run: %w", steps, err)
		}
		findings := diagnoseRun(o.backends, run)
		if err := diagnose.Write(res.Dir, findings); err != nil {
			return capacity.Step{}, err
		}
		if err := report.WriteHTMLFile(run, findings, presentation(o.backends)); err != nil {
			return capacity.Step{}, fmt.Errorf("step %d: write the HTML report: %w", steps, err)
		}
		if rep.Server == "" {
			t := run.Manifest.Target
			rep.Server = where + " (" + t.ProductName() + " " + t.ServerVersion + ")"
			if !t.Embedded {
				rep.Server = where + " " + t.Address + " (" + t.ProductName() + " " + t.ServerVersion + ")"
			}
		}
		m := capacity.MeasureRun(run, plan.workload.Name, warmup.Seconds())
		if k, ok := kinds.Of(run.Manifest.Target); ok && k.ServerCPU != nil {
			m.ReadServerCPU(run, k.ServerCPU.Source, k.ServerCPU.Key, k.ServerCPU.MaxCores)
		}
		m.ReadServices(run, sc.Services)
		s := capacity.Step{Dir: res.Dir, Measure: m, Findings: findings, Binds: capacity.TopBinds(findings, 3)}
		if runErr != nil {
			if errors.Is(runErr, runner.ErrInterrupted) {
				return s, runErr
			}
			s.Err = runErr.Error()
		}
		return s, nil
	}
	progress := func(s *capacity.Step, lo, hi float64) {
		if o.quiet {
			return
		}
		verdict := "pass"
		if !s.Pass {
			verdict = "FAIL: " + strings.Join(s.Why, "; ")
		}
		top := ""
		if len(s.Binds) > 0 {
			top = "; top finding " + s.Binds[0].Rule
		}
		fmt.Fprintf(env.Stderr, "firedrill: step %d: %s → %s, p99 %s, %s%s; sustainable: %s\n", s.N, capacity.Level(o.vary, s.Level),
			capacity.Rate(s.Measure.Achieved), fmtMS(s.Measure.P99), verdict, top, interval(o.vary, lo, hi))
	}
	result, searchErr := capacity.Search(ctx, cfg, runStep, progress)
	if err := keep.Stop(); err != nil {
		fmt.Fprintf(env.Stderr, "firedrill: stopping the kept server: %v\n", err)
	}
	if result == nil {
		if searchErr == nil {
			searchErr = errors.New("the search left no result")
		}
		return clikit.WithCode(clikit.ExitRunAborted, searchErr)
	}
	rep.Result = result
	if rep.Server == "" {
		rep.Server = where
	}
	rep.Fit()
	if err := o.write(env, writeJSON, rep); err != nil {
		return usage(err)
	}
	switch {
	case errors.Is(searchErr, capacity.ErrInterrupted):
		return clikit.WithCode(clikit.ExitInterrupted, errors.New("capacity search interrupted: the summary is what was found so far"))
	case searchErr != nil:
		return clikit.WithCode(clikit.ExitRunAborted, searchErr)
	case result.Best == 0:
		return clikit.WithCode(clikit.ExitThresholds, fmt.Errorf("no level met the SLO (%s)", result.Stopped))
	}
	return nil
}

// write prints the table and the summary, and writes capacity.html,
// capacity.json, --json and --junit.
func (o *capacityOpts) write(env *clikit.Env, writeJSON func([]byte) error, rep *capacity.Report) error {
	fmt.Fprintln(env.Stdout)
	if err := capacity.WriteTable(env.Stdout, rep.Result); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout)
	if err := rep.WriteSummary(env.Stdout); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := capacity.WriteHTML(&page, rep); err != nil {
		return fmt.Errorf("draw %s: %w", capacity.HTMLFile, err)
	}
	if err := os.WriteFile(filepath.Join(rep.Dir, capacity.HTMLFile), page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", capacity.HTMLFile, err)
	}
	var js bytes.Buffer
	if err := capacity.WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rep.Dir, capacity.JSONFile), js.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", capacity.JSONFile, err)
	}
	if o.jsonOut != "" {
		if err := writeJSON(js.Bytes()); err != nil {
			return err
		}
	}
	if err := o.junit.write(env, []report.JUnitSuite{capacitySuite(rep)}); err != nil {
		return err
	}
	abs, _ := filepath.Abs(rep.Dir)
	fmt.Fprintf(env.Stdout, "\ncapacity directory: %s\nreport:             %s\n", abs, filepath.Join(abs, capacity.HTMLFile))
	return nil
}

// capacitySuite is the search's outcome as a JUnit suite: whether a
// level met the SLO, and whether its confirming runs did too.
func capacitySuite(rep *capacity.Report) report.JUnitSuite {
	res := rep.Result
	s := report.JUnitSuite{Name: "capacity " + rep.Scenario,
		Properties: [][2]string{{"capacity_dir", rep.Dir}, {"workload", rep.Workload}, {"vary", res.Vary},
			{"best_level", strconv.FormatFloat(res.Best, 'g', -1, 64)}, {"sustainable_tps", strconv.FormatFloat(res.Sustainable, 'f', 1, 64)}, {"stopped", res.Stopped}}}
	class := "firedrill.capacity." + rep.Workload
	found := report.JUnitCase{Class: class, Name: "a level meets the SLO", Output: res.Stopped}
	if res.Best == 0 {
		found.Failure = "no level met the SLO: " + res.Stopped
	}
	confirmed := report.JUnitCase{Class: class, Name: "the best level is confirmed", Output: fmt.Sprintf("%d confirming runs, spread %.1f %%", res.Confirmed, 100*res.Spread)}
	switch {
	case res.Best == 0:
		confirmed.Skipped = "no level to confirm"
	case res.Interrupted:
		confirmed.Skipped = "interrupted"
	case res.Confirmed == 0 && !strings.HasPrefix(res.Stopped, "converged"):
		confirmed.Failure = "not confirmed: " + res.Stopped
	}
	s.Cases = []report.JUnitCase{found, confirmed}
	return s
}

// plan loads the scenario as written (with --set) and finds the varied
// workload and what its steps change.
func (o *capacityOpts) plan(env *clikit.Env, path, dsn string, named map[string]string) (*capacityPlan, error) {
	// A scenario written for capacity may leave its length to the step.
	sc, err := o.load(env, path, dsn, named, nil)
	if err != nil {
		var err2 error
		if sc, err2 = o.load(env, path, dsn, named, []string{"duration=" + o.step.String()}); err2 != nil {
			return nil, err
		}
	}
	p := &capacityPlan{base: sc, vary: o.vary, step: o.step}
	var names []string
	for _, w := range sc.Workloads {
		names = append(names, w.Name)
	}
	switch {
	case o.workload != "":
		w, ok := sc.Workload(o.workload)
		if !ok {
			return nil, fmt.Errorf("--workload %s: %s has no such workload (it has %s)", o.workload, path, strings.Join(names, ", "))
		}
		p.workload = w
	case len(sc.Workloads) == 1:
		p.workload = sc.Workloads[0]
	default:
		return nil, fmt.Errorf("%s has several workloads (%s): name the one to vary with --workload", path, strings.Join(names, ", "))
	}
	w := p.workload
	if len(w.Stages) > 0 {
		p.staged = true
		p.step = w.StagesDuration()
		if w.Open() != (o.vary == capacity.VaryRate) {
			return nil, fmt.Errorf("workload %s: its stages set %s; vary them with --vary %s", w.Name, map[bool]string{true: "rates", false: "clients"}[w.Open()], map[bool]string{true: capacity.VaryRate, false: capacity.VaryClients}[w.Open()])
		}
	}
	if o.vary == capacity.VaryClients && w.Open() {
		return nil, fmt.Errorf("workload %s has an arrival rate (the open model): --vary clients needs one of clients alone; vary its rate (--vary rate) or --set its rate away", w.Name)
	}
	switch {
	case o.vary == capacity.VaryRate && w.Open():
		p.baseMax = w.Rate
		for _, st := range w.Stages {
			if st.Rate != nil {
				p.baseMax = max(p.baseMax, *st.Rate)
			}
		}
	case o.vary == capacity.VaryClients:
		p.baseMax = float64(w.MaxClients())
	}
	if o.vary == capacity.VaryRate {
		if p.clients, err = o.givenClients(env, path, dsn, named, w); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// givenClients returns the clients the scenario gives the workload
// for carrying a rate (a closed workload's, or an open one's written
// clients), 0 when it leaves them to the rate: the loader fills a
// default that grows with the rate, so a probe at two rates tells.
func (o *capacityOpts) givenClients(env *clikit.Env, path, dsn string, named map[string]string, w scenario.Workload) (int, error) {
	if len(w.Stages) > 0 {
		return 0, nil
	}
	if !w.Open() {
		return w.Clients, nil
	}
	clients := make([]int, 2)
	for i, rate := range []string{"1", "1000000"} {
		sc, err := o.load(env, path, dsn, named, []string{"duration=" + o.step.String(), "workloads." + w.Name + ".rate=" + rate})
		if err != nil {
			return 0, err
		}
		probe, _ := sc.Workload(w.Name)
		clients[i] = probe.MaxClients()
	}
	if clients[0] == clients[1] {
		return clients[0], nil
	}
	return 0, nil
}

// defaultStart is the first level when --start is not given: the
// scenario's own, else 100/s or 1 client.
func (p *capacityPlan) defaultStart() float64 {
	if p.baseMax > 0 {
		return p.baseMax
	}
	if p.vary == capacity.VaryClients {
		return 1
	}
	return 100
}

// overrides are the --set keys of one step at level.
func (p *capacityPlan) overrides(level float64) []string {
	w := p.workload
	key := "workloads." + w.Name + "."
	var sets []string
	if !p.staged {
		sets = append(sets, "duration="+p.step.String())
	}
	factor := 1.0
	if p.baseMax > 0 {
		factor = level / p.baseMax
	}
	if p.vary == capacity.VaryClients {
		if !p.staged {
			return append(sets, key+"clients="+strconv.Itoa(int(level)))
		}
		if w.Clients > 0 {
			sets = append(sets, key+"clients="+strconv.Itoa(max(1, int(math.Round(float64(w.Clients)*factor)))))
		}
		for i, st := range w.Stages {
			if st.Clients != nil {
				sets = append(sets, fmt.Sprintf("%sstages.%d.clients=%d", key, i, max(0, int(math.Round(float64(*st.Clients)*factor)))))
			}
		}
		return sets
	}
	if p.clients > 0 {
		sets = append(sets, key+"clients="+strconv.Itoa(p.clients))
		return append(sets, key+"rate="+strconv.FormatFloat(level, 'f', -1, 64))
	}
	perClient := float64(rateClientTx)
	if w.Pool > 0 {
		perClient = pooledClientTx
	}
	carry := max(8, int(math.Ceil(level/perClient)))
	sets = append(sets, key+"clients="+strconv.Itoa(min(carry, scenario.MaxClientsPerWorkload)))
	if !p.staged {
		return append(sets, key+"rate="+strconv.FormatFloat(level, 'f', -1, 64))
	}
	if w.Rate > 0 {
		sets = append(sets, key+"rate="+strconv.FormatFloat(w.Rate*factor, 'f', 3, 64))
	}
	for i, st := range w.Stages {
		if st.Rate != nil {
			sets = append(sets, fmt.Sprintf("%sstages.%d.rate=%s", key, i, strconv.FormatFloat(*st.Rate*factor, 'f', 3, 64)))
		}
	}
	return sets
}

// stepScenario loads the scenario as one step at level runs it: the
// user's --set, then the step's own.
func (o *capacityOpts) stepScenario(env *clikit.Env, path, dsn string, named map[string]string, p *capacityPlan, level float64) (*scenario.Scenario, error) {
	sc, err := o.load(env, path, dsn, named, p.overrides(level))
	if err != nil {
		return nil, fmt.Errorf("the scenario at %s: %w", capacity.Level(p.vary, level), err)
	}
	return sc, nil
}

// load loads the scenario with --set and extra overrides, and checks it
// as run does.
func (o *capacityOpts) load(env *clikit.Env, path, dsn string, named map[string]string, extra []string) (*scenario.Scenario, error) {
	flags := scenarioFlags{sets: append(append([]string(nil), o.scen.sets...), extra...)}
	sopts, err := flags.options(env, o.backends.ScenarioOptionsFor(dsn))
	if err != nil {
		return nil, err
	}
	sopts.DSNs = named
	sc, err := scenario.Load(path, sopts)
	if err == nil {
		err = checkNamed(sc, dsn, named)
	}
	if err != nil {
		return nil, err
	}
	env.Learn(sc.Target.DSN)
	for _, t := range sc.Targets {
		env.Learn(t.Target.DSN)
	}
	if err := report.CheckThresholdMetrics(sc, everyRule(o.backends)); err != nil {
		return nil, err
	}
	if err := runner.Validate(sc, runner.Options{Backends: o.backends, DSN: dsn, RunAs: o.runAs, AllowShell: o.allowShell, AllowOutsideSchema: o.allowOutside}); err != nil {
		return nil, err
	}
	return sc, nil
}

// interval says where the sustainable level lies after a step.
func interval(vary string, lo, hi float64) string {
	switch {
	case lo == 0 && math.IsInf(hi, 1):
		return "(nothing known yet)"
	case lo == 0:
		return "below " + capacity.Level(vary, hi)
	case math.IsInf(hi, 1):
		return "at least " + capacity.Level(vary, lo)
	}
	return "[" + capacity.Level(vary, lo) + ", " + capacity.Level(vary, hi) + ")"
}

// levelSlug names a step's run directory by its level.
func levelSlug(vary string, level float64) string {
	if vary == capacity.VaryClients {
		return fmt.Sprintf("%gc", level)
	}
	return strings.ReplaceAll(strconv.FormatFloat(level, 'f', -1, 64), ".", "_") + "tps"
}

// slug makes a scenario's name fit a directory name.
func slug(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "scenario"
	}
	return b.String()
}

// fmtMS formats µs as milliseconds for a progress line.
func fmtMS(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64) + " ms" }
