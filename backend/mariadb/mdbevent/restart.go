package mdbevent

import (
	"context"
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
			d.Hintf("firedrill restarts only the server it started; remove dsn or the event", "%s: restart needs the embedded target, and dsn is set", what)
		}
	})
	return restartConfig{}, 0
}

// restartEvent stops the embedded server (a normal shutdown) and starts it
// again with the same options: the workloads lose their sessions and
// reconnect, and the buffer pool starts cold.
type restartEvent struct{ name string }

var (
	_ event.Event   = (*restartEvent)(nil)
	_ event.Checker = (*restartEvent)(nil)
)

func newRestart(spec scenario.Event, _ restartConfig) event.Event {
	return &restartEvent{name: event.Name(spec)}
}

// Check refuses a server firedrill did not start.
func (e *restartEvent) Check(env *event.Env) error {
	if env.Restart == nil {
		return fmt.Errorf("restart %s: firedrill restarts only the server it started, and this run's was given (--dsn)", e.name)
	}
	return nil
}

// Run restarts the server and says how long it was away.
func (e *restartEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	event.Notify(started, nil)
	begin := time.Now()
	if err := env.Restart(ctx); err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("restart %s: %w", e.name, err))
	}
	took := time.Since(begin)
	return "restarted in " + event.Took(took), map[string]any{"restart_seconds": took.Seconds()}, nil
}
