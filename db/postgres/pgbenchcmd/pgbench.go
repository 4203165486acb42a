// Package pgbenchcmd is firedrill pgbench, PostgreSQL's own command:
// pgbench's options, scripts and summary, plus latency percentiles and a
// JSON document. The PostgreSQL backend offers it to the command line
// (backend.Commander), which names no database itself.
package pgbenchcmd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/db/postgres/client/tpcb"
	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/script"
)

// pgbenchOpts are pgbench's options plus firedrill's own.
type pgbenchOpts struct {
	// connection
	host, port, user, dbname, dsn string
	embedded                      bool
	pgSettings                    []string

	// initialization
	initialize      bool
	initSteps       string
	fillFactor      int
	quiet           bool
	scale           int
	foreignKeys     bool
	unlogged        bool
	partitions      int
	partitionMethod string
	tablespace      string
	indexTablespace string

	// benchmarking
	scripts           scriptList
	clients, jobs     int
	connect           bool
	defines           []string
	log               bool
	latencyLimitMS    float64
	mode              string
	noVacuum          bool
	progress          int
	perCommand        bool
	rate              float64
	transactions      int
	duration          int
	vacuumAll         bool
	aggInterval       int
	failuresDetailed  bool
	logPrefix         string
	maxTries          int
	progressTimestamp bool
	randomSeed        string
	samplingRate      float64
	showScript        string
	verboseErrors     bool
	debug             bool

	// firedrill
	jsonPath   string
	cpuProfile string
	metrics    promexport.Flags // --metrics-addr, --metrics-linger (metrics.go)
	names      promexport.Names // PostgreSQL's key tables, for the metrics' names
}

// scriptArg is one -f / -b / -S / -N in command-line order.
type scriptArg struct {
	builtin bool
	name    string // file or builtin name, with any @weight
}

// scriptList collects script options in the order given, as pgbench
// numbers scripts by their position on the command line.
type scriptList struct {
	args []scriptArg
}

// scriptFlag is a pflag.Value appending to a scriptList.
type scriptFlag struct {
	list    *scriptList
	builtin bool
	fixed   string // for -S / -N: the builtin they stand for
}

func (f *scriptFlag) String() string { return "" }
func (f *scriptFlag) Type() string {
	if f.fixed != "" {
		return "bool"
	}
	if f.builtin {
		return "name[@weight]"
	}
	return "file[@weight]"
}
func (f *scriptFlag) Set(v string) error {
	if f.fixed != "" {
		f.list.args = append(f.list.args, scriptArg{builtin: true, name: f.fixed})
		return nil
	}
	f.list.args = append(f.list.args, scriptArg{builtin: f.builtin, name: v})
	return nil
}

