package pgrules

import (
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// generatorServer is what pg_stat_activity tells generator-limited of the
// server: the workloads' sessions (by application_name) active in the
// database, and the active sessions of all.
var generatorServer = diagnose.GeneratorServer{
	Sources: []string{pgmetric.Activity},
	References: []string{
		"https://www.postgresql.org/docs/current/pgbench.html",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
	},
	At: func(run *timeline.Run, t float64) diagnose.ServerSessions {
		out := diagnose.ServerSessions{Sessions: -1,
			ActiveSeries:   pgmetric.Activity + ":app." + workloadAppPrefix + "*.active",
			SessionsSeries: pgmetric.Series(pgmetric.Activity, pgmetric.AAS)}
		a := diagnose.SampleNear(run, pgmetric.Activity, t, 0.6*diagnose.Tick(run))
		if a == nil {
			return out
		}
		if v, ok := a.Values[pgmetric.AAS]; ok {
			out.Sessions = v
		}
		for _, w := range run.Manifest.Workloads {
			conns, ok := a.Values["app."+diagnose.WorkloadApp(w.Name)+".sessions"]
			if !ok {
				continue
			}
			out.Conns += conns
			out.Active += a.Values["app."+diagnose.WorkloadApp(w.Name)+".active"] // absent: none active
		}
		return out
	},
}
