package pgevent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

func TestSQL(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	env := envFor(inst)
	connString := inst.ConnString()

	t.Run("CREATE INDEX CONCURRENTLY under writes", func(t *testing.T) {
		queryRows(t, connString, `CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL);
			INSERT INTO accounts SELECT i, 0 FROM generate_series(1, 20000) AS i`)
		writer := connectAs(t, connString, "writer")
		writeCtx, stopWriting := context.WithCancel(t.Context())
		var writes atomic.Int64
		var writing sync.WaitGroup
		writing.Go(func() {
			for i := 0; writeCtx.Err() == nil; i++ {
				sql := fmt.Sprintf("UPDATE accounts SET balance = balance + 1 WHERE id = %d; "+
					"INSERT INTO accounts VALUES (%d, 0)", i%20000+1, 20000+i+1)
				if _, err := writer.Exec(writeCtx, sql).ReadAll(); err != nil {
					if writeCtx.Err() == nil {
						t.Errorf("writer: %v", err)
					}
					return
				}
				writes.Add(1)
			}
		})
		eventually(t, 30*time.Second, "the writer writes", func() bool { return writes.Load() > 0 })

		ev := mustNew(t, scenario.Event{Name: "cic", Kind: "sql", Config: event.SQLConfig{SQL: []string{
			"CREATE INDEX CONCURRENTLY accounts_balance ON accounts (balance)",
			"ANALYZE accounts",
		}}})
		before := writes.Load()
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		during := writes.Load() - before
		stopWriting()
		writing.Wait()
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s (%d writes meanwhile)", outcome, during)
		mustContain(t, "outcome", outcome, "CREATE INDEX CONCURRENTLY accounts_balance ON", "; ANALYZE accounts ")
		if statements, _ := detail["statements"].([]map[string]any); len(statements) != 2 {
			t.Errorf("detail statements = %v, want 2", detail["statements"])
		}
		if during == 0 {
			t.Error("no writes happened while the index was built")
		}
		if valid := queryValue(t, connString,
			"SELECT indisvalid FROM pg_index WHERE indexrelid = 'accounts_balance'::regclass"); valid != "t" {
			t.Errorf("indisvalid = %s, want t", valid)
		}
	})

	t.Run("failing statement", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "broken", Kind: "sql", Config: event.SQLConfig{SQL: []string{"SELECT 1", "SELECT * FROM no_such_table", "SELECT 3"}}})
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		if err == nil {
			t.Fatalf("Run succeeded: %s", outcome)
		}
		mustContain(t, "error", err.Error(), "statement 2 (SELECT * FROM no_such_table)", "SQLSTATE 42P01")
		mustContain(t, "outcome", outcome, "SELECT 1 ", "SELECT * FROM no_such_table failed after")
		if statements, _ := detail["statements"].([]map[string]any); len(statements) != 2 || statements[1]["sqlstate"] != "42P01" {
			t.Errorf("detail statements = %v, want 2 with the second failing with 42P01", detail["statements"])
		}
	})

	t.Run("cancel stops the statement on the server", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "sleeper", Kind: "sql", Config: event.SQLConfig{SQL: []string{"SELECT pg_sleep(600)"}}})
		ctx, cancel := context.WithCancel(t.Context())
		started, done := runAsync(ctx, ev, env)
		waitStarted(t, started, done)
		eventually(t, 30*time.Second, "the statement runs", func() bool {
			return len(queryRows(t, connString, "SELECT pid FROM pg_stat_activity "+
				"WHERE application_name = 'firedrill-event:sleeper' AND state = 'active'")) == 1
		})
		cancel()
		result := waitDone(t, done, 15*time.Second)
		if !errors.Is(result.Err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", result.Err)
		}
		eventually(t, 10*time.Second, "no session is left", func() bool {
			return sessionsNamed(t, connString, "firedrill-event:sleeper") == 0
		})
	})
}