// New returns the pgbench command, run in env; names are PostgreSQL's key
// tables, for its live metrics (--metrics-addr).
func New(env *clikit.Env, names promexport.Names) *cobra.Command {
	o := &pgbenchOpts{names: names}
	cmd := &cobra.Command{
		Use:   "pgbench [OPTION]... [DBNAME]",
		Short: "Run pgbench's benchmark, with latency percentiles, on an embedded or given server",
		Long: `firedrill pgbench accepts pgbench's options, scripts and builtin scripts and
prints pgbench's summary (so tools that read it keep working), plus latency
percentiles (p50/p90/p95/p99/p99.9/max) overall, per script and, with -r,
per command.

Without -h/-p/-U/DBNAME/--dsn (or PGHOST/PGPORT/PGUSER/PGDATABASE in the
environment) it starts a throwaway PostgreSQL from the server binaries on
this machine, initializes pgbench's tables when a builtin script needs
them (-s applies), and removes the server when done. As root, that server
runs as the unprivileged system user "firedrill", which is created if
missing, because PostgreSQL refuses to run as root.`,
		Example: `  firedrill pgbench -c 8 -T 30 -P 5
  firedrill pgbench -S -c 8 -T 10 -M prepared --json out.json
  firedrill pgbench -h /run/pg -p 5432 -U app -f multixact.sql@9 -f read.sql@1 -R 2000 --latency-limit 50 mydb`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.dbname = args[0]
			}
			return runPgbench(env, cmd, o)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	// cobra reserves -h for help; pgbench uses it for the host.
	f.Bool("help", false, "show this help")

	f.BoolVarP(&o.initialize, "initialize", "i", false, "invokes initialization mode")
	f.StringVarP(&o.initSteps, "init-steps", "I", "", "run selected initialization steps (dtgGvpf)")
	f.IntVarP(&o.fillFactor, "fillfactor", "F", 100, "set fill factor")
	f.BoolVarP(&o.noVacuum, "no-vacuum", "n", false, "do not run VACUUM during initialization or before the test")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "quiet logging (one message each 5 seconds)")
	f.IntVarP(&o.scale, "scale", "s", 1, "scaling factor")
	f.BoolVar(&o.foreignKeys, "foreign-keys", false, "create foreign key constraints between tables")
	f.StringVar(&o.indexTablespace, "index-tablespace", "", "create indexes in the specified tablespace")
	f.StringVar(&o.partitionMethod, "partition-method", "", "partition pgbench_accounts with this method (range or hash)")
	f.IntVar(&o.partitions, "partitions", 0, "partition pgbench_accounts into NUM parts")
	f.StringVar(&o.tablespace, "tablespace", "", "create tables in the specified tablespace")
	f.BoolVar(&o.unlogged, "unlogged-tables", false, "create tables as unlogged tables")

	f.VarP(&scriptFlag{list: &o.scripts, builtin: true}, "builtin", "b", "add builtin script NAME weighted at W (default: 1); \"list\" shows them")
	f.VarP(&scriptFlag{list: &o.scripts}, "file", "f", "add script FILENAME weighted at W (default: 1)")
	f.VarPF(&scriptFlag{list: &o.scripts, fixed: "simple-update"}, "skip-some-updates", "N", "skip updates of pgbench_tellers and pgbench_branches (same as \"-b simple-update\")").NoOptDefVal = "true"
	f.VarPF(&scriptFlag{list: &o.scripts, fixed: "select-only"}, "select-only", "S", "perform SELECT-only transactions (same as \"-b select-only\")").NoOptDefVal = "true"
	f.IntVarP(&o.clients, "client", "c", 1, "number of concurrent database clients")
	f.BoolVarP(&o.connect, "connect", "C", false, "establish new connection for each transaction")
	f.StringArrayVarP(&o.defines, "define", "D", nil, "define variable for use by custom script (NAME=VALUE)")
	f.IntVarP(&o.jobs, "jobs", "j", 1, "number of threads (event loops the clients are divided among)")
	f.BoolVarP(&o.log, "log", "l", false, "write transaction times to log file")
	f.Float64VarP(&o.latencyLimitMS, "latency-limit", "L", 0, "count transactions lasting more than NUM ms as late")
	f.StringVarP(&o.mode, "protocol", "M", "simple", "protocol for submitting queries (simple, extended, prepared)")
	f.IntVarP(&o.progress, "progress", "P", 0, "show thread progress report every NUM seconds (with p50/p99)")
	f.BoolVarP(&o.perCommand, "report-per-command", "r", false, "report latencies, failures, retries and percentiles per command")
	f.Float64VarP(&o.rate, "rate", "R", 0, "target rate in transactions per second (Poisson arrivals; latency from the scheduled start)")
	f.IntVarP(&o.transactions, "transactions", "t", 0, "number of transactions each client runs (default: 10)")
	f.IntVarP(&o.duration, "time", "T", 0, "duration of benchmark test in seconds")
	f.BoolVarP(&o.vacuumAll, "vacuum-all", "v", false, "vacuum all four standard tables before tests")
	f.IntVar(&o.aggInterval, "aggregate-interval", 0, "aggregate data over NUM seconds (with -l)")
	f.BoolVar(&o.failuresDetailed, "failures-detailed", false, "report the failures grouped by basic types")
	f.StringVar(&o.logPrefix, "log-prefix", "pgbench_log", "prefix for transaction time log file")
	f.IntVar(&o.maxTries, "max-tries", 1, "max number of tries to run transaction (0 = unlimited, needs -T or -L)")
	f.BoolVar(&o.progressTimestamp, "progress-timestamp", false, "use Unix epoch timestamps for progress")
	f.StringVar(&o.randomSeed, "random-seed", "", "set random seed (\"time\", \"rand\", integer); with the same -c and -j, random functions give pgbench 15's values")
	f.Float64Var(&o.samplingRate, "sampling-rate", 0, "fraction of transactions to log (e.g., 0.01 for 1%)")
	f.StringVar(&o.showScript, "show-script", "", "show builtin script code, then exit")
	f.BoolVar(&o.verboseErrors, "verbose-errors", false, "print messages of all errors")
	f.BoolVar(&o.debug, "debug", false, "print debugging output")

	f.StringVarP(&o.host, "host", "h", "", "database server host or socket directory")
	f.StringVarP(&o.port, "port", "p", "", "database server port number")
	f.StringVarP(&o.user, "username", "U", "", "connect as specified database user")
	f.StringVarP(&o.dbname, "dbname", "d", "", "database name to connect to")
	f.StringVar(&o.dsn, "dsn", "", "connection string (key=value or postgres:// URL) instead of -h/-p/-U/DBNAME")
	f.BoolVar(&o.embedded, "embedded", false, "use a throwaway embedded server even if PG* variables are set")
	f.StringArrayVar(&o.pgSettings, "pg-setting", nil, "setting for the embedded server (NAME=VALUE, repeatable)")
	f.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to FILE (- for standard output; the report then goes to standard error)")
	o.metrics.Register(f)
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark to FILE (for firedrill's developers)")
	_ = f.MarkHidden("cpuprofile")
	return cmd
}

