// Package event runs the events of a scenario: things done to the target at
// a moment of the run, while the workloads go on. It holds what every kind
// shares (Event, Env, Kind) and the kinds any target can have, whatever its
// database (create disk pressure, run a shell command); a backend offers
// its own kinds from its own package (PostgreSQL's in db/postgres/pgevent)
// through backend.EventKinds. Each kind is one file (its keys, how they
// decode from a scenario, and how it runs) and one entry in its package's
// list.
//
// The kinds several backends have by the same name (sql, settings,
// hold_transaction, terminate, restart) are made here (SQLKind,
// SettingsKind, HoldTransactionKind, TerminateKind, RestartKind): their
// keys decode once, into neutral configs, and the backend gives only what
// its database does differently (how it connects, applies, kills).
//
// Every event cleans up after itself: when its context ends it rolls
// back, cancels, kills or removes what it holds before returning. Events
// that open sessions tag them so that samplers and rules can tell them
// from the workloads.
package event

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/internal/slowdisk"
	"github.com/firedrill/firedrill/scenario"
)

// Env is what events may touch: the target and what the runner allows.
type Env struct {
	// ConnString is the target's connection string, in its backend's
	// format (for PostgreSQL a libpq one); neutral kinds only pass it on
	// (shell events export it).
	ConnString string
	Restart    func(ctx context.Context) error // restarts the server; nil when the target is not embedded
	DataDir    string                          // embedded server's data directory ("" when not embedded)
	AllowShell bool                            // --allow-shell: shell events may run
	// SlowDisk switches the embedded server's slow disk on and off (the
	// slow mode of disk_pressure); "" when the server was not started
	// with the slow-disk library (WantsSlowDisk tells a backend to).
	SlowDisk slowdisk.Control
	// AppName gives the tag of a workload's sessions (the runner uses
	// "firedrill:"+workload); nil means that convention.
	AppName func(workload string) string
	// Backend is what the target's backend gives its own kinds beyond
	// the above, which they type-assert (PostgreSQL: *pgevent.Target,
	// firedrill's schema on a given server); nil when it gives nothing.
	// Neutral kinds never look at it.
	Backend any
}

// WorkloadTag is the tag of a workload's sessions (PostgreSQL's
// application_name, MariaDB's program_name, Redis's client name), by which
// events find them: AppName's, or the runner's convention without one.
func (env *Env) WorkloadTag(workload string) string {
	if env.AppName != nil {
		return env.AppName(workload)
	}
	return "firedrill:" + workload
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

// Kind is one kind of event: how a scenario writes it (its keys, decoded
// and checked by its own file) and how the event is built to run.
type Kind struct {
	scenario.EventKind
	// Build makes the event from a spec whose Config the kind's Decode
	// made (or a test wrote).
	Build func(spec scenario.Event) (Event, error)
}

// kinds are the kinds any target can have, in the order messages list
// them: a new neutral kind is a new file and one entry here (a kind that
// needs one database goes in its backend's package).
var kinds = []Kind{diskPressureKind, shellKind}

// Kinds are the kinds of event any target can have, whatever its
// database; backend.EventKindsOf adds a backend's own.
func Kinds() []Kind { return slices.Clone(kinds) }

// ScenarioOptions are the options to load a scenario whose events are of
// these kinds (backend.Registry.ScenarioOptions gives every kind firedrill
// has).
func ScenarioOptions(kinds []Kind) scenario.Options {
	out := make([]scenario.EventKind, len(kinds))
	for i, k := range kinds {
		out[i] = k.EventKind
	}
	return scenario.Options{EventKinds: out}
}

// New builds the event a spec describes, with its kind among kinds; the
// spec comes from a scenario loaded with ScenarioOptions, whose decoding
// checked it.
func New(kinds []Kind, spec scenario.Event) (Event, error) {
	for _, k := range kinds {
		if k.Name != spec.Kind {
			continue
		}
		ev, err := k.Build(spec)
		if err != nil {
			return nil, fmt.Errorf("%s event %s%s: %w", spec.Kind, Name(spec), at(spec.Pos), err)
		}
		return ev, nil
	}
	return nil, fmt.Errorf("event %s%s: unknown kind %q (known: %s)",
		Name(spec), at(spec.Pos), spec.Kind, strings.Join(KindNames(kinds), ", "))
}

// BuildWith adapts a kind's constructor from its own config type C to
// Kind.Build.
func BuildWith[C any](build func(spec scenario.Event, config C) Event) func(scenario.Event) (Event, error) {
	return func(spec scenario.Event) (Event, error) {
		config, ok := spec.Config.(C)
		if !ok {
			return nil, fmt.Errorf("its config is %T, want %T (load the scenario with the ScenarioOptions of its kinds)", spec.Config, config)
		}
		return build(spec, config), nil
	}
}

// at is " at line:col" for a spec that came from a file, so that the
// caller need only prefix the file's name.
func at(pos scenario.Pos) string {
	if pos.Line <= 0 { // below 0: a value given with --set, not in the file
		return ""
	}
	return fmt.Sprintf(" at %d:%d", pos.Line, pos.Col)
}

// KindNames lists the kinds' names, for messages.
func KindNames(kinds []Kind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}

// The helpers below are what every kind's file uses, in whichever package
// it lives, so that all kinds name, report and clean up alike.

// Name is the spec's name, or its kind when the scenario gave none.
func Name(spec scenario.Event) string {
	if spec.Name != "" {
		return spec.Name
	}
	return spec.Kind
}

// Notify calls started when the caller gave one.
func Notify(started Started, detail map[string]any) {
	if started != nil {
		started(detail)
	}
}

// Cancelled returns ctx's error when ctx has ended (to be returned as the
// event's error, as Run promises), else err.
func Cancelled(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// CleanupTimeout bounds the work done after ctx has ended (a rollback, a
// goodbye to the server), so that a cancelled event still returns promptly.
const CleanupTimeout = 5 * time.Second

// CleanupContext is for undoing work after ctx may have ended: it keeps
// ctx's values but not its cancellation, and has its own short deadline.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// Seconds formats a duration as the outcomes do: "12.3 s".
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Took formats how long a step took, in milliseconds below a second
// ("35 ms") so that quick steps do not all read "0.0 s".
func Took(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return Seconds(d)
}
