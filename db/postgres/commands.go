package postgres

import (
	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres/pgbenchcmd"
	"github.com/firedrill/firedrill/internal/clikit"
)

var _ backend.Commander = Backend{}

// Commands offers PostgreSQL's own command: firedrill pgbench, whose
// live metrics are named from PostgreSQL's key tables.
func (Backend) Commands(env *clikit.Env) []*cobra.Command {
	return []*cobra.Command{pgbenchcmd.New(env, metricNames())}
}
