package event

import (
	"context"
	"fmt"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// RestartKind is the restart kind for a backend whose embedded server
// Env.Restart restarts (stopped in order and started again with the same
// options), which the backend offers among its own kinds. hint is what the
// scenario's check tells a user whose target is a given server, and
// notEmbedded what the event says when run on one (after "restart NAME: ").
func RestartKind(hint, notEmbedded string) Kind {
	return Kind{
		EventKind: scenario.EventKind{
			Name:    "restart",
			Example: "{kind: restart, at: 30s}",
			Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
				needEmbedded(d, d.Hintf, hint)
				return RestartConfig{}, 0
			},
		},
		Build: BuildWith(func(spec scenario.Event, _ RestartConfig) Event {
			return &restartEvent{name: Name(spec), notEmbedded: notEmbedded}
		}),
	}
}

// RestartConfig is what a restart event takes: nothing.
type RestartConfig struct{}

// restartEvent restarts the embedded server; the workloads lose their
// sessions meanwhile and reconnect.
type restartEvent struct {
	name        string
	notEmbedded string
}

var (
	_ Event   = (*restartEvent)(nil)
	_ Checker = (*restartEvent)(nil)
)

// Check refuses a server firedrill did not start.
func (e *restartEvent) Check(env *Env) error {
	if env.Restart == nil {
		return fmt.Errorf("restart %s: %s", e.name, e.notEmbedded)
	}
	return nil
}

// Run restarts the server and says how long it took.
func (e *restartEvent) Run(ctx context.Context, env *Env, started Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	Notify(started, nil)
	begin := time.Now()
	if err := env.Restart(ctx); err != nil {
		return "", nil, Cancelled(ctx, fmt.Errorf("restart %s: %w", e.name, err))
	}
	took := time.Since(begin)
	return "restarted in " + Took(took), map[string]any{"restart_seconds": took.Seconds()}, nil
}

// needEmbedded reports, once the whole scenario is read, an event that
// restarts the server (a restart event, settings with restart: true) in a
// scenario whose target is a given server (dsn set): firedrill restarts
// only the server it started. hintf is where the problem is reported (the
// event's decoder or one of its values), hint what to do.
func needEmbedded(d *scenario.EventDecoder, hintf func(hint, format string, args ...any), hint string) {
	what := d.What()
	d.Later(func(s *scenario.Scenario) {
		if !s.Target.Embedded() {
			hintf(hint, "%s: restart needs the embedded target, and dsn is set", what)
		}
	})
}
