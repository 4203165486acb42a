// Package redis starts throwaway Redis servers: Debian's redis-server with a
// redis.conf of firedrill's own in a fresh temp directory, a private
// loopback port and unix socket, and everything removed by Stop. It is the
// server behind `target: {kind: redis}` and behind every test that needs a
// real Redis.
//
// # What the server is given
//
// The configuration is written at every start from Options.Settings (the
// scenario's target settings) over firedrill's defaults:
//
//   - bind 127.0.0.1, a free port, and a unix socket in the instance
//     directory: a Redis already on 6379 is never touched.
//   - save "": no RDB snapshots unless the scenario asks for them (a
//     background save forks and would stall the load for reasons the
//     scenario did not choose).
//   - latency-monitor-threshold 10: Redis records every event in its main
//     thread that takes 10 ms or more (aof-write-pending-fsync, fork,
//     expire-cycle …) in LATENCY LATEST/HISTORY, which the samplers read.
//     The default 0 records nothing; 10 ms is well under the stalls the
//     rules look for (hundreds of ms) and well over the run of an ordinary
//     command, so the monitor costs nothing in a healthy run.
//   - daemonize no and logfile "": the server stays firedrill's child and
//     logs to the instance's log file.
//
// # Lifetime
//
// When firedrill runs as root the server runs as the unprivileged system
// user "firedrill" (a database server has no business with root's rights),
// in a process group of its own (a Ctrl-C reaches firedrill only, which then
// stops the server) and with a parent-death signal (SIGKILL: the data is
// throwaway), so that no server outlives firedrill even when it is killed
// outright; it inherits none of firedrill's descriptors. Every instance
// directory records its owner process; each Start removes directories
// whose owner is gone (killing a server still running in one) and never
// touches those of a live owner.
package redis
