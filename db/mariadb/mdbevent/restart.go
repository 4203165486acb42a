package mdbevent

import "github.com/firedrill/firedrill/event"

// restartKind is how a scenario writes a restart event (event's neutral
// one, with MariaDB's words for a given server): the embedded server stops
// (a normal shutdown) and starts again with the same options; the
// workloads lose their sessions and reconnect, and the buffer pool starts
// cold.
var restartKind = event.RestartKind(
	"firedrill restarts only the server it started; remove dsn or the event",
	"firedrill restarts only the server it started, and this run's was given (--dsn)")
