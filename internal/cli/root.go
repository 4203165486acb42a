// Package cli builds firedrill's command line: one file per command. All
// process globals (streams, environment, signals) come in through Env so
// that commands can be tested in memory.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/internal/secret"
)

// Version is firedrill's version, printed in banners and --version.
const Version = "0.1.0-dev"

// Exit codes, following pgbench where it has one and k6 for thresholds.
const (
	ExitOK          = 0
	ExitUsage       = 1   // bad options, bad script, cannot connect, initialization failed
	ExitRunFailed   = 1   // run stopped because its transactions kept failing (abort_on_failure), as pgbench's exit 1
	ExitRunAborted  = 2   // clients were aborted by errors during the run
	ExitDegraded    = 3   // the server stopped answering; the run was stopped at its deadline (status degraded)
	ExitThresholds  = 99  // the run completed but a threshold failed (k6's code)
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM; results so far were printed
)

// Env is the process around a command: streams, environment and the
// context that signals cancel.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Context is cancelled on SIGINT/SIGTERM.
	Context func() (context.Context, context.CancelFunc)

	// args is the command line after the program's name and secrets
	// masks passwords in all a command prints: both set by Main (private).
	args    []string
	secrets *secret.Redactor
}

// OSEnv is the real process's Env.
func OSEnv() *Env {
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Context: func() (context.Context, context.CancelFunc) {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			// After the first signal, a second one kills at once: the
			// embedded server dies with us (parent-death signal) and its
			// directory is reaped by the next start.
			go func() { <-ctx.Done(); stop() }()
			return ctx, stop
		},
	}
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs firedrill with args and returns the exit code.
func Main(env *Env, args []string) int {
	env = env.private(args)
	root := &cobra.Command{
		Use:   "firedrill",
		Short: "Rehearse your database's worst day before production has it",
		Long: `firedrill drives load against a real database, watches the database's
insides on the same timeline, and says what went wrong and why.

Without connection options every command runs against a throwaway
PostgreSQL that firedrill starts itself (from the server binaries on this
machine) and removes afterwards.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.AddCommand(newPgbenchCmd(env), newRunCmd(env), newValidateCmd(env), newReportCmd(env), newCompareCmd(env), newDrillsCmd(env), newDrillCmd(env),
		newRestoreCmd(env))
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(env.Stderr, "firedrill: error: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(env.Stderr, "firedrill: error: %v\n", err)
	return ExitUsage
}
