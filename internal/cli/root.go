// Package cli builds firedrill's command line: one file per command, plus
// the commands each backend offers of its own (backend.Commander). All
// process globals (streams, environment, signals) come in through
// clikit.Env so that commands can be tested in memory; the kinds of
// database come in as the registry that main builds (cmd/firedrill), and
// the commands hand it down rather than reach for a kind.
package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
)

// Main runs firedrill with args and returns the exit code. backends are
// the kinds of database the binary is built with, registered by its main
// package: the commands receive them and never reach for a kind.
func Main(env *clikit.Env, backends *backend.Registry, args []string) int {
	env = env.Private(args)
	for _, b := range backends.Backends() {
		if p, ok := b.(backend.Passworder); ok {
			env.Resolve(p.Password) // a passfile's password is masked too
		}
	}
	root := &cobra.Command{
		Use:   "firedrill",
		Short: "Rehearse your database's worst day before production has it",
		Long: `firedrill drives load against a real database, watches the database's
insides on the same timeline, and says what went wrong and why.

Without connection options every command runs against a throwaway
server of the scenario's kind (target.kind: ` + kindsText(backends) + `;
postgres when unset) that firedrill starts itself from the server
binaries on this machine (initdb/postgres, mariadb-install-db/mariadbd,
redis-server) and removes afterwards. With --dsn it targets your server
instead, its kind read from the URL's scheme.`,
		Version:       clikit.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	paintStreams(env)
	defer flushStreams(env)
	root.PersistentFlags().BoolVar(&env.NoColor, "no-color", false, "no colour in the terminal output (also when NO_COLOR is set, or the output is not a terminal)")
	root.SetVersionTemplate(versionTemplate())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c, err, args, backends) })
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.AddCommand(newRunCmd(env, backends), newValidateCmd(env, backends), newReportCmd(env, backends), newCompareCmd(env, backends), newDrillsCmd(env), newDrillCmd(env, backends),
		newRestoreCmd(env, backends), newGrantCmd(env, backends), newK8sCmd(env, backends), newMergeCmd(env, backends), newCapacityCmd(env, backends), newVersionCmd(env))
	for _, b := range backends.Backends() {
		if c, ok := b.(backend.Commander); ok {
			addCommands(root, b.Kind(), c.Commands(env))
		}
	}
	explainArgs(root)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return clikit.ExitOK
	}
	var ee *clikit.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(env.Stderr, "firedrill: error: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(env.Stderr, "firedrill: error: %v\n", err)
	return clikit.ExitUsage
}

// addCommands adds a backend's own commands beside firedrill's; a name
// already taken panics, as a kind registered twice does: cobra would
// quietly run the first.
func addCommands(root *cobra.Command, kind string, cmds []*cobra.Command) {
	for _, cmd := range cmds {
		for _, have := range root.Commands() {
			if have.Name() == cmd.Name() {
				panic("backend " + kind + ": command " + cmd.Name() + " is taken")
			}
		}
		root.AddCommand(cmd)
	}
}

// kindsText lists the registered kinds of database for the help texts:
// "postgres, mariadb, redis".
func kindsText(r *backend.Registry) string {
	var kinds []string
	for _, b := range r.Backends() {
		kinds = append(kinds, b.Kind())
	}
	return strings.Join(kinds, ", ")
}
