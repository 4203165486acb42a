// Command firedrill rehearses database incidents: it drives load against a
// real database, watches its insides on the same timeline, and explains
// what went wrong.
package main

import (
	"os"

	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
)

func main() {
	os.Exit(cli.Main(clikit.OSEnv(), os.Args[1:]))
}
