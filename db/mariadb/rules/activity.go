package mariadbrules

import (
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// What SHOW GLOBAL STATUS says of how busy the server was, for the rules
// of another target of the run (an HTTP service's latency: did the time
// go to this database?). connection-saturation offers it, as the rule
// that reads the server's connections.
var _ diagnose.ServerActivity = connectionSaturation{}

// Activity is Threads_running at each sample: the threads executing a
// statement (the sampler's own among them).
func (connectionSaturation) Activity(run *timeline.Run) ([]timeline.Point, string) {
	return run.Series(mariadbmetric.GlobalStatus, mariadbmetric.ThreadsRunning),
		mariadbmetric.GlobalStatus + ":" + mariadbmetric.ThreadsRunning
}

// Waits is none: the global status has no per-session waits.
func (connectionSaturation) Waits(*timeline.Run, float64, float64) []diagnose.Wait { return nil }
