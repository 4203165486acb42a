package clikit

import (
	"fmt"
	"os"

	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/timeline"
)

// Private returns a copy of env for one command line: its output streams
// mask every password (internal/secret) given in args, the environment
// (PGPASSWORD) or a passfile, and every connection string's password by
// its syntax; commands teach it the connection strings they resolve
// later with Learn (a scenario's target.dsn, pgbench's -h/-p/-U).
func (env *Env) Private(args []string) *Env {
	e := *env
	e.args = args
	e.secrets = secret.New(args...)
	e.Stdout = e.secrets.Writer(env.Stdout)
	e.Stderr = e.secrets.Writer(env.Stderr)
	return &e
}

// Learn teaches the output streams the passwords of a connection string
// a command resolved after its command line was read; harmless on an Env
// that Private did not make.
func (env *Env) Learn(connString string) {
	env.secrets.Learn(connString)
}

// LearnSecret teaches the output streams one password to mask (an
// embedded server's own).
func (env *Env) LearnSecret(password string) {
	env.secrets.LearnSecret(password)
}

// Resolve teaches the output streams a database driver's way of finding
// the password it would send (secret.Redactor.Resolve).
func (env *Env) Resolve(password func(connString string) string) {
	env.secrets.Resolve(password)
}

// CommandLine is the command as the user typed it, for run.json; the
// runner masks its passwords.
func (env *Env) CommandLine() []string {
	return append([]string{"firedrill"}, env.args...)
}

// WritePrivateFile writes a file the user named (--json, --html) readable
// by its owner only, as the files of a run directory: it holds server
// details. An existing file is made private too.
func WritePrivateFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, timeline.FileMode); err != nil {
		return err // names the operation and the path
	}
	if err := os.Chmod(path, timeline.FileMode); err != nil {
		return fmt.Errorf("make %s private: %w", path, err)
	}
	return nil
}

// ForJSON is what a --json PATH flag needs: where the human output goes
// and how the JSON is written. With PATH "-" the JSON goes to standard
// output and the human output to standard error (human is a copy of env
// whose Stdout is its Stderr, coloured as standard error), so that
// `--json - | jq` works; any other
// PATH is a private file and human is env.
func (env *Env) ForJSON(path string) (human *Env, write func(data []byte) error) {
	if path != "-" {
		return env, func(data []byte) error {
			if err := WritePrivateFile(path, data); err != nil {
				return fmt.Errorf("write --json: %w", err)
			}
			return nil
		}
	}
	stdout := env.Stdout
	h := *env
	h.Stdout, h.StdoutTerminal = env.Stderr, env.StderrTerminal
	return &h, func(data []byte) error {
		if _, err := stdout.Write(data); err != nil {
			return fmt.Errorf("write --json to standard output: %w", err)
		}
		return nil
	}
}
