package redisevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// restartKind is how a scenario writes a restart event.
var restartKind = event.Kind{
	EventKind: scenario.EventKind{
		Name:    "restart",
		Example: "{kind: restart, at: 30s}",
		Decode:  decodeRestart,
	},
	Build: event.BuildWith(newRestart),
}

// restartConfig is what a restart event takes: nothing.
type restartConfig struct{}

func decodeRestart(d *scenario.EventDecoder) (any, time.Duration) {
	what := d.What()
	d.Later(func(s *scenario.Scenario) {
		if !s.Target.Embedded() {
			d.Hintf("firedrill restarts only the server it started; remove dsn or the restart", "%s: restart needs the embedded target, and dsn is set", what)
		}
	})
	return restartConfig{}, 0
}

// restartEvent restarts the embedded server in order (SIGTERM: the AOF is
// flushed, an RDB saved if save points are set), which then loads its
// data again: every client is disconnected meanwhile.
type restartEvent struct {
	name string
}

var (
	_ event.Event   = (*restartEvent)(nil)
	_ event.Checker = (*restartEvent)(nil)
)

func newRestart(spec scenario.Event, _ restartConfig) event.Event {
	return &restartEvent{name: event.Name(spec)}
}

// Check refuses a target firedrill cannot restart (a given server).
func (e *restartEvent) Check(env *event.Env) error {
	if env.Restart == nil {
		return errorf("restart", e.name, errors.New("needs the embedded server (firedrill restarts only the server it started)"))
	}
	return nil
}

// Run restarts the server and says how long it took.
func (e *restartEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	event.Notify(started, nil)
	begin := time.Now()
	if err := env.Restart(ctx); err != nil {
		return "", nil, event.Cancelled(ctx, errorf("restart", e.name, err))
	}
	took := time.Since(begin)
	return fmt.Sprintf("restarted in %s", event.Took(took)), map[string]any{"restart_seconds": took.Seconds()}, nil
}