// usageError is a bad option: exit 1 with pgbench's wording where it has one.
func usageError(format string, args ...any) error {
	return clikit.WithCode(clikit.ExitUsage, fmt.Errorf(format, args...))
}

func runPgbench(env *clikit.Env, cmd *cobra.Command, o *pgbenchOpts) error {
	if h, _ := cmd.Flags().GetBool("help"); h {
		return cmd.Help()
	}
	env, writeJSON := env.ForJSON(o.jsonPath) // --json -: JSON on stdout, the report on stderr
	stderr := env.Stderr
	for _, a := range o.scripts.args {
		if a.builtin && a.name == "list" {
			printBuiltinList(env)
			return nil
		}
	}
	if o.showScript != "" {
		info, err := script.FindBuiltin(o.showScript)
		if err != nil {
			return usageError("%v", err)
		}
		fmt.Fprintf(stderr, "-- %s: %s\n%s\n", info.Name, info.Desc, info.Source)
		return nil
	}
	if err := o.validate(cmd.Flags()); err != nil {
		return err
	}

	// Parse every script before starting anything: a bad script must fail
	// fast and leave nothing behind.
	syms := script.NewSymbols()
	scripts, builtinUsed, err := o.loadScripts(env, syms)
	if err != nil && !o.initialize {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if o.perCommand {
		for _, s := range scripts {
			if warn := engine.ManyCommandsWarning(len(s.Commands)); warn != "" {
				fmt.Fprintf(env.Stderr, "warning: %s: %s\n", s.Name, warn)
			}
		}
	}
	defines, err := parseDefines(o.defines)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	mode, err := pgtarget.ParseQueryMode(o.mode)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if mode != pgtarget.Simple {
		for _, s := range scripts {
			if err := s.CheckExtended(); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
		}
	}
	totalWeight := 0
	for _, s := range scripts {
		totalWeight += s.Weight
	}
	if len(scripts) > 0 && totalWeight == 0 {
		return usageError("total script weight must not be zero")
	}
	seed, err := parseSeed(o.randomSeed, env.Getenv("PGBENCH_RANDOM_SEED"))
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if o.randomSeed != "" || env.Getenv("PGBENCH_RANDOM_SEED") != "" {
		// As pgbench, so that a run can be replayed (with the same -c).
		fmt.Fprintf(stderr, "firedrill: setting random seed to %d\n", seed)
	}

	ctx, stop := env.Context()
	defer stop()
	// Bound before the server starts, so that a busy port fails first.
	endpoint, err := o.metrics.Start(stderr, o.names)
	if err != nil {
		return err
	}
	defer endpoint.Stop(ctx)

	connString, embeddedInst, err := o.openTarget(ctx, env)
	env.Learn(connString) // a password pgconn finds for -h/-p/-U in a passfile
	if embeddedInst != nil {
		defer func() {
			if err := embeddedInst.Stop(); err != nil {
				fmt.Fprintf(stderr, "firedrill: stopping the embedded server: %v\n", err)
			}
		}()
	}
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	appName := "firedrill pgbench"
	target, err := pgtarget.NewTarget(connString, mode, appName)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	admin, err := target.ConnectRaw(ctx)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("%w\nIs the server running and accepting connections there? Check -h/-p/-U or --dsn, or drop them to use an embedded server.", err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = admin.Close(cctx)
	}()

	initOpts := tpcb.InitOptions{
		Scale: o.scale, FillFactor: o.fillFactor, Steps: o.initSteps, ForeignKeys: o.foreignKeys,
		Unlogged: o.unlogged, Partitions: o.partitions, PartitionMethod: o.partitionMethod,
		Tablespace: o.tablespace, IndexTablespace: o.indexTablespace, Quiet: o.quiet,
	}
	if o.noVacuum && o.initSteps == "" {
		initOpts.Steps = strings.ReplaceAll(tpcb.DefaultSteps, "v", "")
	}
	if o.initialize {
		if err := tpcb.Init(ctx, admin, initOpts, stderr); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		if embeddedInst != nil {
			fmt.Fprintln(stderr, "firedrill: note: the embedded server is removed on exit; run the benchmark without -i and it initializes itself")
		}
		return nil
	}

	// :scale, as pgbench sets it: from pgbench_branches for builtins.
	scale := o.scale
	existing, haveTables, err := tpcb.Scale(ctx, admin)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if builtinUsed {
		if !haveTables && embeddedInst != nil {
			if err := tpcb.Init(ctx, admin, initOpts, stderr); err != nil {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("initializing the embedded server: %w", err))
			}
			existing, haveTables = scale, true
		}
		if !haveTables {
			return usageError("pgbench_branches does not exist on %s; run \"firedrill pgbench -i\" (or pgbench -i) against it first", target.Addr())
		}
		if cmd.Flags().Changed("scale") && existing != scale {
			fmt.Fprintf(stderr, "pgbench: warning: scale option ignored, using count from pgbench_branches table (%d)\n", existing)
		}
		scale = existing
	}
	partMethod, partCount := "none", 0
	if haveTables {
		if m, n, err := tpcb.PartitionInfo(ctx, admin); err == nil {
			partMethod, partCount = m, n
		}
	}

	if !o.noVacuum {
		fmt.Fprint(stderr, "starting vacuum...")
		vacuum(ctx, admin, o.vacuumAll)
		fmt.Fprintln(stderr, "end.")
	}
	if ctx.Err() != nil {
		return clikit.WithCode(clikit.ExitInterrupted, errors.New("interrupted before the benchmark started"))
	}

	fmt.Fprintf(env.Stdout, "pgbench (firedrill %s, server %s)\n", clikit.Version, admin.ParameterStatus("server_version"))

	cfg := engine.Config{
		Scripts: scripts, Symbols: syms, Defines: defines, Scale: scale,
		Clients: o.clients, Transactions: o.transactions, Duration: time.Duration(o.duration) * time.Second,
		Rate: o.rate, LatencyLimit: time.Duration(o.latencyLimitMS * float64(time.Millisecond)),
		MaxTries: o.maxTries, PerCommand: o.perCommand, Connect: o.connect,
		RandomSeed: seed, Stderr: stderr,
	}
	if cfg.Duration == 0 && cfg.Transactions == 0 {
		cfg.Transactions = 10 // pgbench's default
	}
	rep := &pgbenchReport{opts: o, cfg: &cfg, mode: mode, scale: scale, partMethod: partMethod, partitions: partCount}
	if o.progress > 0 {
		cfg.Progress = time.Duration(o.progress) * time.Second
		cfg.OnProgress = func(p *engine.Progress) { rep.printProgress(stderr, p) }
	}
	live := newLiveFeed(endpoint, cfg.Duration)
	switch {
	case live != nil && o.progress > 0:
		// -P's intervals feed the exporter too; FinalProgress stays off,
		// as it would move -P's last line: live.finish feeds the rest.
		cfg.OnProgress = func(p *engine.Progress) { rep.printProgress(stderr, p); live.progress(p) }
	case live != nil:
		// The exporter's own intervals, printing nothing (pgbench prints
		// progress only with -P); the engine reports the last one.
		cfg.Progress, cfg.OnProgress, cfg.FinalProgress = time.Second, live.progress, true
	}
	var txlog *engine.PgbenchLog
	if o.log {
		name := fmt.Sprintf("%s.%d", o.logPrefix, os.Getpid())
		f, err := os.Create(name)
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("could not open logfile %q: %w", name, err))
		}
		defer f.Close()
		txlog = engine.NewPgbenchLog(f, engine.PgbenchLogOptions{
			Throttled: o.rate > 0, Retries: o.maxTries != 1, FailuresDetailed: o.failuresDetailed,
			LatencyLimit: o.latencyLimitMS > 0, SampleRate: o.samplingRate, AggregateSeconds: o.aggInterval,
			Seed: sampleSeed(seed, o.clients, o.jobs, defines),
		})
		cfg.Log = txlog
	}

	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		defer stopProfile()
	}
	// -j is pgbench's number of threads: here, the number of event loops
	// the clients are divided among (see engine/loop.go).
	cfg.Threads = o.jobs
	res, runErr := engine.Run(ctx, target, cfg)
	live.finish(res, cfg.Clients, cfg.Rate)
	if txlog != nil {
		if err := txlog.Close(); err != nil {
			fmt.Fprintf(stderr, "firedrill: writing the transaction log: %v\n", err)
		}
	}
	if res == nil {
		return clikit.WithCode(clikit.ExitUsage, runErr)
	}
	rep.printSummary(env.Stdout, res)
	if o.jsonPath != "" {
		if err := rep.writeJSON(writeJSON, res); err != nil {
			fmt.Fprintf(stderr, "firedrill: %v\n", err)
			return clikit.WithCode(clikit.ExitUsage, err)
		}
	}
	switch {
	case res.Interrupted:
		fmt.Fprintln(stderr, "firedrill: interrupted; the results above cover the run so far")
		return clikit.WithCode(clikit.ExitInterrupted, nil)
	case runErr != nil:
		fmt.Fprintf(stderr, "pgbench: error: %v\n", runErr)
		return clikit.WithCode(clikit.ExitRunAborted, nil)
	}
	return nil
}

