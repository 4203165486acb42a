package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

func newMergeCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	var out, scenarioPath, jsonOut string
	cmd := &cobra.Command{
		Use:   "merge SHARD_RUN_DIR... --out RUN_DIR",
		Short: "Combine the run directories of a split run's shards (run --shard i/N) into one",
		Long: `Combine the run directories that the shards of one split run wrote
('firedrill run SCENARIO --shard i/N --start-at T', every i from 0 to N-1)
into one run directory, which 'firedrill report', compare and the
diagnosis read as any run. Each tick's intervals of every workload are
added up: transactions, failures and errors by code summed, latency
histograms (HDR) merged exactly and the percentiles taken from the merged
histogram; the summary likewise (a script command's percentiles are the
shards' weighted by their counts: the summary keeps no histogram per
command). Shard 0's samples, events, settings and samplers are kept: the
other shards record client metrics only. The merged run ends as its worst
shard (completed < degraded < interrupted < failed < killed).

Directories of different runs (scenario, --start-at, N), a shard given
twice or missing, or a shard still running are refused. The findings and
report.html are written into the merged directory, and the scenario's
thresholds, which the shards leave alone (each has only its share of the
load), are judged on the merged run: exit code 99 if one fails, as run.
A directory given may also be a shard's --out holding its one run
directory. More in docs/sharding.md.`,
		Example: `  firedrill merge runs/shard-0 runs/shard-1 runs/shard-2 runs/shard-3 --out runs/merged
  firedrill report runs/merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, writeJSON := env.ForJSON(jsonOut) // --json -: JSON on stdout, the summary on stderr
			if out == "" {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("merge: give the directory to write with --out (it must not exist or be empty)"))
			}
			dirs := make([]string, len(args))
			for i, dir := range args {
				dirs[i] = onlyRunIn(dir)
				// A shard left "running" by a killed firedrill says so first.
				if _, err := timeline.SettleKilled(dirs[i]); err != nil {
					fmt.Fprintf(env.Stderr, "firedrill: %v\n", err)
				}
			}
			run, err := timeline.Merge(dirs, out)
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			presentation(backends).Fill(run)
			findings := diagnoseRun(backends, run)
			if err := diagnose.Write(run.Dir, findings); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			if err := report.WriteHTMLFile(run, findings, presentation(backends)); err != nil {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("write the HTML report: %w", err))
			}
			if err := report.WriteSummary(env.Stdout, run, findings); err != nil {
				return err
			}
			thresholds, err := judgeMergedThresholds(env, backends, run, findings, scenarioPath)
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			if jsonOut != "" {
				if err := writeRunJSON(writeJSON, run, findings, thresholds); err != nil {
					return clikit.WithCode(clikit.ExitUsage, err)
				}
			}
			var failed []string
			for _, r := range report.FailedThresholds(thresholds) {
				failed = append(failed, r.Metric+" "+r.Condition)
			}
			abs, _ := filepath.Abs(run.Dir)
			fmt.Fprintf(env.Stdout, "\nmerged %d shards into: %s\nreport: %s\n", len(args), abs, filepath.Join(abs, timeline.ReportFile))
			if len(failed) > 0 {
				return clikit.WithCode(clikit.ExitThresholds, fmt.Errorf("%d thresholds failed on the merged run: %s", len(failed), strings.Join(failed, "; ")))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged run directory to create (must not exist or be empty)")
	cmd.Flags().StringVar(&jsonOut, "json", "", "also write the merged run's result as JSON (schema firedrill.run-result/v1, docs/json.md) to this file; - for standard output")
	cmd.Flags().StringVar(&scenarioPath, "scenario", "", "judge this scenario file's thresholds on the merged run (default: the scenario.yaml the shards kept, when it reads without its script files)")
	return cmd
}

// onlyRunIn lets merge take a shard's --out directory (as 'firedrill k8s'
// gives each shard): the run directory in it when it holds exactly one,
// else dir as given.
func onlyRunIn(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, timeline.ManifestFile)); err == nil {
		return dir
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dir
	}
	var runs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), timeline.ManifestFile)); e.IsDir() && err == nil {
			runs = append(runs, filepath.Join(dir, e.Name()))
		}
	}
	if len(runs) == 1 {
		return runs[0]
	}
	return dir
}

// judgeMergedThresholds judges the scenario's thresholds on the merged run
// and prints them. The scenario is the file
// given, else the copy the shards kept; a copy that does not read (its
// script files are elsewhere) is said and skipped.
func judgeMergedThresholds(env *clikit.Env, backends *backend.Registry, run *timeline.Run, findings []diagnose.Finding, path string) ([]report.ThresholdResult, error) {
	given := path != ""
	if !given {
		path = filepath.Join(run.Dir, timeline.ScenarioFile)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	sc, err := scenario.Load(path, backends.ScenarioOptions())
	if err == nil {
		err = report.CheckThresholdMetrics(sc, everyRule(backends))
	}
	if err != nil {
		if given {
			return nil, err
		}
		fmt.Fprintf(env.Stderr, "firedrill: the thresholds were not judged: the shards' scenario.yaml does not read on its own (%s); give the scenario file with --scenario\n", strings.SplitN(err.Error(), "\n", 2)[0])
		return nil, nil
	}
	results := report.EvaluateThresholds(sc.Thresholds, run, findings, everyRule(backends))
	if len(results) == 0 {
		return nil, nil
	}
	fmt.Fprintln(env.Stdout)
	if err := report.WriteThresholds(env.Stdout, results); err != nil {
		return nil, err
	}
	return results, nil
}
