// Package event runs the events of a scenario: things done to the target at
// a moment of the run, while the workloads go on (hold a transaction open,
// run SQL, change settings, terminate backends, create disk pressure, run a
// shell command). Each kind is one file (its keys, how they decode from a
// scenario, and how it runs) and one entry in kinds.
//
// Every event works in its own session, tagged with the application_name
// "firedrill-event:<name>" so that samplers and rules can tell it from the
// workloads, and cleans up after itself: when its context ends it rolls
// back, cancels, kills or removes what it holds before returning.
package event

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// Env is what events may touch: the target and what the runner allows.
type Env struct {
	ConnString string                          // libpq connection string of the target database
	Restart    func(ctx context.Context) error // restarts the server; nil when the target is not embedded
	DataDir    string                          // embedded server's data directory ("" when not embedded)
	AllowShell bool                            // --allow-shell: shell events may run
	// Schema confines the events on a given server: their sessions search
	// only it, and settings events record there what to restore. Empty on
	// the embedded server.
	Schema string
	// AppName gives the application_name of a workload's sessions (the
	// runner uses "firedrill:"+workload); nil means that convention.
	AppName func(workload string) string
}

// Started is called by an event once its action has really begun, with
// facts for the timeline (e.g. {"pid": 4711, "xid": "1234"}).
type Started func(detail map[string]any)

// Event is a scenario event ready to run.
type Event interface {
	// Run performs the event and returns when it is over: outcome is a
	// one-line human summary ("held 120.0 s, xid 1234, pid 4711"), detail
	// facts for the timeline. When ctx is cancelled it stops promptly,
	// undoes what it holds (rolls back, removes files) and returns ctx's
	// error.
	Run(ctx context.Context, env *Env, started Started) (outcome string, detail map[string]any, err error)
}

// Checker is implemented by events that can tell before the run starts that
// env lacks something they need (a restartable server, --allow-shell, a
// directory), so that a run fails at once rather than minutes in. Run
// checks too, so calling Check is an optimisation, not a duty.
type Checker interface {
	Check(env *Env) error
}

// SettingsChanger is implemented by events that change the server's
// settings, so that the runner snapshots them again after such an event
// (without knowing the kinds by name).
type SettingsChanger interface {
	ChangesSettings() bool
}

// kind is one kind of event: how a scenario writes it (its keys, decoded
// and checked by its own file) and how the event is built to run.
type kind struct {
	scenario.EventKind
	// build makes the event from a spec whose Config the kind's Decode
	// made (or a test wrote).
	build func(spec scenario.Event) (Event, error)
}

// kinds are the kinds of event, in the order messages list them: a new
// kind is a new file and one entry here.
var kinds = []kind{holdTransactionKind, sqlKind, settingsKind, terminateKind, diskPressureKind, shellKind}

// Kinds are the kinds of event as scenarios write them, for
// scenario.Options.EventKinds.
func Kinds() []scenario.EventKind {
	out := make([]scenario.EventKind, len(kinds))
	for i, k := range kinds {
		out[i] = k.EventKind
	}
	return out
}

// ScenarioOptions are the options to load a scenario whose events this
// package runs.
func ScenarioOptions() scenario.Options {
	return scenario.Options{EventKinds: Kinds()}
}

// New builds the event a spec describes; the spec comes from a scenario
// loaded with ScenarioOptions, whose decoding checked it.
func New(spec scenario.Event) (Event, error) {
	for _, k := range kinds {
		if k.Name != spec.Kind {
			continue
		}
		ev, err := k.build(spec)
		if err != nil {
			return nil, fmt.Errorf("%s event %s%s: %w", spec.Kind, eventName(spec), at(spec.Pos), err)
		}
		return ev, nil
	}
	return nil, fmt.Errorf("event %s%s: unknown kind %q (known: %s)",
		eventName(spec), at(spec.Pos), spec.Kind, strings.Join(kindNames(), ", "))
}

// buildWith adapts a kind's constructor from its own config type C to
// kind.build.
func buildWith[C any](build func(spec scenario.Event, config C) Event) func(scenario.Event) (Event, error) {
	return func(spec scenario.Event) (Event, error) {
		config, ok := spec.Config.(C)
		if !ok {
			return nil, fmt.Errorf("its config is %T, want %T (load the scenario with event.ScenarioOptions)", spec.Config, config)
		}
		return build(spec, config), nil
	}
}

// Statements lists the SQL an event runs as the scenario wrote it (the
// statements of sql and hold_transaction events), so that the runner can
// check, before the run, that it stays in its schema; nil for the others.
func Statements(spec scenario.Event) []string {
	if s, ok := spec.Config.(interface{ statements() []string }); ok {
		return s.statements()
	}
	return nil
}

// at is " at line:col" for a spec that came from a file, so that the
// caller need only prefix the file's name.
func at(pos scenario.Pos) string {
	if pos.Line == 0 {
		return ""
	}
	return fmt.Sprintf(" at %d:%d", pos.Line, pos.Col)
}

// kindNames lists the kinds' names, for messages.
func kindNames() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}

// eventName is the spec's name, or its kind when the scenario gave none.
func eventName(spec scenario.Event) string {
	if spec.Name != "" {
		return spec.Name
	}
	return spec.Kind
}

// notify calls started when the caller gave one.
func notify(started Started, detail map[string]any) {
	if started != nil {
		started(detail)
	}
}

// cancelled returns ctx's error when ctx has ended (to be returned as the
// event's error, as Run promises), else err.
func cancelled(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// cleanupTimeout bounds the work done after ctx has ended (a rollback, a
// goodbye to the server), so that a cancelled event still returns promptly.
const cleanupTimeout = 5 * time.Second

// cleanupContext is for undoing work after ctx may have ended: it keeps
// ctx's values but not its cancellation, and has its own short deadline.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// seconds formats a duration as the outcomes do: "12.3 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// took formats how long a step took, in milliseconds below a second
// ("35 ms") so that quick steps do not all read "0.0 s".
func took(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return seconds(d)
}
