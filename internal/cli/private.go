package cli

import (
	"fmt"
	"os"

	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/timeline"
)

// private returns a copy of env for one command line: its output streams
// mask every password (internal/secret) given in args, the environment
// (PGPASSWORD) or a passfile, and every connection string's password by
// its syntax; commands teach env.secrets the connection strings they
// resolve later (a scenario's target.dsn, pgbench's -h/-p/-U).
func (env *Env) private(args []string) *Env {
	e := *env
	e.args = args
	e.secrets = secret.New(args...)
	e.Stdout = e.secrets.Writer(env.Stdout)
	e.Stderr = e.secrets.Writer(env.Stderr)
	return &e
}

// commandLine is the command as the user typed it, for run.json; the
// runner masks its passwords.
func (env *Env) commandLine() []string {
	return append([]string{"firedrill"}, env.args...)
}

// writePrivateFile writes a file the user named (--json, --html) readable
// by its owner only, as the files of a run directory: it holds server
// details. An existing file is made private too.
func writePrivateFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, timeline.FileMode); err != nil {
		return err // names the operation and the path
	}
	if err := os.Chmod(path, timeline.FileMode); err != nil {
		return fmt.Errorf("make %s private: %w", path, err)
	}
	return nil
}
