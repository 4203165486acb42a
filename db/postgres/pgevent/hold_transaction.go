package pgevent

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
)

// holdTransactionKind is PostgreSQL's hold_transaction event; the
// default isolation is BEGIN's (read committed), and xid takes a
// transaction id (SELECT txid_current()).
var holdTransactionKind = event.HoldTransactionKind(event.HoldTransactionOptions{
	Isolation:        []string{"read committed", "repeatable read", "serializable"},
	DefaultIsolation: "read committed",
	XID:              true,
}, newHoldTransaction)

// holdTransaction opens a transaction and leaves it idle for a while: the
// classic cause of vacuum falling behind (an old xmin or xid holds back
// the horizon) and of lock queues.
type holdTransaction struct {
	name       string
	appName    string
	begin      string // BEGIN, with the isolation level when one was asked for
	statements []string
	takeXID    bool
	duration   time.Duration
}

var _ event.Event = (*holdTransaction)(nil)

func newHoldTransaction(name string, c event.HoldTransactionConfig) event.Event {
	begin := "BEGIN"
	if c.Isolation != "" {
		begin += " ISOLATION LEVEL " + strings.ToUpper(c.Isolation)
	}
	return &holdTransaction{
		name:       name,
		appName:    sessionAppName(name),
		begin:      begin,
		statements: c.SQL,
		takeXID:    c.XID,
		duration:   c.Duration,
	}
}

// Run opens the transaction, holds it idle and rolls it back. The server
// ending the session early (idle_in_transaction_session_timeout,
// pg_terminate_backend) is an outcome, not an error: drills rely on it.
func (h *holdTransaction) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	s, err := connect(ctx, env, h.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: %w", h.name, err))
	}
	// The last resort: closing the connection ends any transaction the
	// paths below failed to roll back.
	defer s.close(ctx)

	detail := map[string]any{"pid": s.pid(), "application_name": h.appName}
	if len(h.statements) > 0 {
		// What took the locks: pg_stat_activity shows only the session's
		// last statement, the xid probe when xid is asked for.
		sql := make([]string, len(h.statements))
		for i, stmt := range h.statements {
			sql[i] = event.SummarizeSQL(stmt)
		}
		detail["sql"] = strings.Join(sql, "; ")
	}
	if _, err := s.exec(ctx, h.begin); err != nil {
		return "", detail, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: %s: %w", h.name, h.begin, err))
	}
	for i, stmt := range h.statements {
		if _, err := s.exec(ctx, stmt); err != nil {
			h.rollback(ctx, s)
			return "", detail, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: statement %d (%s): %w",
				h.name, i+1, event.SummarizeSQL(stmt), err))
		}
	}
	if h.takeXID {
		txid, err := s.queryValue(ctx, "SELECT txid_current()")
		if err != nil {
			h.rollback(ctx, s)
			return "", detail, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: take a transaction id: %w", h.name, err))
		}
		// txid_current() carries the epoch in its high 32 bits;
		// pg_stat_activity.backend_xid and pg_locks show the xid without it.
		full, err := strconv.ParseUint(txid, 10, 64)
		if err != nil {
			h.rollback(ctx, s)
			return "", detail, fmt.Errorf("hold_transaction %s: txid_current() returned %q: %w", h.name, txid, err)
		}
		detail["xid"] = strconv.FormatUint(full&0xFFFFFFFF, 10)
		detail["txid"] = txid
	}

	heldSince := time.Now()
	// A copy: the runner may keep what it was given while Run adds to detail.
	event.Notify(started, maps.Clone(detail))
	holdCtx, cancelHold := context.WithDeadline(ctx, heldSince.Add(h.duration))
	defer cancelHold()
	for {
		err := s.waitIdle(holdCtx)
		if err == nil {
			continue // a notification, if the statements ran LISTEN
		}
		held := time.Since(heldSince)
		detail["held_seconds"] = held.Seconds()
		if ctx.Err() != nil {
			h.rollback(ctx, s)
			return "", detail, ctx.Err()
		}
		if why, ended := s.endedByServer(err); ended {
			return h.endedOutcome(held, why, err, detail), detail, nil
		}
		if holdCtx.Err() == nil {
			h.rollback(ctx, s)
			return "", detail, fmt.Errorf("hold_transaction %s: while idle in transaction: %w", h.name, err)
		}
		break // held for the whole duration
	}

	if _, err := s.exec(ctx, "ROLLBACK"); err != nil {
		if ctx.Err() != nil {
			return "", detail, ctx.Err()
		}
		if why, ended := s.endedByServer(err); ended {
			return h.endedOutcome(time.Since(heldSince), why, err, detail), detail, nil
		}
		return "", detail, fmt.Errorf("hold_transaction %s: ROLLBACK: %w", h.name, err)
	}
	outcome := "held " + event.Seconds(time.Since(heldSince))
	if xid, ok := detail["xid"]; ok {
		outcome += fmt.Sprintf(", xid %s", xid)
	}
	outcome += fmt.Sprintf(", pid %d", s.pid())
	return outcome, detail, nil
}

// endedOutcome records that the server ended the session after held, and
// says so.
func (h *holdTransaction) endedOutcome(held time.Duration, why string, err error, detail map[string]any) string {
	detail["held_seconds"] = held.Seconds()
	detail["ended_by_server"] = why
	if code := sqlState(err); code != "" {
		detail["sqlstate"] = code
	}
	return fmt.Sprintf("ended by the server after %s: %s", event.Seconds(held), why)
}

// rollback ends the transaction after a failure or a cancellation, within
// event.CleanupTimeout.
func (h *holdTransaction) rollback(ctx context.Context, s *session) {
	rollbackCtx, cancel := event.CleanupContext(ctx)
	defer cancel()
	// A failed ROLLBACK is followed by closing the connection (deferred in
	// Run), which ends the transaction just as surely; the error that got
	// us here is the one worth reporting.
	_, _ = s.exec(rollbackCtx, "ROLLBACK")
}