func (o *pgbenchOpts) validate(flags *pflag.FlagSet) error {
	switch {
	case o.clients < 1:
		return usageError("-c/--clients must be in range 1..%d", 1<<31-1)
	case o.transactions < 0:
		return usageError("-t/--transactions must be in range 1..%d", 1<<31-1)
	case o.duration < 0:
		return usageError("-T/--time must be in range 1..%d", 1<<31-1)
	case o.transactions > 0 && o.duration > 0:
		return usageError("specify either a number of transactions (-t) or a duration (-T), not both")
	case flags.Changed("rate") && o.rate <= 0:
		return usageError("invalid rate limit: %q", flags.Lookup("rate").Value.String())
	case flags.Changed("latency-limit") && o.latencyLimitMS <= 0:
		return usageError("invalid latency limit: %q", flags.Lookup("latency-limit").Value.String())
	case o.maxTries < 0:
		return usageError("invalid number of maximum tries: \"%d\"", o.maxTries)
	case o.maxTries == 0 && o.latencyLimitMS == 0 && o.duration == 0:
		return usageError("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)")
	case o.fillFactor < 10 || o.fillFactor > 100:
		return usageError("-F/--fillfactor must be in range 10..100")
	case o.scale < 1:
		return usageError("-s/--scale must be in range 1..%d", 1<<31-1)
	case o.progress < 0:
		return usageError("-P/--progress must be in range 1..%d", 1<<31-1)
	case flags.Changed("sampling-rate") && (o.samplingRate <= 0 || o.samplingRate > 1):
		return usageError("invalid sampling rate: %q", flags.Lookup("sampling-rate").Value.String())
	case (o.aggInterval > 0 || o.samplingRate > 0) && !o.log:
		return usageError("log aggregation and sampling are allowed only when actually logging transactions (-l)")
	case o.aggInterval > 0 && o.samplingRate > 0:
		return usageError("sampling rate and aggregation cannot be used at the same time")
	case o.aggInterval > 0 && o.duration > 0 && o.duration%o.aggInterval != 0:
		return usageError("duration (%d) must be a multiple of aggregation interval (%d)", o.duration, o.aggInterval)
	case o.partitionMethod != "" && o.partitions == 0 && o.initialize:
		return usageError("--partition-method requires greater than zero --partitions")
	case o.jobs < 1:
		return usageError("-j/--jobs must be in range 1..%d", 1<<31-1)
	}
	if o.initSteps != "" {
		if err := tpcb.CheckSteps(o.initSteps); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
	}
	return nil
}

