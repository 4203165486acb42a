package mdbevent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// holdTransactionKind is how a scenario writes a hold_transaction event.
var holdTransactionKind = event.Kind{
	EventKind: scenario.EventKind{
		Name:    "hold_transaction",
		Keys:    []string{"duration", "isolation", "sql"},
		Example: "{kind: hold_transaction, at: 60s, duration: 2m}",
		Decode:  decodeHoldTransaction,
	},
	Build: event.BuildWith(newHoldTransaction),
}

// isolationLevels are the levels a scenario may ask for; InnoDB's default
// is repeatable read.
var isolationLevels = []string{"read uncommitted", "read committed", "repeatable read", "serializable"}

// holdTransactionConfig is what a hold_transaction event takes.
type holdTransactionConfig struct {
	Duration  time.Duration // how long the transaction stays open
	Isolation string        // one of isolationLevels; "" is the session's
	SQL       []string      // run inside the transaction first (the locks it holds)
}

func (c holdTransactionConfig) statements() []string { return c.SQL }

func decodeHoldTransaction(d *scenario.EventDecoder) (any, time.Duration) {
	var c holdTransactionConfig
	d.Key("duration", func(v scenario.Value) { c.Duration = event.DecodePositiveDuration(d, v) })
	d.Key("isolation", func(v scenario.Value) {
		if level, ok := event.DecodeIsolation(v, isolationLevels); ok {
			c.Isolation = level
		}
	})
	d.Key("sql", func(v scenario.Value) { c.SQL = event.DecodeStatements(v) })
	d.Need("duration")
	return c, c.Duration
}

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

func newHoldTransaction(spec scenario.Event, c holdTransactionConfig) event.Event {
	return &holdTransaction{
		name:       event.Name(spec),
		appName:    sessionAppName(event.Name(spec)),
		isolation:  c.Isolation,
		statements: slices.Clone(c.SQL),
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
