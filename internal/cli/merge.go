package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/timeline"
)

func newMergeCmd(env *clikit.Env) *cobra.Command {
	var out string
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
report.html are written into the merged directory. A directory given
may also be a shard's --out holding its one run directory.`,
		Example: `  firedrill merge runs/shard-0 runs/shard-1 runs/shard-2 runs/shard-3 --out runs/merged
  firedrill report runs/merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("merge: give the directory to write with --out (it must not exist or be empty)"))
			}
			for _, dir := range args {
				dir = onlyRunIn(dir)
				// A shard left "running" by a killed firedrill says so first.
				if _, err := timeline.SettleKilled(dir); err != nil {
					fmt.Fprintf(env.Stderr, "firedrill: %v\n", err)
				}
			}
			dirs := make([]string, len(args))
			for i, dir := range args {
				dirs[i] = onlyRunIn(dir)
			}
			run, err := timeline.Merge(dirs, out)
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			findings := diagnose.Diagnose(run)
			if err := diagnose.Write(run.Dir, findings); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			if err := report.WriteHTMLFile(run, findings); err != nil {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("write the HTML report: %w", err))
			}
			if err := report.WriteSummary(env.Stdout, run, findings); err != nil {
				return err
			}
			abs, _ := filepath.Abs(run.Dir)
			fmt.Fprintf(env.Stdout, "\nmerged %d shards into: %s\nreport: %s\n", len(args), abs, filepath.Join(abs, timeline.ReportFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged run directory to create (must not exist or be empty)")
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
