package pgrules

import (
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// What pg_stat_activity says of how busy the server was, for the rules of
// another target of the run (an HTTP service's latency: did the time go
// to this database?). connection-saturation offers it, as the rule that
// already reads the server's active sessions for a saturated pool.
var _ diagnose.ServerActivity = connectionSaturation{}

// Activity is pg_stat_activity's active sessions (aas) at each sample.
func (connectionSaturation) Activity(run *timeline.Run) ([]timeline.Point, string) {
	return run.Series(activitySource, pgmetric.AAS), activitySource + ":" + pgmetric.AAS
}

// Waits is the active sessions' wait events over [from, to), "CPU" for
// those running without one, the most first.
func (connectionSaturation) Waits(run *timeline.Run, from, to float64) []diagnose.Wait {
	w := waitsIn(run, from, to, func(string) bool { return true })
	if w.Samples == 0 {
		return nil
	}
	var out []diagnose.Wait
	for _, event := range w.TopEvents() {
		out = append(out, diagnose.Wait{
			Name:     event,
			Series:   activitySource + ":" + pgmetric.Wait(event),
			Sessions: w.ByEvent[event] / float64(w.Samples),
		})
	}
	return out
}
