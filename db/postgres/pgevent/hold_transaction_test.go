package pgevent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

func TestHoldTransaction(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	env := envFor(inst)
	connString := inst.ConnString()

	t.Run("held for the duration", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "hold", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: 4 * time.Second,
			XID: true, Isolation: "repeatable read", SQL: []string{"SELECT count(*) FROM pg_class"}}})
		started, done := runAsync(t.Context(), ev, env)
		detail := waitStarted(t, started, done)
		pid, xid := detail["pid"], detail["xid"]
		if detail["application_name"] != "firedrill-event:hold" || pid == nil || xid == nil {
			t.Fatalf("started with %v", detail)
		}
		row := queryRows(t, connString, fmt.Sprintf(
			"SELECT state, backend_xid::text, application_name FROM pg_stat_activity WHERE pid = %d", pid))
		if len(row) != 1 {
			t.Fatalf("pid %d is not in pg_stat_activity", pid)
		}
		if got, want := row[0], []string{"idle in transaction", xid.(string), "firedrill-event:hold"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("pg_stat_activity shows %q, want %q", got, want)
		}

		result := waitDone(t, done, time.Minute)
		if result.Err != nil {
			t.Fatalf("Run: %v", result.Err)
		}
		t.Logf("outcome: %s", result.Outcome)
		mustContain(t, "outcome", result.Outcome, "held ", fmt.Sprintf("xid %s, pid %d", xid, pid))
		eventually(t, 10*time.Second, "the session ends", func() bool {
			return sessionsNamed(t, connString, "firedrill-event:hold") == 0
		})
	})

	t.Run("cancelled while idle", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "cancel-idle", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: time.Hour, XID: true}})
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, ev, env)
		waitStarted(t, started, done)
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		eventually(t, 10*time.Second, "no session is left", func() bool {
			return sessionsNamed(t, connString, "firedrill-event:cancel-idle") == 0
		})
	})

	// A statement of the transaction still running gets a cancel request:
	// closing the socket alone would leave it running on the server.
	t.Run("cancelled during a statement", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "cancel-busy", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: time.Hour,
			SQL: []string{"SELECT pg_sleep(600)"}}})
		ctx, cancel := context.WithCancel(t.Context())
		_, done := runAsync(ctx, ev, env)
		eventually(t, 30*time.Second, "the statement runs", func() bool {
			return len(queryRows(t, connString, "SELECT pid FROM pg_stat_activity "+
				"WHERE application_name = 'firedrill-event:cancel-busy' AND state = 'active'")) == 1
		})
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		eventually(t, 10*time.Second, "no session is left", func() bool {
			return sessionsNamed(t, connString, "firedrill-event:cancel-busy") == 0
		})
	})

	t.Run("terminated by an administrator", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "victim", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: time.Hour}})
		started, done := runAsync(t.Context(), ev, env)
		detail := waitStarted(t, started, done)
		queryRows(t, connString, fmt.Sprintf("SELECT pg_terminate_backend(%d)", detail["pid"]))
		result := waitDone(t, done, 30*time.Second)
		if result.Err != nil {
			t.Fatalf("Run: %v (the server ending the session is an outcome, not an error)", result.Err)
		}
		t.Logf("outcome: %s", result.Outcome)
		mustContain(t, "outcome", result.Outcome, "ended by the server after",
			"FATAL: terminating connection due to administrator command (57P01)")
		if result.Detail["sqlstate"] != "57P01" {
			t.Errorf("detail = %v, want sqlstate 57P01", result.Detail)
		}
	})

	t.Run("failing statement", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "broken", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: time.Hour,
			SQL: []string{"SELECT * FROM no_such_table"}}})
		_, done := runAsync(t.Context(), ev, env)
		result := waitDone(t, done, 30*time.Second)
		if result.Err == nil {
			t.Fatal("Run succeeded with a failing statement")
		}
		mustContain(t, "error", result.Err.Error(), "statement 1", "42P01")
		eventually(t, 10*time.Second, "no session is left", func() bool {
			return sessionsNamed(t, connString, "firedrill-event:broken") == 0
		})
	})
}

// The fixed variant of the long-transaction drill: a settings event sets
// idle_in_transaction_session_timeout, and the server ends the hold early.
func TestHoldTransactionEndedByIdleTimeout(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	env := envFor(inst)

	settings := mustNew(t, scenario.Event{Name: "timeout", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{"idle_in_transaction_session_timeout": "1s"}}})
	if outcome, _, err := settings.Run(t.Context(), env, nil); err != nil {
		t.Fatalf("settings: %v", err)
	} else {
		mustContain(t, "settings outcome", outcome, "idle_in_transaction_session_timeout = 1s; reloaded")
	}

	hold := mustNew(t, scenario.Event{Name: "long", Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: time.Minute, XID: true}})
	_, done := runAsync(t.Context(), hold, env)
	result := waitDone(t, done, 50*time.Second) // well before the minute the hold asked for
	if result.Err != nil {
		t.Fatalf("Run: %v (the server ending the session is an outcome, not an error)", result.Err)
	}
	t.Logf("outcome: %s", result.Outcome)
	mustContain(t, "outcome", result.Outcome, "ended by the server after",
		"FATAL: terminating connection due to idle-in-transaction timeout (25P03)")
}