// loadScripts parses -f/-b/-S/-N in order (tpcb-like when none is given).
func (o *pgbenchOpts) loadScripts(env *clikit.Env, syms *script.Symbols) ([]*script.Script, bool, error) {
	args := o.scripts.args
	if len(args) == 0 {
		args = []scriptArg{{builtin: true, name: "tpcb-like"}}
	}
	var out []*script.Script
	builtinUsed := false
	for _, a := range args {
		name, weight, err := script.SplitWeight(a.name)
		if err != nil {
			return nil, false, err
		}
		var s *script.Script
		if a.builtin {
			builtinUsed = true
			s, err = script.Builtin(name, syms)
		} else {
			var src []byte
			if name == "-" {
				src, err = readAllFrom(env.Stdin)
			} else {
				src, err = os.ReadFile(name)
			}
			if err != nil {
				return nil, false, fmt.Errorf("could not read file %q: %w", name, err)
			}
			s, err = script.Parse(name, src, syms)
		}
		if err != nil {
			return nil, false, err
		}
		s.Weight = weight
		out = append(out, s)
	}
	return out, builtinUsed, nil
}

func parseDefines(defs []string) ([]engine.Define, error) {
	var out []engine.Define
	for _, d := range defs {
		name, value, ok := strings.Cut(d, "=")
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("invalid variable definition: %q", d)
		}
		out = append(out, engine.Define{Name: name, Value: value})
	}
	return out, nil
}

