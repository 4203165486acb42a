// Package redisevent holds Redis's kinds of event: change settings
// (CONFIG SET), run commands, restart the embedded server, kill clients
// (CLIENT KILL). The Redis backend offers them (backend.EventKinds) beside
// the neutral kinds of package event (disk_pressure, shell); each kind is
// one file and one entry in kinds. The keys of settings, terminate and
// restart decode in package event, which these files give only what
// Redis does.
//
// Every event works in its own connection, named "firedrill-event:<name>"
// (CLIENT SETNAME) so that samplers, CLIENT LIST and terminate events can
// tell it from the workloads ("firedrill:<workload>").
package redisevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/event"
)

// kinds are Redis's kinds of event, in the order messages list them: a
// new kind is a new file and one entry here.
var kinds = []event.Kind{settingsKind, commandKind, restartKind, terminateKind}

// Kinds are Redis's kinds of event, for the backend to offer.
func Kinds() []event.Kind { return slices.Clone(kinds) }

// KeyPrefix is where firedrill keeps the keys it creates itself on a
// given server.
const KeyPrefix = "firedrill:"

// sessionPrefix names firedrill's own connections that are not a
// workload's (events, settings, restore); terminate events spare them.
const sessionPrefix = "firedrill-"

// Target is what the Redis backend puts in event.Env.Backend for its kinds.
type Target struct {
	// Conn reaches the server as firedrill's own sessions do (on a given
	// server, the admin URL): settings and terminate events.
	Conn redisconn.Config
	// Work reaches it as user-written commands do (command events): on
	// a given server the confined ACL user, else Conn.
	Work redisconn.Config
	// Given is set on the user's server: settings events record what
	// they change so that it is put back, and what would reach past
	// firedrill's keys is refused unless AllowOutside.
	Given        bool
	AllowOutside bool
	// PrivilegesOnly skips the lexical check of command events
	// (backend.Spec.PrivilegesOnly): for the tests that prove the ACL
	// user's privileges hold alone.
	PrivilegesOnly bool
	// SettingsFailed, when set, is told of a settings event that failed
	// on a given server (having changed nothing), so that the run ends
	// failed.
	SettingsFailed func(error)
	// OnRecord, if set, is called before a settings event records a
	// setting to restore: the backend then knows this run has something
	// to put back at its end (and nothing when it was never called).
	OnRecord func()
}

// targetOf is the Redis target in env.
func targetOf(env *event.Env) (*Target, error) {
	if t, ok := env.Backend.(*Target); ok && t != nil {
		return t, nil
	}
	return nil, errors.New("not a Redis target (the event runs only on one)")
}

// connect opens the event's own connection as firedrill's own sessions
// (the admin URL), named for it.
func connect(ctx context.Context, env *event.Env, eventName string) (*redisconn.Conn, error) {
	t, err := targetOf(env)
	if err != nil {
		return nil, err
	}
	cfg := t.Conn
	cfg.Name = SessionName(eventName)
	return redisconn.Dial(ctx, cfg)
}

// connectWork opens the event's own connection as user-written commands
// run (Target.Work), named for it.
func connectWork(ctx context.Context, env *event.Env, eventName string) (*redisconn.Conn, error) {
	t, err := targetOf(env)
	if err != nil {
		return nil, err
	}
	cfg := t.Work
	if cfg.Addr == "" { // a Target made before Work was
		cfg = t.Conn
	}
	cfg.Name = SessionName(eventName)
	return redisconn.Dial(ctx, cfg)
}

// SessionName is the CLIENT SETNAME of an event's connection.
func SessionName(eventName string) string {
	return clientName(sessionPrefix + "event:" + eventName)
}

// clientName is name as CLIENT SETNAME takes it, which refuses spaces and
// characters outside printable ASCII: each becomes '-', as db/redis/client
// does with a workload's name.
func clientName(name string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '-'
		}
		return r
	}, name)
}

// errorf wraps err with the event's kind and name.
func errorf(kind, name string, err error) error {
	return fmt.Errorf("%s %s: %w", kind, name, err)
}
