package postgres

import (
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

var _ present.Presenter = Backend{}

// Presentation is how the report shows a PostgreSQL run: its charts
// (charts.go); the compare page's load is the average active sessions.
// Compare weighs the percentiles, the findings and the settings only.
func (Backend) Presentation() present.Kind {
	return present.Kind{
		Product: product,
		Charts:  charts(),
		// The embedded server's processes (sampler/host's "server").
		ServerCPU: &present.ServerCPU{Source: hostmetric.Server, Key: hostmetric.ServerCPU},
		InstanceSettings: []string{"config_file", "data_directory", "hba_file", "ident_file",
			"external_pid_file", "port", "unix_socket_directories"},
		Load: &present.Load{
			ID: "aas", Title: "Database load (average active sessions)",
			Help:   "Sessions active in the database per tick, all waits together; each run from its own start.",
			Axis:   present.Axis{Label: "sessions", Unit: "aas", Min: present.Zero()},
			Source: pgmetric.Activity, Key: pgmetric.AAS, MissingIsZero: true, SameKindOnly: true,
			NoData: "neither run sampled pg_stat_activity",
		},
		Waits: &present.Waits{Source: pgmetric.Activity, Prefix: pgmetric.WaitPrefix, Total: pgmetric.AAS},
	}
}
