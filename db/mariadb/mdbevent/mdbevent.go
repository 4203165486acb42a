// Package mdbevent holds MariaDB's (and MySQL's) kinds of event: hold a
// transaction open, run SQL, change global variables (SET GLOBAL, or a
// restart of the embedded server for those that cannot change while it
// runs), kill sessions, restart the embedded server. The MariaDB backend
// offers them (backend.EventKinds) beside the neutral kinds of package
// event; each kind is one file and one entry in kinds. Their keys decode
// in package event (event.SQLKind, event.SettingsKind …), which these
// files give only what MariaDB does.
//
// Every event works in its own session, tagged with the connection
// attribute program_name "firedrill-event:<name>" (performance_schema's
// session_connect_attrs shows it), and cleans up after itself: when its
// context ends it rolls back or kills what it holds before returning.
package mdbevent

import (
	"context"
	"slices"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// kinds are MariaDB's kinds of event, in the order messages list them: a
// new kind is a new file and one entry here.
var kinds = []event.Kind{holdTransactionKind, sqlKind, settingsKind, terminateKind, restartKind}

// Kinds are MariaDB's kinds of event, for the backend to offer.
func Kinds() []event.Kind { return slices.Clone(kinds) }

// Target is what the MariaDB backend puts in event.Env.Backend for its
// kinds.
type Target struct {
	// Config reaches the server as the run's user, in the run's database:
	// on a given server the confined account, which user-written SQL (sql
	// and hold_transaction events) runs as.
	Config *mysql.Config
	// Admin reaches the server as the account of --dsn, for firedrill's
	// own fixed statements (SET GLOBAL and its records, KILL of the run's
	// sessions); nil: Config.
	Admin *mysql.Config
	// Account is the user name whose sessions are the run's own, the only
	// ones terminate may kill on a given server; "" lets it kill any.
	Account string
	// RestoreDatabase is where, on a given server, settings events record
	// what they change so that it can be put back (RestoreSettings):
	// RecordsDatabase, which the confined account cannot reach; "" on the
	// embedded server, which is thrown away.
	RestoreDatabase string
	// Failed is told why a settings event failed on a given server, after
	// it put back what it had changed: such a run ends failed. nil: the
	// failure is the event's alone.
	Failed func(error)
	// OnRecord, if set, is called before a settings event records a
	// variable to restore: the backend then knows this run has
	// something to put back at its end (and nothing when it was never
	// called).
	OnRecord func()
	// Restart restarts the embedded server with these options added to
	// those it started with (for variables that cannot change while it
	// runs); nil on a given server.
	Restart func(ctx context.Context, settings map[string]string) error
	// Keep adds options to those the embedded server starts with, without
	// restarting it, so that what SET GLOBAL changed survives a later
	// restart; nil on a given server.
	Keep func(settings map[string]string) error
}

// adminConfig is how firedrill's own statements reach the server.
func (t *Target) adminConfig() *mysql.Config {
	if t.Admin != nil {
		return t.Admin
	}
	return t.Config
}

// targetOf is what env's backend gave MariaDB's kinds, nil when it gave
// nothing (a test, or another backend's environment).
func targetOf(env *event.Env) *Target {
	if t, ok := env.Backend.(*Target); ok {
		return t
	}
	return nil
}

// NeedsPerformanceSchema says whether an event finds sessions through
// performance_schema (terminate of a workload's sessions, by the
// program_name only it shows), so that the embedded server is started
// with it: it costs the server about 100 MB, so it is off otherwise.
func NeedsPerformanceSchema(spec scenario.Event) bool {
	c, ok := spec.Config.(event.TerminateConfig[int64])
	return ok && c.Workload != ""
}
