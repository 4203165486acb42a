package cli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

type runOpts struct {
	backends   *backend.Registry // the kinds of database the run may target
	dsn        string            // the plain --dsn (dsnFlag.split)
	dsns       dsnFlag
	runAs      string // --run-as: a confined account made by hand
	out        string
	allowShell bool
	// allowOutside lets a given server's setup and events reach outside
	// the schema.
	allowOutside bool
	quiet        bool
	verbose      bool
	progress     time.Duration
	jsonOut      string
	scen         scenarioFlags
	junit        junitFlag
	failOn       failOnFlag   // --fail-on warning|critical (failon.go)
	metrics      metricsFlags // --metrics-addr, --metrics-linger (metrics.go)
	shard        shardFlags   // --shard, --start-at (shard.go)
}

func newRunCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	o := &runOpts{backends: backends}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml",
		Short: "Run a scenario: workloads, events and samplers on one timeline, into a run directory",
		Long: `Run a scenario: its workloads drive load, its events happen at their
moments, and samplers read the database's insides on the same clock. Everything
goes into a new run directory (under --out, default ./runs) that
'firedrill report' reads again later.

The target is a throwaway embedded server of the scenario's kind
(target.kind, default postgres) unless the scenario names one (target.dsn)
or --dsn is given; a --dsn URL's scheme picks the kind.

On a given server the scenario is confined by the server's own privileges.
The --dsn's account is the administrator's: firedrill uses it only for its
own fixed statements (making and removing the run's account, samplers,
recording and restoring what settings events change, ending its own
sessions). Setup, workloads and the SQL or commands of events run as an
account made for the run that can touch only firedrill's namespace: the
schema setup.schema (default "firedrill") on PostgreSQL, the database of
that name on MariaDB/MySQL, the keys under "firedrill:" on Redis; the server
refuses the rest. The account is removed at the end, also after Ctrl-C; a
killed run's is removed by the next run or 'firedrill restore'. If the
--dsn's account may not make accounts, the run stops before anything runs
and prints the statements an administrator runs to make one ('firedrill
grant' prints them too): pass that account with --run-as URL.
--allow-outside-schema gives the confinement up: everything runs as the
--dsn's account, as written. Without it, SQL or commands that name what lies
outside the namespace are also refused before anything runs, as an early
warning ('validate' says so without a server). Settings events are restored
at the end, also after Ctrl-C ('firedrill restore' after a kill).
docs/given-server.md has the details per kind.

On Redis (redis://host:port/db, or rediss:// for TLS with redis-cli's
options as parameters: ?cacert=FILE, cert=FILE&key=FILE, insecure=true;
docs/redis.md) the run's ACL user may use only keys "firedrill:*", no admin
or dangerous commands, also from Lua; CONFIG SET by settings events is
restored the same way.
A MariaDB/MySQL URL (mysql://…) takes ?tls=true
(verify the server against the system's CAs, or ?ssl-ca=/path/ca.pem),
?tls=skip-verify, ?tls=preferred (TLS when offered) and ?socket=/path.

While it runs, one line per workload every --progress interval shows
throughput, p50/p99, failures and clients, then the database's active
sessions and top wait event. Ctrl-C stops it cleanly: transactions are rolled
back, the embedded server is removed, and the run directory keeps what was
measured (status "interrupted", exit code 130). A server that stops
answering cannot hold the run past its duration plus 5 s: it ends then,
with status "degraded" and exit code 3, the frozen window marked as an
outage; a server that dies (unreachable when the load ends) ends the run
"degraded", exit code 3, too. Other errors: status "failed", exit code 1
when transactions kept failing (abort_on_failure), 2 otherwise
(docs/run-directory.md, "Status"). A run that completed exits 99 when a
threshold failed, or with --fail-on warning|critical when its diagnosis
has a finding of that severity or worse (the summary lists them).

--set KEY=VALUE changes a key of the scenario as it is loaded, as if
written in the file (repeatable; lists' items by name or index):
--set workloads.oltp.clients=64, --set duration=30s. The file may use
${NAME} and ${NAME:-default} for environment variables. Both are checked
as the file is, and a problem is told at its --set argument or the file's
line and column (scenario/README.md, "Parameters").

--shard i/N --start-at T runs one shard of a run split over machines or
pods (docs/sharding.md); 'firedrill merge' combines the shards' run
directories into one.`,
		Example: `  firedrill run examples/healthy.yaml
  firedrill run scenario.yaml --set workloads.oltp.clients=64 --set duration=30s
  firedrill run scenario.yaml --json - | jq .thresholds
  firedrill run scenario.yaml --dsn postgres://admin@db:5432/stage --out runs/
  firedrill run scenario.yaml --dsn postgres://admin@db:5432/stage --run-as "$RUNNER_URL"
  firedrill run cache.yaml --dsn redis://:PASSWORD@127.0.0.1:6379/0
  firedrill run cache.yaml --dsn 'rediss://:PASSWORD@cache:6380/0?cacert=ca.crt'
  firedrill run stock.yaml --dsn 'mysql://app:PASSWORD@db:3306/shop?tls=true&ssl-ca=ca.pem'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(env, args[0]) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.dsns.args, "dsn", nil, dsnUsage)
	f.StringVar(&o.out, "out", "runs", "directory under which the run directory is created")
	f.BoolVar(&o.allowShell, "allow-shell", false, "allow the scenario's shell events to run commands")
	f.StringVar(&o.runAs, "run-as", "", runAsUsage)
	f.BoolVar(&o.allowOutside, "allow-outside-schema", false, allowOutsideUsage)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only the final summary")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print each live finding's evidence too, not just its line")
	f.DurationVar(&o.progress, "progress", 5*time.Second, "interval between progress lines (0 = every sample tick)")
	f.StringVar(&o.jsonOut, "json", "", "also write the result as JSON (schema firedrill.run-result/v1, docs/json.md) to this file; - for standard output (the summary then goes to standard error)")
	o.scen.add(f)
	o.junit.add(f, "the thresholds")
	o.failOn.add(f, "the run's diagnosis")
	o.metrics.register(f)
	o.shard.add(f)
	return cmd
}

func (o *runOpts) run(env *clikit.Env, path string) error {
	env, writeJSON := env.ForJSON(o.jsonOut)
	dsn, named, err := o.dsns.split()
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	o.dsn = dsn
	for _, url := range named {
		env.Learn(url)
	}
	sopts, err := o.scen.options(env, o.backends.ScenarioOptionsFor(o.dsn))
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	sopts.DSNs = named
	sc, err := scenario.Load(path, sopts)
	if err == nil {
		err = checkNamed(sc, dsn, named)
	}
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	env.Learn(sc.Target.DSN)
	for _, t := range sc.Targets {
		env.Learn(t.Target.DSN)
	}
	env.Learn(o.runAs)
	if err := report.CheckThresholdMetrics(sc, everyRule(o.backends)); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(env.Stderr, "firedrill: %v\n", w)
	}
	ctx, stop := env.Context()
	defer stop()
	metrics, err := o.metrics.start(env, o.backends)
	if err != nil {
		return err
	}
	defer metrics.stop(ctx)
	logw := clikit.PrefixWriter(env.Stderr, "firedrill: ")
	prog := &report.Progress{W: env.Stderr, Every: o.progress.Seconds(), Total: sc.Duration.Seconds(), Kinds: presentation(o.backends), Targets: workloadTargets(sc)}
	ropts := runner.Options{
		Scenario: sc, Backends: o.backends, OutDir: o.out, DSN: o.dsn, RunAs: o.runAs, AllowShell: o.allowShell, AllowOutsideSchema: o.allowOutside, Version: clikit.Version,
		Command: env.CommandLine(),
		Log:     logw,
		Secret:  env.LearnSecret,
	}
	if err := o.shard.apply(&ropts); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	var runDir atomic.Value
	runDir.Store("")
	live := &liveDiagnosis{backends: o.backends, w: env.Stderr, dir: func() string { return runDir.Load().(string) }, verbose: o.verbose,
		quiet: o.quiet, onPass: metrics.findings}
	ropts.OnStart = func(dir string) { runDir.Store(dir) }
	if !o.quiet {
		ropts.OnTick = func(t float64, ivs []timeline.Interval, samples []timeline.Sample) {
			prog.Tick(t, ivs, samples)
			live.tick(t)
		}
		fmt.Fprintf(env.Stderr, "firedrill: running %s for %v (samples every %v)\n", sc.Name, sc.Duration, sc.SampleInterval)
	} else {
		ropts.Log = nil
		if metrics != nil { // the live diagnosis feeds firedrill_finding, printing nothing
			ropts.OnTick = func(t float64, _ []timeline.Interval, _ []timeline.Sample) { live.tick(t) }
		}
	}
	metrics.hook(&ropts, sc, o.dsn)
	// The final diagnosis is served before the run is marked finished;
	// on the way out without one, the run is still marked finished.
	defer metrics.finish()
	res, runErr := runner.Run(ctx, ropts)
	live.wait()
	if res == nil {
		if errors.Is(runErr, runner.ErrInterrupted) {
			return clikit.WithCode(clikit.ExitInterrupted, runErr)
		}
		return clikit.WithCode(clikit.ExitUsage, runErr)
	}
	// From here on only the directory: the summary is read back from it
	// with the rest, and res's copy, no longer referenced, need not stay
	// (a 100,000-command script's is tens of MB; issue 14).
	dir := res.Dir
	run, err := openRun(o.backends, dir)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("read back the run: %w", err))
	}
	findings := diagnoseRun(o.backends, run)
	if err := diagnose.Write(dir, findings); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	live.summary(findings)
	metrics.findings(findings)
	metrics.finish()
	if err := report.WriteHTMLFile(run, findings, presentation(o.backends)); err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("write the HTML report: %w", err))
	}
	fmt.Fprintln(env.Stdout)
	if err := report.WriteSummary(env.Stdout, run, findings); err != nil {
		return err
	}
	thresholds := report.EvaluateThresholds(o.shard.thresholds(sc, env.Stderr), run, findings, everyRule(o.backends))
	if len(thresholds) > 0 {
		fmt.Fprintln(env.Stdout)
		if err := report.WriteThresholds(env.Stdout, thresholds); err != nil {
			return err
		}
	}
	if o.jsonOut != "" {
		if err := writeRunJSON(writeJSON, run, findings, thresholds); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
	}
	if err := o.junit.writeRun(env, run, thresholds); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(env.Stdout, "\nrun directory: %s\nreport:        %s\n", abs, filepath.Join(abs, timeline.ReportFile))
	if runErr != nil {
		if errors.Is(runErr, runner.ErrInterrupted) {
			return clikit.WithCode(clikit.ExitInterrupted, runErr)
		}
		if errors.Is(runErr, runner.ErrDegraded) {
			return clikit.WithCode(clikit.ExitDegraded, runErr)
		}
		if errors.Is(runErr, runner.ErrFailing) {
			return clikit.WithCode(clikit.ExitRunFailed, runErr)
		}
		return clikit.WithCode(clikit.ExitRunAborted, runErr)
	}
	failOn := o.failOn.check("", findings)
	if failed := report.FailedThresholds(thresholds); len(failed) > 0 {
		names := make([]string, len(failed))
		for i, r := range failed {
			names[i] = r.Metric + " " + r.Condition
		}
		err := fmt.Errorf("%d of %d thresholds failed: %s", len(failed), len(thresholds), strings.Join(names, "; "))
		if failOn != nil {
			err = fmt.Errorf("%w; %v", err, failOn)
		}
		return clikit.WithCode(clikit.ExitThresholds, err)
	}
	return failOn
}

// The flags of a given server's confinement, as run and k8s's run
// arguments take them.
const (
	runAsUsage = "on a given server, run setup, workloads and events' SQL or commands as this confined account " +
		"(connection string or URL; made by hand as 'firedrill grant' prints) instead of one the run makes and removes"
	allowOutsideUsage = "on a given server, give up the confinement: setup, scripts and events run as the --dsn's account " +
		"and may name objects outside the scenario's schema (refused by default)"
)

// writeRunJSON writes --json: the run's result for CI (docs/json.md).
func writeRunJSON(write func([]byte) error, run *timeline.Run, findings []diagnose.Finding, thresholds []report.ThresholdResult) error {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, run, findings, thresholds); err != nil {
		return err
	}
	return write(buf.Bytes())
}

func newValidateCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	var runAs string
	var dsns dsnFlag
	var allowShell, allowOutside bool
	var scen scenarioFlags
	cmd := &cobra.Command{
		Use:   "validate SCENARIO.yaml...",
		Short: "Check scenario files and list every problem with file:line:col",
		Long: `Check scenario files without running them: the YAML against the schema
