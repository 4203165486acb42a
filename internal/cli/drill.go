package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// ExitExpectationFailed is the exit code of a drill whose runs went
// through but did not show what the drill expects (k6's code for failed
// thresholds).
const ExitExpectationFailed = 99

func newDrillsCmd(env *clikit.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "drills",
		Short: "List the built-in drills: reproductions of real incidents with broken and fixed variants",
		Long: `List the built-in drills, each with its variants in the order
'firedrill drill NAME' runs them. 'firedrill drill NAME --help' explains
what running one does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for i, d := range drills.List() {
				if i > 0 {
					fmt.Fprintln(env.Stdout)
				}
				fmt.Fprintf(env.Stdout, "%s — %s\n", d.Name, d.Title)
				tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
				for _, v := range d.Variants {
					fmt.Fprintf(tw, "  %s\t%s\n", v.Name, v.Summary)
				}
				tw.Flush()
			}
			return nil
		},
	}
}

type drillOpts struct {
	backends *backend.Registry // the kinds of database the drills may target
	quick    bool
	out      string
	variants []string
	progress time.Duration
	check    string
	junit    junitFlag
	failOn   failOnFlag   // --fail-on warning|critical (failon.go)
	metrics  metricsFlags // --metrics-addr, --metrics-linger (metrics.go)
}

// drillManifest is drill.json in a drill run's directory: what ran, so
// that --check can judge the runs again.
type drillManifest struct {
	Drill    string   `json:"drill"`
	Quick    bool     `json:"quick"`
	Variants []string `json:"variants"`
	Started  string   `json:"started"`
}

const drillManifestFile = "drill.json"

func newDrillCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	o := &drillOpts{backends: backends}
	cmd := &cobra.Command{
		Use:   "drill NAME",
		Short: "Run a built-in incident's variants back to back, compare them, and check what each must show",
		Long: `Run a drill: a real incident rebuilt as scenarios. Each drill has variants —
"broken" reproduces the failure, "fixed" (and "fixed-2" …) apply a remedy to
the same load — and says what each variant must show: the findings the
diagnosis must report (and must not), and measured values such as "the
throughput during the hold is at most 0.7 × the throughput before".
'firedrill drills' lists them; each drill's README (in the drills/ folder of
the source) tells its story.

