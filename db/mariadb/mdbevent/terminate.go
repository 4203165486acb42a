package mdbevent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
)

// errUnknownThread is KILL's error for a connection that is gone already.
const errUnknownThread = 1094

// killWait bounds the wait for killed sessions to leave the processlist.
const killWait = 5 * time.Second

// terminateKind is MariaDB's terminate event: it kills sessions with
// KILL CONNECTION, those of a workload (found by their program_name) or
// one connection id (SHOW PROCESSLIST's Id).
var terminateKind = event.TerminateKind(event.TerminateByNumber[int64]("id", math.MaxInt64), newTerminate)

// terminateEvent kills sessions with KILL CONNECTION.
type terminateEvent struct {
	name     string
	appName  string
	workload string
	id       int64
}

var _ event.Event = (*terminateEvent)(nil)

func newTerminate(name string, c event.TerminateConfig[int64]) event.Event {
	return &terminateEvent{name: name, appName: sessionAppName(name), workload: c.Workload, id: c.By}
}

// workloadSessionsSQL finds a workload's sessions by the program_name
// their client sent: only performance_schema shows connection attributes.
const workloadSessionsSQL = `SELECT PROCESSLIST_ID FROM performance_schema.session_connect_attrs
WHERE ATTR_NAME = 'program_name' AND ATTR_VALUE = ? AND PROCESSLIST_ID <> CONNECTION_ID()`

// accountSessionsSQL keeps, of workloadSessionsSQL's, the sessions of the
// run's own account.
const accountSessionsSQL = `
AND PROCESSLIST_ID IN (SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?)`

// Run kills the sessions and waits until they have left the processlist.
// A workload with no sessions is an outcome ("killed 0 sessions"); a
// connection id that is no session is an error.
func (e *terminateEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	// As the account of --dsn, which may see and kill every session: on a
	// given server only the run's own are killed (Target.Account).
	s, err := connectAdmin(ctx, env, e.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("terminate %s: %w", e.name, err))
	}
	defer s.close()
	account := ""
	if t := targetOf(env); t != nil {
		account = t.Account
	}

	detail := map[string]any{}
	var ids []int64
	if e.workload != "" {
		name := env.WorkloadTag(e.workload)
		detail["workload"], detail["program_name"] = e.workload, name
		on, err := s.queryValue(ctx, "SELECT @@performance_schema")
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: %w", e.name, err))
		}
		if on != "1" {
			return "", detail, fmt.Errorf("terminate %s: finding workload %s's sessions needs performance_schema (their program_name is only there), "+
				"and the server runs without it: add performance_schema: ON to the server's configuration (firedrill's own server has it when a scenario terminates a workload), "+
				"or kill one connection with id:", e.name, e.workload)
		}
		query, args := workloadSessionsSQL, []any{name}
		if account != "" {
			query, args = query+accountSessionsSQL, append(args, account)
		}
		rows, err := s.conn.QueryContext(ctx, query, args...)
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: find the sessions: %w", e.name, err))
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return "", detail, fmt.Errorf("terminate %s: find the sessions: %w", e.name, err)
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return "", detail, fmt.Errorf("terminate %s: find the sessions: %w", e.name, err)
		}
	} else {
		detail["target_id"] = e.id
		if account != "" {
			user, err := s.queryValue(ctx, "SELECT USER FROM information_schema.PROCESSLIST WHERE ID = ?", e.id)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: find connection %d: %w", e.name, e.id, err))
			}
			if user != account {
				what := "no session"
				if user != "" {
					what = "a session of " + user
				}
				return "", detail, fmt.Errorf("terminate %s: connection %d is %s, not one of this run's (%s): on a given server firedrill kills only its own sessions; "+
					"run with --allow-outside-schema to kill others", e.name, e.id, what, account)
			}
		}
		ids = []int64{e.id}
	}
	event.Notify(started, maps.Clone(detail))

	var killed []int64
	for _, id := range ids {
		_, err := s.conn.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		if myErr, ok := serverError(err); ok && myErr.Number == errUnknownThread {
			if e.workload == "" {
				return "no such connection", detail, fmt.Errorf("terminate %s: no connection %d: %w", e.name, id, err)
			}
			continue // ended meanwhile
		}
		if err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: KILL CONNECTION %d: %w", e.name, id, err))
		}
		killed = append(killed, id)
	}
	detail["ids"] = killed
	survived, err := waitGone(ctx, s, killed)
	if err != nil {
		return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: %w", e.name, err))
	}
	if len(survived) > 0 {
		detail["not_gone"] = survived
	}
	if e.workload == "" {
		if len(survived) > 0 {
			return fmt.Sprintf("killed connection %d, still there after %s", e.id, killWait), detail, nil
		}
		return fmt.Sprintf("killed connection %d", e.id), detail, nil
	}
	outcome := fmt.Sprintf("killed %d %s of workload %s", len(killed), plural(len(killed), "session"), e.workload)
	if len(survived) > 0 {
		outcome += fmt.Sprintf("; %d still there after %s", len(survived), killWait)
	}
	return outcome, detail, nil
}

// waitGone waits until the killed sessions have left the processlist (a
// KILL marks a session; it ends at its next check), up to killWait, and
// returns those still there.
func waitGone(ctx context.Context, s *session, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = fmt.Sprint(id)
	}
	query := "SELECT ID FROM information_schema.PROCESSLIST WHERE ID IN (" + strings.Join(list, ", ") + ")"
	deadline := time.Now().Add(killWait)
	for {
		rows, err := s.conn.QueryContext(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("check the sessions are gone: %w", err)
		}
		var left []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check the sessions are gone: %w", err)
			}
			left = append(left, id)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("check the sessions are gone: %w", err)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left, nil
		}
		select {
		case <-ctx.Done():
			return left, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
