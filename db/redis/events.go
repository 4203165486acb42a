package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisevent"
	"github.com/firedrill/firedrill/event"
)

var (
	_ backend.EventKinds = Backend{}
	_ backend.Restorer   = Backend{}
)

// How long restoring settings on a given server may take; a run that
// found the server frozen gets one short try.
const (
	restoreWait       = 30 * time.Second
	frozenRestoreWait = 3 * time.Second
)

// EventKinds are Redis's own kinds of event (settings, restart, terminate).
func (Backend) EventKinds() []event.Kind { return redisevent.Kinds() }

// Restore puts back the settings that settings events changed with
// CONFIG SET on the server at dsn and recorded in firedrill-admin:settings_restore
// (schema is PostgreSQL's notion; Redis's record is in the URL's database),
// and removes the ACL users killed runs left.
func (Backend) Restore(ctx context.Context, dsn, _ string, w io.Writer) error {
	cfg, err := redisconn.ParseURL(dsn)
	if err != nil {
		return fmt.Errorf("restore: --dsn: %w", err)
	}
	restored, err := redisevent.RestoreSettings(ctx, cfg)
	for _, r := range restored {
		fmt.Fprintf(w, "%s\n", r)
	}
	if err != nil {
		return err
	}
	sweepLeftovers(ctx, cfg, func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) })
	if len(restored) == 0 {
		fmt.Fprintf(w, "nothing to restore: no setting changed by firedrill is recorded in %s (database %d)\n", redisevent.RestoreKey, cfg.DB)
	}
	return nil
}

// sweepLeftovers removes, for `firedrill restore`, the ACL users of
// killed runs and notes a record of an older firedrill's settings
// events, with an admin connection; an admin without ACL rights is told
// nothing of users it could not have made.
func sweepLeftovers(ctx context.Context, cfg redisconn.Config, logf func(string, ...any)) {
	cfg.Name = "firedrill-acl"
	c, err := redisconn.Dial(ctx, cfg)
	if err != nil {
		return // RestoreSettings just reached it: nothing new to say
	}
	defer c.Close()
	redisevent.NoteLegacyRecord(ctx, c, logf)
	var refused *redisconn.Error
	if err := sweepRunUsers(ctx, c, logf); err != nil && !errors.As(err, &refused) {
		logf("removing the ACL users of killed runs: %v", err)
	}
}

// restoreSettings puts back, on a given server, what settings events
// recorded (a killed run's before this one, this run's after it).
func (tg *target) restoreSettings(ctx context.Context, when string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	restored, err := redisevent.RestoreSettings(ctx, tg.conn)
	for _, r := range restored {
		tg.logf("restored %s %s", when, r)
	}
	var refused *redisconn.Error
	switch {
	case err == nil:
		return nil
	case len(restored) == 0 && errors.As(err, &refused) && (refused.Prefix() == "NOPERM" || strings.HasPrefix(refused.Msg, "ERR unknown command")):
		// A user whose ACL forbids reading firedrill's record (or
		// CONFIG) cannot have had settings changed by firedrill either:
		// its settings events would have failed to record first.
		tg.logf("note: %s: %v; nothing firedrill changed can be recorded there, so there is nothing to restore", when, err)
		return nil
	case len(restored) > 0 || when == "after the run":
		return fmt.Errorf("%s: %w (run `firedrill restore --dsn …` once the server answers)", when, err)
	}
	return fmt.Errorf("%s: %w", when, err)
}

// EventEnv gives events the server: firedrill's sessions' way there, and
// on the embedded server its data directory, slow disk and a restart.
// Shell events get a redis:// URL of the server in FIREDRILL_CONNSTRING.
func (tg *target) EventEnv(allowShell bool, appName func(string) string) *event.Env {
	env := &event.Env{ConnString: tg.url(), AllowShell: allowShell, AppName: appName,
		Backend: &redisevent.Target{Conn: tg.conn, Work: tg.work, Given: tg.given(), AllowOutside: tg.spec.AllowOutsideSchema,
			PrivilegesOnly: tg.spec.PrivilegesOnly, SettingsFailed: tg.settingsFailed.add,
			OnRecord: func() { tg.recorded.Store(true) }}}
	if tg.inst != nil {
		inst := tg.inst
		env.DataDir = inst.DataDir()
		env.SlowDisk = inst.SlowDisk()
		env.Restart = func(ctx context.Context) error { return inst.Restart(ctx, nil) }
	}
	return env
}

// url is the server's redis:// URL: the given one (with the confined
// user's name and password when there is one: a shell event is
// user-written too), or the embedded server's TCP address.
func (tg *target) url() string {
	if dsn := backend.GivenDSN(tg.spec); dsn != "" {
		if tg.work.User != tg.conn.User || tg.work.Password != tg.conn.Password {
			return runAsURL(dsn, tg.conn, tg.work.User, tg.work.Password)
		}
		return dsn
	}
	u := url.URL{Scheme: "redis", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(tg.inst.Port())), Path: "/0"}
	return u.String()
}

// refuseEvictions refuses, on a given server and before anything runs,
// settings events that would make it evict keys that are not firedrill's
// as it is now (redisevent.Evicts; each event checks again when it runs,
// since the load may have filled memory meanwhile).
func (tg *target) refuseEvictions(ctx context.Context) error {
	if tg.spec.AllowOutsideSchema {
		return nil
	}
	var c *redisconn.Conn
	for _, ev := range tg.sc.Events {
		settings, ok := redisevent.SettingsOf(ev)
		if !ok {
			continue
		}
		if c == nil {
			var err error
			if c, err = tg.dial(ctx, "firedrill-settings"); err != nil {
				return fmt.Errorf("check settings events: %w", err)
			}
			defer c.Close()
		}
		if err := redisevent.Evicts(ctx, c, settings); err != nil {
			return fmt.Errorf("%s:%d:%d: event %s: %w", tg.sc.File, ev.Pos.Line, ev.Pos.Col, event.Name(ev), err)
		}
	}
	return nil
}