The variants run one after the other, each on a fresh throwaway server of
the drill's kind (PostgreSQL, MariaDB or Redis, as its scenarios' target.kind
says; started from the server binaries on this machine, removed afterwards), so
no variant inherits another's bloat or caches. After each run the diagnosis
and report.html are written to the run directory (the path and the top
finding are printed as it ends). At the end a side-by-side table compares
the variants (throughput over the run and in the drill's windows, latency
percentiles up to p99.9 and max, failed transactions, errors, failed
connections, deadlocks, findings by severity, "(allowed)" marking a warning
the variant's expectations allow), every expectation is printed as PASS or
FAIL (an allowed finding with the drill's reason for allowing it), then each
variant's report with its top finding's headline and fix, and compare.html,
broken against fixed, in the drill's directory (as 'firedrill compare
--html' writes it).

Full and quick: by default a drill runs at the incident's own timing (a few
minutes per variant). --quick multiplies every time of the scenarios (the
run's duration, workload start/stop and stages, event at and duration) by
the drill's quick time scale, for about 90 s per variant, as CI wants. A
shortened run may show a weaker effect; where it does, the drill states a
quick condition next to the full one (shown in the expectations).

Runs go to --out (default ./runs), one directory per drill run and one per
variant: runs/<time>-drill-<name>[-quick]/<variant>/. Each is an ordinary run
directory: 'firedrill report DIR' summarizes it again.

--check DIR runs nothing: it diagnoses the variants of an earlier drill run
directory again (rules may have improved since) and checks them; it writes
no report.html nor compare.html.

--fail-on warning|critical also fails the drill (99) when a variant has a
finding of that severity or worse that its expectations do not require:
the ones the drill allows count too (with --variant fixed: the fix is
clean at that severity).

Exit codes: 0 when every expectation holds, 99 when one failed (the table and
the PASS/FAIL list say which) or --fail-on found a finding, 1 on usage errors
or when a run cannot start, 130 when interrupted.`,
		Example: `  firedrill drills
  firedrill drill multixact --quick
  firedrill drill stock --variant broken --variant fixed
  firedrill drill journal --out /tmp/runs`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(env, args[0]) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "run the shortened drill (about 90 s per variant) with its quick conditions")
	f.StringVar(&o.out, "out", "runs", "directory under which the drill's run directories are created")
	f.StringSliceVar(&o.variants, "variant", nil, "run only these variants (repeat or comma-separate); default all, in the drill's order")
	f.DurationVar(&o.progress, "progress", 10*time.Second, "interval between progress lines (0 = every sample tick)")
	f.StringVar(&o.check, "check", "", "run nothing: diagnose the variants of an earlier drill run directory again and check them")
	o.junit.add(f, "the expectations")
	o.failOn.add(f, "a variant's diagnosis, the findings its expectations require aside,")
	o.metrics.register(f)
	return cmd
}

// variantRun is what one variant's run left.
type variantRun struct {
	variant  drills.Variant
	run      *timeline.Run
	findings []diagnose.Finding
	elapsed  time.Duration
}

func (o *drillOpts) run(env *clikit.Env, name string) error {
	d, err := drills.Get(name)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("%w; 'firedrill drills' lists them", err))
	}
	if o.check != "" {
		return o.recheck(env, d)
	}
	variants := d.Variants
	if len(o.variants) > 0 {
		variants = nil
		for _, vn := range o.variants {
			v, err := d.Variant(vn)
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			if slices.ContainsFunc(variants, func(x drills.Variant) bool { return x.Name == vn }) {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--variant %s given twice", vn))
			}
			variants = append(variants, v)
		}
	}
	tmp, err := newDrillTemp(env)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	defer os.RemoveAll(tmp)
	// Load every variant's scenario before starting any server, so that
	// a broken drill fails at once.
	type planned struct {
		variant drills.Variant
		sc      *scenario.Scenario
	}
	var plan []planned
	for _, v := range variants {
		dir := filepath.Join(tmp, v.Name)
		if err := os.Mkdir(dir, timeline.DirMode); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		sc, err := d.Load(v.Name, dir, o.quick, o.backends.ScenarioOptions())
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("drill %s, variant %s: %w", d.Name, v.Name, err))
		}
		plan = append(plan, planned{v, sc})
	}
	mode := "full"
	base := time.Now().Format("20060102-150405") + "-drill-" + d.Name
	if o.quick {
		mode = "quick"
		base += "-quick"
	}
	drillDir, err := newDrillDir(o.out, base)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	man := drillManifest{Drill: d.Name, Quick: o.quick, Variants: names(variants), Started: time.Now().UTC().Format(time.RFC3339)}
	if err := timeline.WriteJSON(drillDir, drillManifestFile, man); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	fmt.Fprintf(env.Stderr, "firedrill: drill %s (%s): %s\n", d.Name, mode, d.Title)
	fmt.Fprintf(env.Stderr, "firedrill: %d variants: %s; runs in %s\n", len(plan), strings.Join(names(variants), ", "), drillDir)

	ctx, stop := env.Context()
	defer stop()
	metrics, err := o.metrics.start(env, o.backends)
	if err != nil {
		return err
	}
	defer metrics.stop(ctx)
	var done []variantRun
	for i, p := range plan {
		sc := p.sc
		fmt.Fprintf(env.Stderr, "\nfiredrill: [%d/%d] %s: %s (%v)\n", i+1, len(plan), p.variant.Name, p.variant.Summary, sc.Duration)
		prog := &report.Progress{W: env.Stderr, Every: o.progress.Seconds(), Total: sc.Duration.Seconds(), Kinds: presentation(o.backends), Targets: workloadTargets(sc)}
		t0 := time.Now()
		res, runErr := runner.Run(ctx, metrics.with(sc, "", filepath.Base(drillDir)+"/", runner.Options{
			Backends: o.backends,
			Scenario: sc, RunDir: filepath.Join(drillDir, p.variant.Name), Version: clikit.Version,
			Command: env.CommandLine(), // as typed; the variant is the run directory's name
			Log:     clikit.PrefixWriter(env.Stderr, "firedrill: "), OnTick: prog.Tick,
		}))
		if res == nil {
			if errors.Is(runErr, runner.ErrInterrupted) {
				return clikit.WithCode(clikit.ExitInterrupted, runErr)
			}
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("drill %s, variant %s: %w", d.Name, p.variant.Name, runErr))
		}
		run, err := openRun(o.backends, res.Dir)
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("read back the run: %w", err))
		}
		findings := diagnoseRun(o.backends, run)
		metrics.findings(findings) // the variant's series stay until the next one starts
		if err := diagnose.Write(res.Dir, findings); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		vr := variantRun{variant: p.variant, run: run, findings: findings, elapsed: time.Since(t0)}
		done = append(done, vr)
		fmt.Fprintf(env.Stderr, "firedrill: %s done in %.0f s: %s\n", p.variant.Name, vr.elapsed.Seconds(), findingsLine(findings))
		rep, err := writeVariantReport(run, findings, presentation(o.backends))
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		fmt.Fprintf(env.Stderr, "firedrill: %s report: %s\n", p.variant.Name, rep)
		if f, ok := topFinding(findings); ok {
			fmt.Fprintf(env.Stderr, "firedrill: %s top finding: %s\n", p.variant.Name, f.Headline)
		}
		if errors.Is(runErr, runner.ErrInterrupted) {
			printComparison(env.Stdout, d, done, o.quick, drillMeasures(o.backends))
			return clikit.WithCode(clikit.ExitInterrupted, runErr)
		}
	}

	fmt.Fprintln(env.Stdout)
	return o.junit.concluded(env, d, done, o.quick, everyRule(o.backends), drillMeasures(o.backends),
		o.failOnVariants(conclude(env, d, done, o.quick, o.backends, drillDir, true), done))
}

// conclude prints the comparison, the checks and each variant's report
// with its top finding, writes the compare page between broken and
// fixed (unless write is false: --check writes nothing), and sets the
// exit code. backends are the kinds, whose rules, presentation and drill
// metrics judge and show the runs.
func conclude(env *clikit.Env, d drills.Drill, runs []variantRun, quick bool, backends *backend.Registry, drillDir string, write bool) error {
	rules, ms := everyRule(backends), drillMeasures(backends)
	color := env.Color()
	printComparison(env.Stdout, d, runs, quick, ms)
	failed := printChecks(env.Stdout, d, runs, quick, rules, ms, color)
	printVariantReports(env.Stdout, runs, color)
	abs, _ := filepath.Abs(drillDir)
	if write {
		page, err := writeDrillCompare(drillDir, runs, presentation(backends))
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		if page != "" {
			fmt.Fprintf(env.Stdout, "\ncompare page (broken against fixed): %s\n", page)
		}
	} else if a, b := comparePair(runs); a != nil && b != nil {
		fmt.Fprintf(env.Stdout, "\ncompare page: run 'firedrill compare %s %s --html FILE'\n", a.run.Dir, b.run.Dir)
	}
	var vs []string
	for _, r := range runs {
		vs = append(vs, r.variant.Name)
	}
	fmt.Fprintf(env.Stdout, "\nrun directories: %s/{%s}\n", abs, strings.Join(vs, ","))
	if failed > 0 {
		return clikit.WithCode(ExitExpectationFailed, fmt.Errorf("drill %s: %d expectation(s) failed", d.Name, failed))
	}
	return nil
}

// failOnVariants adds --fail-on's verdict to the drill's outcome: the
// findings of each variant at the flag's severity or worse that its
// expectations do not require (they are the drill's point).
func (o *drillOpts) failOnVariants(outcome error, runs []variantRun) error {
	var msgs []string
	for _, r := range runs {
		var unrequired []diagnose.Finding
		for _, f := range r.findings {
			if !slices.Contains(r.variant.Expect.Findings, f.Rule) {
				unrequired = append(unrequired, f)
			}
		}
		if err := o.failOn.check("variant "+r.variant.Name+": ", unrequired); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	switch {
	case len(msgs) == 0:
		return outcome
	case outcome != nil:
		code := ExitExpectationFailed
		if ee := (*clikit.ExitError)(nil); errors.As(outcome, &ee) {
			code = ee.Code
		}
		return clikit.WithCode(code, fmt.Errorf("%w; %s", outcome, strings.Join(msgs, "; ")))
	}
	return clikit.WithCode(ExitFindings, errors.New(strings.Join(msgs, "; ")))
}

// recheck judges an earlier drill run again: the findings are recomputed
// (rules may have improved since), nothing is written.
func (o *drillOpts) recheck(env *clikit.Env, d drills.Drill) error {
	var man drillManifest
	b, err := os.ReadFile(filepath.Join(o.check, drillManifestFile))
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--check %s: not a drill run directory (%w)", o.check, err))
	}
	if err := json.Unmarshal(b, &man); err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--check %s: %w", filepath.Join(o.check, drillManifestFile), err))
	}
	if man.Drill != d.Name {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--check %s: a run of drill %s, not %s", o.check, man.Drill, d.Name))
	}
	var runs []variantRun
	for _, name := range man.Variants {
		if len(o.variants) > 0 && !slices.Contains(o.variants, name) {
			continue
		}
		v, err := d.Variant(name)
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
		run, err := openRun(o.backends, filepath.Join(o.check, name))
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--check: %w", err))
		}
		runs = append(runs, variantRun{variant: v, run: run, findings: diagnoseRun(o.backends, run)})
	}
	return o.junit.concluded(env, d, runs, man.Quick, everyRule(o.backends), drillMeasures(o.backends),
		o.failOnVariants(conclude(env, d, runs, man.Quick, o.backends, o.check, false), runs))
}

func names(vs []drills.Variant) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// newDrillDir creates the directory that holds a drill run's variants.
func newDrillDir(out, base string) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", out, err)
	}
	for i := 1; ; i++ {
		dir := filepath.Join(out, base)
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", dir, i)
		}
		err := os.Mkdir(dir, timeline.DirMode)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", fmt.Errorf("create the drill's run directory: %w", err)
		}
	}
}

// findingsLine counts findings by severity, naming their rules.
func findingsLine(fs []diagnose.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	var parts []string
	for _, sev := range []string{diagnose.Critical, diagnose.Warning, diagnose.Info} {
		if ids := ruleIDs(fs, sev); len(ids) > 0 {
			parts = append(parts, sev+" "+strings.Join(ids, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// drillWorkloads lists the workloads of the variants' runs: those the
// drill's expectations name first, then the others in the order the
// runs recorded them.
func drillWorkloads(d drills.Drill, runs []variantRun) []string {
	var key, rest []string
	seen := map[string]bool{}
	for _, v := range d.Variants {
		for _, m := range v.Expect.Metrics {
			if m.Workload != "" && !seen[m.Workload] {
				seen[m.Workload] = true
				key = append(key, m.Workload)
			}
		}
	}
	for _, r := range runs {
		for i := range r.run.Intervals {
			if w := r.run.Intervals[i].Workload; !seen[w] {
				seen[w] = true
				rest = append(rest, w)
			}
		}
	}
	var out []string
	for _, w := range append(key, rest...) {
		if recorded(runs, w) {
			out = append(out, w)
		}
	}
	return out
}

// recorded says whether any of the runs has intervals of workload.
func recorded(runs []variantRun, workload string) bool {
	for _, r := range runs {
		for i := range r.run.Intervals {
			if r.run.Intervals[i].Workload == workload {
				return true
			}
		}
	}
	return false
}

// ruleIDs lists the distinct rules of the findings of one severity.
func ruleIDs(fs []diagnose.Finding, severity string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, f := range fs {
		if f.Severity == severity && !seen[f.Rule] {
			seen[f.Rule] = true
			ids = append(ids, f.Rule)
		}
	}
	return ids
}

// printComparison prints the variants side by side: one column each.
func printComparison(w io.Writer, d drills.Drill, runs []variantRun, quick bool, ms drills.Measures) {
	if len(runs) == 0 {
		return
	}
	mode := ""
	if quick {
		mode = ", quick"
	}
	fmt.Fprintf(w, "drill %s%s: variants side by side\n\n", d.Name, mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "\t"
	for _, r := range runs {
		header += r.variant.Name + "\t"
	}
	fmt.Fprintln(tw, header)
	row := func(label string, cell func(r variantRun) string) {
		line := label + "\t"
		for _, r := range runs {
			line += cell(r) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	measureIn := func(metric, workload, window string) func(variantRun) string {
		return func(r variantRun) string {
			span, err := d.Span(r.run, window, quick)
			if err != nil {
				return "-"
			}
			v, err := ms.Measure(r.run, metric, workload, span)
			if err != nil {
				return "-"
			}
			if strings.HasPrefix(metric, "p") || metric == "max" {
				if v >= 1000 {
					return fmt.Sprintf("%.1f s", v/1000)
				}
				return drills.FormatValue(v) + " ms"
			}
			return drills.FormatValue(v)
		}
	}
	measure := func(metric, window string) func(variantRun) string { return measureIn(metric, "", window) }
	row("status", func(r variantRun) string { return r.run.Manifest.Status })
	// Transactions of different workloads are different work: a sum of
	// them can make a fix look slower (openchat's cheap counts hide its
	// joins' gain). With several workloads each has its own rows, the
	// ones the drill's expectations name first.
	workloads := drillWorkloads(d, runs)
	if len(workloads) > 1 {
		for _, wl := range workloads {
			row("tps, whole run: "+wl, measureIn("tps", wl, ""))
			for _, win := range d.Windows {
				row("tps, "+win.Name+": "+wl, measureIn("tps", wl, win.Name))
			}
			for _, p := range []string{"p95", "max"} {
				row(p+", whole run: "+wl, measureIn(p, wl, ""))
			}
		}
	} else {
		row("tps, whole run", measure("tps", ""))
		for _, win := range d.Windows {
			row("tps, "+win.Name, measure("tps", win.Name))
		}
	}
	if d.Unit != "" {
		row(d.Unit+"/s, whole run", func(r variantRun) string {
			v, err := ms.Measure(r.run, "tps", "", drills.Span{From: 0, To: diagnose.RunEnd(r.run)})
			if err != nil {
				return "-"
			}
			return drills.FormatValue(v*float64(r.variant.UnitsPerTransaction())) + per(r.variant)
		})
	}
	if len(workloads) <= 1 {
		for _, p := range []string{"p50", "p95", "p99", "p99.9", "max"} {
			row(p+", whole run", measure(p, ""))
		}
		for _, win := range d.Windows {
			row("p95, "+win.Name, measure("p95", win.Name))
		}
	}
	row("failed transactions", measure("failed", ""))
	row("errors (failed tries)", measure("errors", ""))
	row("failed connections", measure("failed_connections", ""))
	row("deadlocks", measure("deadlocks", ""))
	for _, sev := range []string{diagnose.Critical, diagnose.Warning, diagnose.Info} {
		row("findings: "+sev, func(r variantRun) string {
			ids := ruleIDs(r.findings, sev)
			if len(ids) == 0 {
				return "-"
			}
			if sev != diagnose.Info {
				for i, id := range ids {
					ids[i] = allowedNote(r.variant, id)
				}
			}
			return strings.Join(ids, ", ")
		})
	}
	tw.Flush()
	var notes []string
	for _, win := range d.Windows {
		if win.Note != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", win.Name, win.Note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nwindows:\n%s\n", strings.Join(notes, "\n"))
	}
}

// printChecks checks every variant's expectations, prints each as PASS or
// FAIL, and returns how many failed.
func printChecks(w io.Writer, d drills.Drill, runs []variantRun, quick bool, rules []diagnose.Rule, ms drills.Measures, color bool) int {
	fmt.Fprintln(w, "\nexpectations:")
	failed, total := 0, 0
	others := map[string]*timeline.Run{}
	for _, r := range runs {
		others[r.variant.Name] = r.run
	}
	skipped := 0
	for _, r := range runs {
		for _, c := range d.Check(r.variant, r.run, r.findings, rules, quick, others, ms) {
			verdict := clikit.Paint(color, clikit.Green, "PASS")
			switch {
			case c.Skipped:
				verdict = clikit.Paint(color, clikit.Dim, "SKIP")
				skipped++
			case !c.Pass:
				verdict = clikit.Paint(color, clikit.Red, "FAIL")
				failed++
				total++
			default:
				total++
			}
			fmt.Fprintf(w, "  %s  %-8s %s: %s\n", verdict, c.Variant, c.Expectation, c.Got)
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "all %d expectations hold", total)
	} else {
		fmt.Fprintf(w, "%d of %d expectations failed", failed, total)
	}
	if skipped > 0 {
		fmt.Fprintf(w, " (%d skipped: they compare with a variant that did not run)", skipped)
	}
	fmt.Fprintln(w)
	return failed
}

// per says how many units a variant's transaction does, when more than one.
func per(v drills.Variant) string {
	if n := v.UnitsPerTransaction(); n > 1 {
		return fmt.Sprintf(" (%d/tx)", n)
	}
	return ""
}

// newDrillTemp makes the folder the variants' files are written to, owned
// by this process, after removing those of drills that were killed (as
// the servers' own folders are).
func newDrillTemp(env *clikit.Env) (string, error) {
	reaper := serverproc.Reaper{Prefix: "firedrill-drill-"}
	dir, err := reaper.NewDir(func(format string, a ...any) { fmt.Fprintf(env.Stderr, "firedrill: "+format+"\n", a...) })
	if err != nil {
		return "", err
	}
	if err := serverproc.WriteOwnerFile(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
