package diagnose

import (
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// Writers are the run's workloads whose scripts write or lock rows
// (sqlcheck.Classify: UPDATE, DELETE, INSERT, MERGE, SELECT … FOR
// UPDATE/SHARE): those whose transactions wait for the log's flush at
// commit or for row locks. A workload without recorded commands (a run
// recorded before they were) counts as writing: nothing says otherwise.
// A read-only script that calls a function which writes is taken for
// read-only: its text does not say.
func Writers(run *timeline.Run) map[string]bool {
	return Shared(run, writersKey{}, func() map[string]bool {
		out := map[string]bool{}
		for _, w := range run.Manifest.Workloads {
			out[w.Name] = writes(w)
		}
		// Workloads of an old run without the manifest's list.
		for _, iv := range run.Intervals {
			if _, ok := out[iv.Workload]; !ok {
				out[iv.Workload] = true
			}
		}
		return out
	})
}

type writersKey struct{}

// writes says whether any of the workload's scripts writes or locks rows.
func writes(w timeline.WorkloadInfo) bool {
	commands := 0
	for _, s := range w.Scripts {
		for _, c := range s.Commands {
			commands++
			if sqlcheck.Classify(c).LocksOrWrites() {
				return true
			}
		}
	}
	return commands == 0
}

// ReadOnlyWorkloads lists, in manifest order, the workloads Writers leaves
// out, for the evidence that says what a rule did not count.
func ReadOnlyWorkloads(run *timeline.Run) []string {
	writers := Writers(run)
	var out []string
	for _, w := range run.Manifest.Workloads {
		if !writers[w.Name] {
			out = append(out, w.Name)
		}
	}
	return out
}
