// Command firedrill rehearses database incidents: it drives load against a
// real database, watches its insides on the same timeline, and explains
// what went wrong. It is the composition root: kinds.go registers the
// kinds of database, and everything below receives that registry.
package main

import (
	"os"

	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
)

func main() {
	os.Exit(cli.Main(clikit.OSEnv(), kinds(), os.Args[1:]))
}
