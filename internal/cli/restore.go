package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/scenario"
)

func newRestoreCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	var dsn, schema string
	cmd := &cobra.Command{
		Use:   "restore --dsn URL",
		Short: "Put back what killed runs left on a given server: changed settings, confined accounts",
		Long: `Put back every setting that settings events changed with ALTER SYSTEM on a
given server and did not restore, and drop the roles killed runs left
(PostgreSQL): firedrill records each change, before making it, in the
table firedrill_admin.settings_restore, and restores it at the
end of every run, also after Ctrl-C. A run killed outright (SIGKILL, a crash,
a lost machine) cannot; the next 'firedrill run' against the same server
restores them before it starts, and this command does it now.

On Redis the changes are CONFIG SETs, recorded in the hash
firedrill-admin:settings_restore of the URL's database (--schema does not
apply); restore also removes the ACL users of killed runs
(firedrill_run_…, with no client connected).

On MariaDB and MySQL they are SET GLOBALs, recorded in the table
settings_restore of the database firedrill_admin (whatever --schema says);
restore also drops the confined accounts (firedrill_run_…) of killed runs.

It also removes the confined accounts killed runs left behind: on a given
server every run makes an account of its own for the scenario's SQL and
commands (docs/given-server.md) and removes it at the end, also after
Ctrl-C; a killed run cannot, and the next run or this command removes it.
An account that still has a live session (another run's, a shard's) is
left alone. Accounts given with --run-as are never removed: firedrill did
not make them.

A setting changed since by someone else is left alone and said so. Exit code
0 when everything recorded was restored (or nothing was), 1 otherwise.`,
		Example: `  firedrill restore --dsn postgres://admin@db:5432/stage
  firedrill restore --dsn "host=/run/postgresql dbname=app" --schema drills
  firedrill restore --dsn redis://:PASSWORD@cache:6379/0
  firedrill restore --dsn mysql://admin:PASSWORD@db:3306/shop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dsn == "" {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("restore needs --dsn: the server the run changed, as given to 'firedrill run --dsn'"))
			}
			be, err := backends.ForDSN(dsn)
			if err != nil {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("restore: %w", err))
			}
			restorer, ok := be.(backend.Restorer)
			if !ok {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("restore: firedrill changes nothing it would have to restore on a %s server", be.Kind()))
			}
			ctx, stop := env.Context()
			defer stop()
			if err := restorer.Restore(ctx, dsn, schema, env.Stdout); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "dsn", "", "the server to restore (connection string or URL)")
	cmd.Flags().StringVar(&schema, "schema", scenario.DefaultSchema, "firedrill's schema on that server (the scenario's setup.schema)")
	return cmd
}