(unknown keys are errors), durations and sizes, event kinds and their fields,
threshold metrics, and every workload script, parsed in its target's dialect
(PostgreSQL's SQL as pgbench reads it, MySQL's, or Redis commands; the kind
is target.kind, else the --dsn's or target.dsn's URL scheme).
Events that 'run' would refuse are errors too: shell events without
--allow-shell, and on a given server (--dsn or target.dsn) events that
restart the server or need its files.

On a given server a run confines the scenario by the server's own
privileges: setup, workloads and the SQL or commands of events run as an
account that can touch only firedrill's namespace (the schema setup.schema,
default "firedrill"; the database of that name on MariaDB/MySQL; the keys
under "firedrill:" on Redis), made for the run by the --dsn's account or
given with --run-as URL, and the server refuses the rest ('firedrill grant'
prints how to make one by hand). validate cannot ask the server, so it
checks the text instead, as an early warning: SQL or commands in setup,
scripts or events that name what lies outside the namespace are errors,
unless --allow-outside-schema, which gives the confinement up (run also
knows the server's other schemas). Give validate the --dsn, --run-as,
--allow-shell and --allow-outside-schema you will give run (it does not
connect). Every problem of a file is listed in one run, in file order,
each with file:line:col: besides the above, a variable a script reads but
nothing sets (:idd for :id), a Redis command Redis does not have (SETT),
and target.settings with --dsn (they apply only to the server firedrill
starts); SQL is left to the server. Exit code 0
when all files are valid, 1 otherwise. --set and ${NAME} apply as they do
for run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			dsn, named, err := dsns.split()
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			sopts, err := scen.options(env, backends.ScenarioOptionsFor(dsn))
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			sopts.DSNs = named
			// Every check runs, on what of the file could be read, so that
			// one run lists every problem, in file order.
			sopts.Partial = true
			for _, path := range args {
				sc, err := scenario.Load(path, sopts)
				if sc != nil {
					err = scenario.Gather(path, err,
						checkNamed(sc, dsn, named),
						report.CheckThresholdMetrics(sc, everyRule(backends)),
						runner.Validate(sc, runner.Options{Backends: backends, DSN: dsn, RunAs: runAs, AllowShell: allowShell, AllowOutsideSchema: allowOutside}))
				}
				if err != nil {
					fmt.Fprintln(env.Stderr, err)
					bad++
					continue
				}
				for _, w := range sc.Warnings {
					fmt.Fprintln(env.Stderr, w)
				}
				fmt.Fprintf(env.Stdout, "%s: ok%s\n", path, describeTargets(sc, backends))
			}
			if bad > 0 {
				return clikit.WithCode(clikit.ExitUsage, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dsns.args, "dsn", nil, "judge the events as for a run against this server (not contacted); NAME=URL for a target of several (repeatable)")
	cmd.Flags().BoolVar(&allowShell, "allow-shell", false, "judge the events as for a run with --allow-shell")
	cmd.Flags().StringVar(&runAs, "run-as", "", "judge the scenario as for a run with this --run-as (not contacted)")
	cmd.Flags().BoolVar(&allowOutside, "allow-outside-schema", false, "judge the SQL as for a run with --allow-outside-schema")
	scen.add(cmd.Flags())
	return cmd
}

func newReportCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	write := false
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Summarize a run directory again: totals, latency, errors, events, findings",
		Long: `Read a run directory again and print its summary: how the run ended,
each workload's totals and latency percentiles, errors by code (SQLSTATE,
MariaDB's error number, Redis's error prefix), events, and the findings.
The rules run again on the recorded timeline, so an old run gets today's
diagnosis. With --write, findings.json and report.html in
the directory are rewritten too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A run left "running" by a killed firedrill says so from now on.
			if _, err := timeline.SettleKilled(args[0]); err != nil {
				fmt.Fprintf(env.Stderr, "firedrill: %v\n", err)
			}
			run, err := openRun(backends, args[0])
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			findings := diagnoseRun(backends, run)
			if write {
				if err := diagnose.Write(run.Dir, findings); err != nil {
					return clikit.WithCode(clikit.ExitUsage, err)
				}
				if err := report.WriteHTMLFile(run, findings, presentation(backends)); err != nil {
					return clikit.WithCode(clikit.ExitUsage, err)
				}
			}
			if err := report.WriteSummary(env.Stdout, run, findings); err != nil {
				return err
			}
			if write {
				fmt.Fprintf(env.Stdout, "\nreport: %s\n", filepath.Join(run.Dir, timeline.ReportFile))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&write, "write", false, "rewrite findings.json and report.html in the run directory")
	return cmd
}

// workloadTargets names each workload's target in a scenario of several
// (targets:), for the live progress lines; nil in a scenario of one.
func workloadTargets(sc *scenario.Scenario) map[string]string {
	if len(sc.Targets) == 0 {
		return nil
	}
	out := make(map[string]string, len(sc.Workloads))
	for _, w := range sc.Workloads {
		out[w.Name] = w.Target
	}
	return out
}
