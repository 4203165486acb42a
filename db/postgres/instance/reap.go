package postgres

import (
	"path/filepath"

	"github.com/firedrill/firedrill/instance/serverproc"
)

// dirPrefix names every PostgreSQL instance directory in the temp dir, so
// that stale ones can be found.
const dirPrefix = "firedrill-pg-"

// postmasterPID returns the pid of the postmaster running in the instance
// directory dir, read from data/postmaster.pid and checked against the
// process's command line so that a recycled pid is never taken for it.
func postmasterPID(dir string) (int, bool) {
	return serverproc.PIDFile(filepath.Join(dataDirName, "postmaster.pid"), "postgres", "postmaster")(dir)
}

// reaper removes PostgreSQL instance directories whose owner is gone,
// killing a postmaster still running in one.
func reaper() serverproc.Reaper {
	return serverproc.Reaper{Prefix: dirPrefix, ServerPID: postmasterPID}
}
