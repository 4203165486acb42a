// Package pgevent holds PostgreSQL's kinds of event: hold a transaction
// open, run SQL, change settings, terminate backends. The PostgreSQL
// backend offers them (backend.EventKinds) beside the neutral kinds of
// package event; each kind is one file and one entry in kinds. Their keys
// decode in package event (event.SQLKind, event.SettingsKind …), which
// these files give only what PostgreSQL does.
//
// Every event works in its own session, tagged with the application_name
// "firedrill-event:<name>" so that samplers and rules can tell it from the
// workloads, and cleans up after itself: when its context ends it rolls
// back or cancels what it holds before returning.
package pgevent

import (
	"slices"

	"github.com/firedrill/firedrill/event"
)

// kinds are PostgreSQL's kinds of event, in the order messages list them:
// a new kind is a new file and one entry here.
var kinds = []event.Kind{holdTransactionKind, sqlKind, settingsKind, terminateKind}

// Kinds are PostgreSQL's kinds of event, for the backend to offer.
func Kinds() []event.Kind { return slices.Clone(kinds) }

// Target is what the PostgreSQL backend puts in event.Env.Backend for its
// kinds.
type Target struct {
	// Schema confines the events on a given server: their sessions search
	// only it. Empty on the embedded server.
	Schema string
	// Admin is the given server's admin connection (the user's DSN), for
	// firedrill's own statements: settings events (ALTER SYSTEM, and the
	// records in RestoreSchema to put them back) and terminate events.
	// event.Env.ConnString is then the confined role's, for the
	// scenario's SQL (sql and hold_transaction events, shell commands).
	// "" means ConnString is the admin's too (--allow-outside-schema).
	Admin string
	// Sessions is the role whose members' sessions are firedrill's
	// (the run's group role, or the --run-as account): terminate events
	// end only those. "" ends any (the embedded server, or
	// --allow-outside-schema).
	Sessions string
	// OnRecord, if set, is called before a settings event records a
	// setting to restore: the backend then knows this run has something
	// to put back at its end (and nothing when it was never called).
	OnRecord func()
}

// schemaOf is the schema that confines env's events, "" when none does.
func schemaOf(env *event.Env) string {
	if t, ok := env.Backend.(*Target); ok && t != nil {
		return t.Schema
	}
	return ""
}

// targetOf is env's Target; nil on the embedded server.
func targetOf(env *event.Env) *Target {
	if t, ok := env.Backend.(*Target); ok {
		return t
	}
	return nil
}

// adminEnv is env with the admin connection, for firedrill's own
// statements.
func adminEnv(env *event.Env) *event.Env {
	if t := targetOf(env); t != nil && t.Admin != "" {
		admin := *env
		admin.ConnString = t.Admin
		return &admin
	}
	return env
}
