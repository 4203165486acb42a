// Package postgres starts throwaway PostgreSQL servers: initdb into a fresh
// temp directory, a private port and unix socket, and everything removed by
// Stop. It is the default target of firedrill and the server behind every
// test that needs a real database.
//
// # Running as root
//
// PostgreSQL refuses to run as root: a superuser who can run COPY ... TO
// PROGRAM or load a C function would otherwise own the machine. When
// firedrill runs as root (containers, CI runners, a fresh VM), initdb and the
// server run as the unprivileged system user "firedrill" instead, created on
// first use with useradd, and the instance directory is handed to that user.
// The database superuser is "firedrill" in both cases, so connection strings
// do not depend on who started the run.
//
// # Lifetime
//
// The server is started directly (not through pg_ctl) so that firedrill owns
// the process: it runs in its own process group, so that a Ctrl-C in the
// terminal reaches firedrill only, which then stops the server itself; and
// with a parent-death signal, so that the server shuts down even if
// firedrill is killed outright. Every instance directory records its owner
// process; each Start removes directories whose owner is gone (killing a
// server still running in one) and never touches those of a live owner.
package postgres
