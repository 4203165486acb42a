package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/timeline"
)

type compareOpts struct {
	backends *backend.Registry // whose rules diagnose a run without findings.json
	json     string
	html     string
	alpha    float64
	warmup   string
	block    time.Duration
	noise    string
}

func newCompareCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	o := &compareOpts{backends: backends}
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two run directories: throughput and latency with a significance test, findings, settings",
		Long: `Compare run B against run A (the baseline), workload by workload (matched
by name): a verdict table of throughput and latency percentiles (p50, p95,
p99) — each run's median with its confidence interval, the change with its
interval ("−12 % (−21 % to −5.5 %)", "×21 (×12 to ×31)" from twice as much
up) and a verdict ("slower, p < 0.001", "no significant difference, p =
0.41"), coloured on a terminal (not with NO_COLOR set). The runs are named by
their directories (or scenarios when those are alike) in the table, the page
and its legends.

A metric whose blocks vary by more than half their mean (coefficient of
variation, CV) and whose change no interval can bound is "unstable (CV …)":
the test still tells its direction, but no size is given — a p99 swung by a
few second-long waits would otherwise read "± 12117 %".

The test is the Mann–Whitney U test, as benchstat runs it, over the runs'
per-interval values taken together in blocks of a few seconds: neighbouring
intervals resemble each other (a checkpoint, a busy neighbour lasts several
seconds), and testing them one by one would call two runs of the same code
different. The start of each workload (--warmup) is left out. A difference
the test finds but that is no larger than how much each run differed from
itself (its second half against its first), or whose confidence interval
reaches no change at all, is reported as "within noise".

Then what changed in each workload's definition, its scripts' commands that
differ per script file (collapsed on the page), the findings that appeared or
vanished (by rule, with severity) and the server settings that differ. For Redis and
MariaDB runs also each workload's slowest transaction (a "max" row, and the
intervals with a transaction over 100 ms for Redis, 1 s for MariaDB: a
server that stops for a moment shows there, not in p99) and the server's
key counters over each run (Redis: aof_delayed_fsync, the latency
monitor's longest events, slow log entries, refused connections,
evictions; MariaDB: deadlocks, row-lock time, most transactions waiting
for a lock and for an AUTO-INC lock, sessions waiting for the query cache
lock, invalidations, threads running). Findings come from
each run's findings.json, or are recomputed when it has none.

Two runs on a shared machine differ for reasons that are not the code: when
a verdict matters, repeat the runs, alternating A and B, and set --min-change
to what runs of the same code disagree by.`,
		Example: `  firedrill compare runs/20260101-120000-stock-broken runs/20260101-121000-stock-fixed
  firedrill compare A B --json compare.json --warmup 10s`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(env, args[0], args[1]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.html, "html", "", "also write a page with the verdict over both runs' timelines overlaid to this file")
	f.StringVar(&o.json, "json", "", "also write the comparison as JSON (schema firedrill.compare/v1) to this file; - for standard output (the comparison text then goes to standard error)")
	f.Float64Var(&o.alpha, "alpha", report.DefaultCompareOptions.Alpha, "significance level of the test")
	f.StringVar(&o.warmup, "warmup", "10%", "leave out the start of each workload: a share of its time (10%) or a duration (15s)")
	f.DurationVar(&o.block, "block", 0, "block length for the test (0 = chosen from the data's autocorrelation, at least 3s)")
	f.StringVar(&o.noise, "min-change", "0%", "call changes smaller than this within noise (e.g. 10%: what two runs of the same code disagree by on this machine)")
	return cmd
}

