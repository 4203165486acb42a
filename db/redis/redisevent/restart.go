package redisevent

import "github.com/firedrill/firedrill/event"

// restartKind is how a scenario writes a restart event (event's neutral
// one, with Redis's words for a given server): the embedded server
// restarts in order (SIGTERM: the AOF is flushed, an RDB saved if save
// points are set), then loads its data again; every client is
// disconnected meanwhile.
var restartKind = event.RestartKind(
	"firedrill restarts only the server it started; remove dsn or the restart",
	"needs the embedded server (firedrill restarts only the server it started)")
