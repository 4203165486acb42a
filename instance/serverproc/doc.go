// Package serverproc holds what every throwaway database server firedrill
// starts needs, whatever the database: running the server as an
// unprivileged user when firedrill runs as root, a parent-death signal so
// that no server outlives firedrill, no inherited descriptors, an instance
// directory that records its owner so that the next start reaps what a
// killed run left behind, a free loopback port, and the tail of the
// server's log for error messages.
//
// The instance packages (db/postgres/instance, db/mariadb/instance,
// db/redis/instance) build on it; it knows no database.
//
// # Running as root
//
// Database servers refuse to run as root (PostgreSQL always, MariaDB
// unless told --user=root), and for good reason: a database superuser could
// otherwise own the machine. When firedrill runs as root (containers, CI
// runners, a fresh VM), servers run as the unprivileged system user
// "firedrill" instead (OSUser), created on first use with useradd, and the
// instance directory is handed to that user.
//
// # Lifetime
//
// A server is started directly (Spawn) so that firedrill owns the process:
// in its own process group, so that a Ctrl-C in the terminal reaches
// firedrill only, which then stops the server itself; and with a
// parent-death signal, so that the server shuts down even if firedrill is
// killed outright. Every instance directory records its owner process
// (WriteOwnerFile); ReapStale removes directories whose owner is gone
// (killing a server still running in one) and never touches those of a
// live owner.
//
// An instance keeps its server in a Lifecycle: Launch starts it with its
// output in the log and waits until a probe says it is ready (retried on
// another port by OnFreePort when the port was taken meanwhile), Restart
// stops it and starts it again with merged settings, and Stop stops it and
// removes the instance directory, each serialised with the others.
package serverproc
