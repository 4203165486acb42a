package runner

import (
	"path/filepath"

	"github.com/firedrill/firedrill/timeline"
)

// settleKilled marks the run directories beside the new one that a
// killed firedrill left "running" as killed, so that nobody waits for
// them or reads them as complete.
func settleKilled(opts Options, logf func(string, ...any)) {
	out := opts.OutDir
	if opts.RunDir != "" {
		out = filepath.Dir(filepath.Clean(opts.RunDir))
	} else if out == "" {
		out = "runs"
	}
	killed, err := timeline.SettleKilledUnder(out)
	for _, dir := range killed {
		logf("%s: its firedrill process is gone (killed?); marked %s", dir, timeline.StatusKilled)
	}
	if err != nil {
		logf("looking for killed runs in %s: %v", out, err)
	}
}
