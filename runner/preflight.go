package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// errNoRestartInPreflight is what the placeholder restart of Preflight
// would return; nothing calls it (Check only asks whether it exists).
var errNoRestartInPreflight = errors.New("no server to restart before the run")

// Preflight checks, before anything starts, that every event of sc can run
// on the target the run will have: its kind is one be's targets have
// (its own or a neutral one), shell events need allowShell, and
// events that restart the server or need its data directory need the
// embedded server (dsn, or the scenario's target.dsn, names a given one).
// Each problem is a scenario.Error at its event's file:line:col, so that
// `validate` and `run` refuse the scenario before any load or change.
func Preflight(be backend.Backend, sc *scenario.Scenario, dsn string, allowShell bool) error {
	if err := backend.CheckEventKinds(be, sc); err != nil {
		return err
	}
	kinds := backend.EventKindsOf(be)
	given := dsn != "" || !sc.Target.Embedded()
	// The embedded server is not started yet: events that would restart
	// it only need to know that they may.
	embedded := &event.Env{AllowShell: allowShell,
		Restart: func(context.Context) error { return errNoRestartInPreflight }}
	env := embedded
	if given {
		env = &event.Env{AllowShell: allowShell, ConnString: dsn}
	}
	var errs scenario.Errors
	for _, spec := range sc.Events {
		ev, err := event.New(kinds, spec)
		if err != nil {
			errs = append(errs, &scenario.Error{File: sc.File, Msg: err.Error()})
			continue
		}
		checker, ok := ev.(event.Checker)
		if !ok {
			continue
		}
		if err := checker.Check(env); err != nil {
			e := &scenario.Error{File: sc.File, Pos: spec.Pos, Msg: err.Error()}
			if given && checker.Check(embedded) == nil {
				e.Hint = "the target is a given server (--dsn or target.dsn): firedrill never restarts it or touches its files"
			}
			errs = append(errs, e)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Validate checks, before anything runs, what a run of sc with these
// options would refuse: an unknown kind of database or a key it does not
// take, events the target cannot have (Preflight), and what the backend
// refuses on a given server (SQL outside firedrill's schema). validate
// and run both call it; it never connects.
func Validate(sc *scenario.Scenario, opts Options) error {
	if opts.Backends == nil {
		return errNoBackends
	}
	targets, err := resolveTargets(sc, opts)
	if err != nil {
		return err
	}
	var errs []error
	for _, tr := range targets {
		topts := opts
		topts.Scenario, topts.DSN = tr.sc, tr.dsn
		if err := preflight(tr.be, tr.sc, topts); err != nil {
			errs = append(errs, targetErr(tr, err))
		}
	}
	return errors.Join(errs...)
}

// givenSettings refuses target.settings on a run given its server with
// --dsn: firedrill sets them only on the server it starts, and a rehearsal
// that silently ran without them would measure another system.
func givenSettings(sc *scenario.Scenario, dsn string) error {
	if dsn == "" || len(sc.Target.Settings) == 0 {
		return nil
	}
	at := sc.Target.Pos
	for _, k := range sc.KindKeys {
		if k.Key == "target.settings" {
			at = k.Pos
		}
	}
	return &scenario.Error{File: sc.File, Pos: at,
		Msg:  "target.settings apply only to the server firedrill starts, and --dsn gives the server",
		Hint: "leave --dsn out to rehearse on a throwaway server with these settings, or set them on your server and remove target.settings"}
}

// preflight is the check of target.settings against --dsn, Preflight,
// the check of --run-as and the backend's own checks.
func preflight(be backend.Backend, sc *scenario.Scenario, opts Options) error {
	return errors.Join(givenSettings(sc, opts.DSN), preflightEvents(be, sc, opts))
}

// preflightEvents is Preflight, the check of --run-as and the backend's
// own checks, each only once the one before passed.
func preflightEvents(be backend.Backend, sc *scenario.Scenario, opts Options) error {
	if err := Preflight(be, sc, opts.DSN, opts.AllowShell); err != nil {
		return err
	}
	if err := checkRunAs(be, sc, opts); err != nil {
		return err
	}
	if p, ok := be.(backend.Preflighter); ok {
		return p.Preflight(backend.Spec{Scenario: sc, DSN: opts.DSN, AllowOutsideSchema: opts.AllowOutsideSchema,
			RunAs: opts.RunAs, PrivilegesOnly: opts.PrivilegesOnly})
	}
	return nil
}

// checkRunAs refuses a --run-as that no run could use: without a given
// server (the embedded one has no user data to confine away from), with
// --allow-outside-schema (which runs everything as the --dsn's account),
// or naming a server of another kind. Its messages never quote the URL,
// which may hold a password.
func checkRunAs(be backend.Backend, sc *scenario.Scenario, opts Options) error {
	if opts.RunAs == "" {
		return nil
	}
	switch {
	case opts.DSN == "" && sc.Target.Embedded():
		return errors.New("--run-as names an account on a given server, but this run starts a throwaway one: give the server with --dsn (or target.dsn), or leave --run-as out")
	case opts.AllowOutsideSchema:
		return errors.New("--run-as and --allow-outside-schema contradict each other: --allow-outside-schema runs everything as the --dsn's account; leave one out")
	}
	other, err := opts.Backends.ForDSN(opts.RunAs)
	if err != nil {
		return fmt.Errorf("--run-as: %w", err)
	}
	if other.Kind() != be.Kind() {
		return fmt.Errorf("--run-as names a %s server, but the run's target is a %s server: give an account on the --dsn's server", other.Kind(), be.Kind())
	}
	return nil
}