func (o *compareOpts) run(env *clikit.Env, dirA, dirB string) error {
	env, writeJSON := env.ForJSON(o.json) // --json -: JSON on stdout, the comparison on stderr
	opts := report.DefaultCompareOptions
	if o.alpha <= 0 || o.alpha >= 1 {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--alpha %g: want a level between 0 and 1, as in 0.05", o.alpha))
	}
	opts.Alpha = o.alpha
	warmup, fraction, err := parseWarmup(o.warmup)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	opts.Warmup, opts.WarmupFraction = warmup, fraction
	opts.Block = o.block.Seconds()
	minChange, err := parsePercent(o.noise)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--min-change %q: %w", o.noise, err))
	}
	opts.MinChange = minChange
	opts.Kinds = presentation(o.backends)
	if o.block < 0 {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--block %v: want a duration of 0 or more", o.block))
	}
	a, fa, err := openCompared(o.backends, dirA)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	b, fb, err := openCompared(o.backends, dirB)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if err := report.CompareTargets(a, b); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	c := report.CompareWith(a, b, fa, fb, opts)
	var text bytes.Buffer
	if err := report.WriteCompareColor(&text, c, env.Color()); err != nil {
		return fmt.Errorf("print comparison: %w", err)
	}
	if _, err := env.Stdout.Write(text.Bytes()); err != nil {
		return fmt.Errorf("print comparison: %w", err)
	}
	if o.html != "" {
		var page bytes.Buffer
		sides := [2]report.CompareSide{{Label: c.A.Name, Dir: dirA}, {Label: c.B.Name, Dir: dirB}}
		for i := range sides {
			sides[i].Report = reportLink(o.html, sides[i].Dir)
		}
		if err := report.WriteCompareHTML(&page, a, b, sides[0], sides[1], c); err != nil {
			return err
		}
		if err := clikit.WritePrivateFile(o.html, page.Bytes()); err != nil {
			return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("write --html: %w", err))
		}
		fmt.Fprintf(env.Stdout, "\ncompare page: %s\n", o.html)
	}
	if o.json != "" {
		var buf bytes.Buffer
		if err := report.WriteCompareJSON(&buf, c); err != nil {
			return err
		}
		if err := writeJSON(buf.Bytes()); err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
	}
	return nil
}

// reportLink is the run's report.html relative to the page at page, or
// "" when the run has none.
func reportLink(page, runDir string) string {
	rep := filepath.Join(runDir, "report.html")
	if _, err := os.Stat(rep); err != nil {
		return ""
	}
	absPage, err1 := filepath.Abs(filepath.Dir(page))
	absRep, err2 := filepath.Abs(rep)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(absPage, absRep)
	if err != nil {
		return ""
	}
	return filepath.ToSlash(rel)
}

// openCompared reads a run directory and its findings: findings.json, or
// the diagnosis recomputed when the run has none.
func openCompared(backends *backend.Registry, dir string) (*timeline.Run, []diagnose.Finding, error) {
	run, err := openRun(backends, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("compare: %w", err)
	}
	fs, ok, err := diagnose.Read(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("compare: read findings of %s: %w", filepath.Clean(dir), err)
	}
	if !ok {
		fs = diagnoseRun(backends, run)
	}
	return run, fs, nil
}

// parsePercent reads a share written as a percentage ("10%", "2.5 %").
func parsePercent(text string) (float64, error) {
	p, ok := strings.CutSuffix(strings.TrimSpace(text), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
	if !ok || err != nil || v < 0 || v >= 100 {
		return 0, fmt.Errorf("want a percentage from 0%% to below 100%%, as in 10%%")
	}
	return v / 100, nil
}

// parseWarmup reads --warmup: "10%" is a share of the workload's time,
// anything else a duration ("15s", or bare seconds).
func parseWarmup(text string) (seconds, fraction float64, err error) {
	text = strings.TrimSpace(text)
	if strings.HasSuffix(text, "%") {
		v, err := parsePercent(text)
		if err != nil {
			return 0, 0, fmt.Errorf("--warmup %q: %w, or a duration, as in 15s", text, err)
		}
		return 0, v, nil
	}
	if v, err := strconv.ParseFloat(text, 64); err == nil && v >= 0 {
		return v, 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return 0, 0, fmt.Errorf("--warmup %q: want a share, as in 10%%, or a duration, as in 15s", text)
	}
	return d.Seconds(), 0, nil
}
