package mdbevent

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
)

// holdTransactionKind is MariaDB's hold_transaction event; without
// isolation the session's level holds (InnoDB's default is repeatable
// read).
var holdTransactionKind = event.HoldTransactionKind(event.HoldTransactionOptions{
	Isolation: []string{"read uncommitted", "read committed", "repeatable read", "serializable"},
}, newHoldTransaction)

// holdTransaction opens a transaction and leaves it idle for a while: what
// holds back InnoDB's purge (the history list grows) and, with its
// statements, holds row and gap locks others queue behind.
type holdTransaction struct {
	name       string
	appName    string
	isolation  string
	statements []string
	duration   time.Duration
}

var _ event.Event = (*holdTransaction)(nil)

func newHoldTransaction(name string, c event.HoldTransactionConfig) event.Event {
	return &holdTransaction{
		name:       name,
		appName:    sessionAppName(name),
		isolation:  c.Isolation,
		statements: c.SQL,
		duration:   c.Duration,
	}
}

// pingEvery is how often a held transaction's session is checked: a KILL
// or wait_timeout ends it, which only a round trip sees.
const pingEvery = time.Second

// Run opens the transaction (with a consistent snapshot, so that it holds
// back purge from its first moment), holds it idle and rolls it back. The
// server ending the session early (KILL, wait_timeout) is an outcome, not
// an error.
func (h *holdTransaction) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	s, err := connect(ctx, env, h.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: %w", h.name, err))
	}
	// The last resort: closing the connection ends any transaction the
	// paths below failed to roll back.
	defer s.close()

	detail := map[string]any{"connection_id": s.id, "program_name": h.appName}
	var begin []string
	if h.isolation != "" {
		begin = append(begin, "SET TRANSACTION ISOLATION LEVEL "+strings.ToUpper(h.isolation))
		detail["isolation"] = h.isolation
	}
	begin = append(begin, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	for _, stmt := range begin {
		if err := s.exec(ctx, env, stmt); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: %s: %w", h.name, stmt, err))
		}
	}
	for i, stmt := range h.statements {
		if err := s.exec(ctx, env, stmt); err != nil {
			return "", detail, event.Cancelled(ctx, fmt.Errorf("hold_transaction %s: statement %d (%s): %w",
				h.name, i+1, event.SummarizeSQL(stmt), err))
		}
	}
	if trx := transactionID(ctx, env, s.id); trx != "" {
		detail["trx_id"] = trx
	}

	heldSince := time.Now()
	event.Notify(started, maps.Clone(detail))
	holdCtx, cancelHold := context.WithDeadline(ctx, heldSince.Add(h.duration))
	defer cancelHold()
	ticker := time.NewTicker(pingEvery)
	defer ticker.Stop()
	for holdCtx.Err() == nil {
		select {
		case <-holdCtx.Done():
			continue
		case <-ticker.C:
		}
		// With ctx, not holdCtx: the driver drops a connection whose
		// context ends mid-call, and the ROLLBACK below needs it.
		if err := s.conn.PingContext(ctx); err != nil && ctx.Err() == nil {
			held := time.Since(heldSince)
			detail["held_seconds"] = held.Seconds()
			detail["ended_by_server"] = err.Error()
			return fmt.Sprintf("ended by the server after %s: %v", event.Seconds(held), err), detail, nil
		}
	}
	held := time.Since(heldSince)
	detail["held_seconds"] = held.Seconds()
	if ctx.Err() != nil {
		return "", detail, ctx.Err() // closing the session rolls back
	}
	if err := s.exec(ctx, env, "ROLLBACK"); err != nil {
		if ctx.Err() != nil {
			return "", detail, ctx.Err()
		}
		detail["ended_by_server"] = err.Error()
		return fmt.Sprintf("ended by the server after %s: %v", event.Seconds(held), err), detail, nil
	}
	return fmt.Sprintf("held %s, connection %d", event.Seconds(held), s.id), detail, nil
}

// transactionID is InnoDB's id of the transaction session id holds, read
// as the account of --dsn (INNODB_TRX needs PROCESS, which the confined
// account lacks); "" when it cannot be read: it is a detail.
func transactionID(ctx context.Context, env *event.Env, id int64) string {
	admin, err := connectAdmin(ctx, env, appNamePrefix+"trx")
	if err != nil {
		return ""
	}
	defer admin.close()
	trx, err := admin.queryValue(ctx, "SELECT trx_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?", id)
	if err != nil {
		return ""
	}
	return trx
}
