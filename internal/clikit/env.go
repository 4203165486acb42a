// Package clikit is what every firedrill command shares, whether it lives
// in internal/cli or is offered by a backend (backend.Commander): the
// process around it (Env), exit codes, the version, and the writers that
// prefix progress lines and mask passwords. It imports nothing of
// firedrill's database-specific packages, nor the backend registry.
package clikit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/firedrill/firedrill/internal/secret"
)

// Version is firedrill's version, printed in banners, run.json and
// 'firedrill version'. A release build sets it with
// -ldflags "-X github.com/firedrill/firedrill/internal/clikit.Version=v1.2.3";
// it is a variable only for that.
var Version = "0.1.0-dev"

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
	// LookupEnv tells an unset variable from an empty one, for ${VAR}
	// in scenario files; nil means nothing is set.
	LookupEnv func(string) (string, bool)
	// StdoutTerminal and StderrTerminal are set when the streams are
	// terminals (before Private wraps them), for Color and StderrColor.
	StdoutTerminal, StderrTerminal bool
	// NoColor is the global --no-color flag.
	NoColor bool

	// args is the command line after the program's name and secrets
	// masks passwords in all a command prints: both set by Private.
	args    []string
	secrets *secret.Redactor
}

// OSEnv is the real process's Env.
func OSEnv() *Env {
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv,
		StdoutTerminal: IsTerminal(os.Stdout), StderrTerminal: IsTerminal(os.Stderr),
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

// MemoryEnv is an Env in memory, for tests of commands: stdin reads the
// given text, nothing is set in the environment (no PG* variables, so
// commands use an embedded server), and the context is the caller's to
// cancel. It returns the buffers that receive stdout and stderr.
func MemoryEnv(stdin string) (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv:  func(string) string { return "" },
		Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
	}, &out, &errb
}

// ExitError carries an exit code through cobra to the program's exit.
type ExitError struct {
	Code int
	Err  error // nil when everything was already said
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// WithCode attaches an exit code to err.
func WithCode(code int, err error) error { return &ExitError{Code: code, Err: err} }
