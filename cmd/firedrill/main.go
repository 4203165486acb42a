// Command firedrill rehearses database incidents: it drives load against a
// real database, watches its insides on the same timeline, and explains
// what went wrong. It is the composition root: it takes the kinds of
// database from the registration (package kinds) and hands that registry
// to everything below.
package main

import (
	"os"

	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

func main() {
	os.Exit(cli.Main(clikit.OSEnv(), kinds.Registry(), os.Args[1:]))
}