// parseSeed reads --random-seed (or PGBENCH_RANDOM_SEED) as pgbench 15
// does: "time" (the default: the clock in µs), "rand" (8 bytes from the
// system's strong source), or an unsigned integer as C's strtoul reads it
// (leading white space and a sign allowed; a negative value wraps, one too
// large is 18446744073709551615; nothing may follow the digits).
func parseSeed(flag, env string) (uint64, error) {
	s := flag
	if s == "" {
		s = env
	}
	switch s {
	case "", "time":
		return uint64(time.Now().UnixMicro()), nil
	case "rand":
		var b [8]byte
		f, err := os.Open("/dev/urandom")
		if err != nil {
			return 0, fmt.Errorf("could not generate random seed: %w", err)
		}
		defer f.Close()
		if _, err := io.ReadFull(f, b[:]); err != nil {
			return 0, fmt.Errorf("could not generate random seed: %w", err)
		}
		return binary.LittleEndian.Uint64(b[:]), nil
	}
	v, ok := strtoul(s)
	if !ok {
		return 0, fmt.Errorf("unrecognized random seed option %q: expecting an unsigned integer, \"time\" or \"rand\"", s)
	}
	return v, nil
}

// sampleSeed is the seed of pgbench's thread 0's --sampling-rate
// generator (ts_sample_rs) for this run.
func sampleSeed(seed uint64, clients, threads int, defines []engine.Define) uint64 {
	drawDefault := !slices.ContainsFunc(defines, func(d engine.Define) bool { return d.Name == script.VarDefaultSeed })
	return script.NewPgbenchSeeds(seed, clients, threads, drawDefault).Threads[0].Sample
}

