package redisevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// clientTypes are the kinds of client a terminate event may kill by type
// (replicas and masters are not firedrill's to cut).
var clientTypes = []string{"normal", "pubsub"}

// terminateKind is Redis's terminate event: it kills clients with CLIENT
// KILL ID, a workload's (by the name its connections set) or every
// client of a type except firedrill's own samplers and events.
var terminateKind = event.TerminateKind(event.TerminateBy[string]{Key: "type", Decode: decodeClientType}, newTerminate)

// decodeClientType decodes the type of client a terminate event kills.
func decodeClientType(d *scenario.EventDecoder, v scenario.Value) (string, bool) {
	typ, ok := v.Str()
	if ok && !slices.Contains(clientTypes, typ) {
		v.Hintf("type: normal (every client but firedrill's samplers and events) or pubsub",
			"%s: type: unknown client type %s", d.What(), v.Quote())
		return "", false
	}
	return typ, ok
}

// terminateEvent kills clients with CLIENT KILL ID.
type terminateEvent struct {
	name     string
	workload string
	typ      string
}

var (
	_ event.Event   = (*terminateEvent)(nil)
	_ event.Checker = (*terminateEvent)(nil)
)

func newTerminate(name string, c event.TerminateConfig[string]) event.Event {
	return &terminateEvent{name: name, workload: c.Workload, typ: c.By}
}

// Check refuses killing clients by type on a given server: they would be
// the application's.
// Before the run (no target yet) the backend's Preflight does it
// (Outside).
func (e *terminateEvent) Check(env *event.Env) error {
	t, ok := env.Backend.(*Target)
	if !ok || t == nil {
		return nil
	}
	if e.typ != "" && t.Given && !t.AllowOutside {
		return errorf("terminate", e.name, fmt.Errorf("on a given server, type: %s would kill the application's clients too; "+
			"name a workload instead, or pass --allow-outside-schema", e.typ))
	}
	return nil
}

// Run lists the clients, kills those chosen, and says how many.
func (e *terminateEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	c, err := connect(ctx, env, e.name)
	if err != nil {
		return "", nil, event.Cancelled(ctx, errorf("terminate", e.name, err))
	}
	defer c.Close()
	if _, err := targetOf(env); err != nil {
		return "", nil, errorf("terminate", e.name, err)
	}
	typ, want := e.typ, ""
	if e.workload != "" {
		typ = "normal"
		want = clientName(env.WorkloadTag(e.workload))
	}
	r, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", typ)
	if err != nil {
		return "", nil, event.Cancelled(ctx, errorf("terminate", e.name, fmt.Errorf("CLIENT LIST: %w", err)))
	}
	var ids []string
	for _, client := range ParseClientList(r.Text()) {
		name := client["name"]
		if want != "" && name == want || want == "" && !strings.HasPrefix(name, sessionPrefix) {
			ids = append(ids, client["id"])
		}
	}
	event.Notify(started, map[string]any{"clients": len(ids)})
	killed, err := killClients(ctx, c, ids)
	detail := map[string]any{"killed": killed}
	if err != nil {
		return "", detail, event.Cancelled(ctx, errorf("terminate", e.name, err))
	}
	whose := "of workload " + e.workload
	if e.workload == "" {
		whose = "of type " + e.typ
	}
	return fmt.Sprintf("killed %d client(s) %s", killed, whose), detail, nil
}

// killClients kills each client by id; one gone meanwhile is not an error.
func killClients(ctx context.Context, c *redisconn.Conn, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	commands := make([][]string, len(ids))
	for i, id := range ids {
		commands[i] = []string{"CLIENT", "KILL", "ID", id, "SKIPME", "yes"}
	}
	replies, err := c.Pipeline(ctx, commands...)
	if err != nil {
		return 0, fmt.Errorf("CLIENT KILL: %w", err)
	}
	killed := 0
	var errs []error
	for i, r := range replies {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("CLIENT KILL ID %s: %w", ids[i], r.Err))
			continue
		}
		killed += int(r.Int)
	}
	return killed, errors.Join(errs...)
}

// ParseClientList reads CLIENT LIST's lines of "key=value" fields (a
// client's name holds no spaces: CLIENT SETNAME refuses them).
func ParseClientList(text string) []map[string]string {
	var clients []map[string]string
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		client := make(map[string]string, len(fields))
		for _, f := range fields {
			if k, v, ok := strings.Cut(f, "="); ok {
				client[k] = v
			}
		}
		clients = append(clients, client)
	}
	return clients
}
