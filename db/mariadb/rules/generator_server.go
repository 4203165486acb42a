package mariadbrules

import (
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// generatorServer is what the process list tells generator-limited of the
// server: the client sessions (firedrill's samplers left out) and those of
// them running a command.
var generatorServer = diagnose.GeneratorServer{
	Sources:    []string{mariadbmetric.Processlist},
	References: []string{"https://mariadb.com/kb/en/show-processlist/"},
	At: func(run *timeline.Run, t float64) diagnose.ServerSessions {
		out := diagnose.ServerSessions{Sessions: -1,
			ActiveSeries:   mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.Active),
			SessionsSeries: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.Active)}
		p := diagnose.SampleNear(run, mariadbmetric.Processlist, t, 0.6*diagnose.Tick(run))
		if p == nil || p.Error != "" {
			return out
		}
		out.Conns = p.Values[mariadbmetric.Connections]
		out.Active = p.Values[mariadbmetric.Active]
		out.Sessions = out.Active
		return out
	},
}