// strtoul reads the whole of s as sscanf("%lu") does with nothing after.
func strtoul(s string) (uint64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v uint64
	overflow := false
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d))/10 {
			overflow = true
		}
		v = v*10 + uint64(d)
	}
	if overflow {
		return math.MaxUint64, true
	}
	if neg {
		v = -v
	}
	return v, true
}

// openTarget returns the connection string of the server to use, starting
// an embedded one when no connection was given.
func (o *pgbenchOpts) openTarget(ctx context.Context, env *clikit.Env) (string, *postgres.Instance, error) {
	given := o.host != "" || o.port != "" || o.user != "" || o.dbname != "" || o.dsn != ""
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"} {
		if env.Getenv(v) != "" {
			given = true
		}
	}
	if o.embedded || !given {
		settings, err := parseSettings(o.pgSettings)
		if err != nil {
			return "", nil, err
		}
		if _, ok := settings["max_connections"]; !ok && o.clients+20 > 100 {
			settings["max_connections"] = strconv.Itoa(o.clients + 20)
		}
		inst, err := postgres.Start(ctx, postgres.Options{Settings: settings, Progress: clikit.PrefixWriter(env.Stderr, "firedrill: ")})
		if err != nil {
			return "", nil, fmt.Errorf("starting the embedded PostgreSQL: %w", err)
		}
		return inst.ConnString(), inst, nil
	}
	if len(o.pgSettings) > 0 {
		return "", nil, errors.New("--pg-setting applies only to the embedded server; change settings on your server yourself")
	}
	if o.dsn != "" {
		return o.dsn, nil, nil
	}
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+quoteConnValue(v))
		}
	}
	add("host", o.host)
	add("port", o.port)
	add("user", o.user)
	add("dbname", o.dbname)
	return strings.Join(parts, " "), nil, nil
}

func parseSettings(list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, s := range list {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid --pg-setting %q: want NAME=VALUE", s)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// vacuum does pgbench's pre-test cleanup; errors are reported and ignored,
// as pgbench does (custom scripts may not use its tables).
func vacuum(ctx context.Context, conn *pgconn.PgConn, all bool) {
	stmts := []string{"vacuum pgbench_branches", "vacuum pgbench_tellers", "truncate pgbench_history"}
	if all {
		stmts = append(stmts, "vacuum analyze pgbench_accounts", "vacuum analyze pgbench_history")
	}
	for _, s := range stmts {
		_ = conn.Exec(ctx, s).Close()
	}
}

func printBuiltinList(env *clikit.Env) {
	fmt.Fprintln(env.Stderr, "Available builtin scripts:")
	for _, b := range script.BuiltinNames() {
		fmt.Fprintf(env.Stderr, "  %13s: %s\n", b.Name, b.Desc)
	}
	fmt.Fprintln(env.Stderr)
}

func readAllFrom(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	return io.ReadAll(r)
}

// startCPUProfile profiles the process into path until the returned func runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
