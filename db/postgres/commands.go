package postgres

import (
	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres/pgbenchcmd"
	"github.com/firedrill/firedrill/internal/clikit"
)

var _ backend.Commander = Backend{}

// Commands offers PostgreSQL's own command: firedrill pgbench.
func (Backend) Commands(env *clikit.Env) []*cobra.Command {
	return []*cobra.Command{pgbenchcmd.New(env)}
}
