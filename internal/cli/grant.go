package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/scenario"
)

func newGrantCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	var dsn, schema string
	cmd := &cobra.Command{
		Use:   "grant --dsn URL [--schema S]",
		Short: "Print what an administrator runs to make the confined account runs use on a given server",
		Long: `Print the statements (SQL, or Redis ACL commands) that make, by hand, the
confined account a run on the server at --dsn uses for everything the
scenario wrote: setup, workloads, and the SQL or commands of its events. The
account can touch only firedrill's own namespace — the schema (PostgreSQL)
or database (MariaDB/MySQL) named by --schema, default "firedrill", or the
keys under "firedrill:" (Redis) — and the server itself refuses the rest.

A run makes such an account itself, with the --dsn's account, and removes it
at the end. When that account may not make accounts, the run stops before
anything runs and prints these statements: have an administrator run them,
with PASSWORD replaced by a password of their choosing, and give the account
to every run with --run-as URL. Nothing is connected to; the statements are
printed to standard output, and no password (the --dsn's included) is ever
printed. docs/given-server.md says, per kind, what the account may do.`,
		Example: `  firedrill grant --dsn postgres://admin@db:5432/stage > confine.sql
  firedrill grant --dsn mysql://admin@db:3306/shop --schema firedrill
  firedrill grant --dsn redis://cache:6379/0
  firedrill run stock.yaml --dsn postgres://admin@db:5432/stage --run-as "$RUNNER_URL"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dsn == "" {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("grant needs --dsn: the server runs will be given, as given to 'firedrill run --dsn'"))
			}
			if err := writeGrant(env.Stdout, backends, dsn, schema); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "dsn", "", "the server the account is for (connection string or URL; not contacted)")
	cmd.Flags().StringVar(&schema, "schema", scenario.DefaultSchema, "firedrill's schema or database on that server (the scenario's setup.schema)")
	return cmd
}

// writeGrant writes the Grant text of the backend of the server at dsn.
func writeGrant(w io.Writer, reg *backend.Registry, dsn, schema string) error {
	be, err := reg.ForDSN(dsn)
	if err != nil {
		return fmt.Errorf("grant: %w", err)
	}
	g, ok := be.(backend.Granter)
	if !ok {
		return fmt.Errorf("grant: firedrill makes no confined account on a %s server (its backend does not confine by privileges), so there is nothing to grant", be.Kind())
	}
	text, err := g.Grant(dsn, schema)
	if err != nil {
		return fmt.Errorf("grant: %w", err)
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, err = io.WriteString(w, text)
	return err
}
