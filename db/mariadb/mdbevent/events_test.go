package mdbevent

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/event/eventtest"
	"github.com/firedrill/firedrill/scenario"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	build := func(spec scenario.Event) error { _, err := event.New(kinds, spec); return err }
	tests := []struct {
		name, event string
		want        any
		wantErr     string
	}{
		{"settings", "{kind: settings, at: 1s, settings: {innodb_lock_wait_timeout: 5}}",
			event.SettingsConfig{Settings: map[string]string{"innodb_lock_wait_timeout": "5"}}, ""},
		{"settings, bad name", "{kind: settings, at: 1s, settings: {\"a;b\": 5}}", nil, "is not a setting name"},
		{"hold", "{kind: hold_transaction, at: 1s, duration: 2s, isolation: Read_Committed, sql: \"SELECT 1 FOR UPDATE\"}",
			event.HoldTransactionConfig{Duration: 2 * time.Second, Isolation: "read committed", SQL: []string{"SELECT 1 FOR UPDATE"}}, ""},
		{"hold, bad isolation", "{kind: hold_transaction, at: 1s, duration: 2s, isolation: snapshot}", nil, "unknown isolation level"},
		{"terminate by id", "{kind: terminate, at: 1s, id: 42}", event.TerminateConfig[int64]{By: 42}, ""},
		{"terminate by workload", "{kind: terminate, at: 1s, workload: oltp}", event.TerminateConfig[int64]{Workload: "oltp"}, ""},
		{"terminate, neither", "{kind: terminate, at: 1s}", nil, "workload"},
		{"sql", "{kind: sql, at: 1s, sql: [\"ANALYZE TABLE t\", \"OPTIMIZE TABLE t\"]}", event.SQLConfig{SQL: []string{"ANALYZE TABLE t", "OPTIMIZE TABLE t"}}, ""},
		{"restart", "{kind: restart, at: 1s}", event.RestartConfig{}, ""},
	}
	for _, test := range tests {
		eventtest.CheckDecode(t, options(), build, test.name, test.event, test.want, test.wantErr)
	}
}

func TestSettingsOnTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	inst := startServer(t, map[string]string{"innodb_autoinc_lock_mode": "1"})
	env := embeddedEnv(inst)
	db := openDB(t, inst)

	// A dynamic variable: SET GLOBAL, and kept for a later restart.
	outcome, _, err := mustNew(t, "{kind: settings, at: 0s, settings: {innodb_lock_wait_timeout: 7}}").Run(t.Context(), env, nil)
	if err != nil || !strings.Contains(outcome, "innodb_lock_wait_timeout = 7; SET GLOBAL") {
		t.Fatalf("dynamic: %q, %v", outcome, err)
	}
	pid := inst.PID()
	// A static one restarts the server with it.
	outcome, detail, err := mustNew(t, "{kind: settings, at: 0s, settings: {innodb_autoinc_lock_mode: 2}}").Run(t.Context(), env, nil)
	if err != nil || !strings.Contains(outcome, "innodb_autoinc_lock_mode = 2; restarted in") || inst.PID() == pid {
		t.Fatalf("static: %q, %v, %v (pid %d → %d)", outcome, detail, err, pid, inst.PID())
	}
	if got := value(t, db, "SELECT @@GLOBAL.innodb_lock_wait_timeout"); got != "7" {
		t.Errorf("innodb_lock_wait_timeout = %s after the restart, want the earlier event's 7 kept", got)
	}
	// restart: true with a dynamic one restarts too.
	pid = inst.PID()
	if _, _, err := mustNew(t, "{kind: settings, at: 0s, restart: true, settings: {max_connections: 123}}").Run(t.Context(), env, nil); err != nil || inst.PID() == pid {
		t.Fatalf("restart: true: %v (pid %d → %d)", err, pid, inst.PID())
	}
	if got := value(t, db, "SELECT @@GLOBAL.max_connections"); got != "123" {
		t.Errorf("max_connections = %s, want 123", got)
	}
	// The restart event.
	pid = inst.PID()
	if outcome, _, err := mustNew(t, "{kind: restart, at: 0s}").Run(t.Context(), env, nil); err != nil || !strings.HasPrefix(outcome, "restarted in") || inst.PID() == pid {
		t.Errorf("restart: %q, %v", outcome, err)
	}
	// On a given server a static variable is refused, and says why.
	_, _, err = mustNew(t, "{kind: settings, at: 0s, settings: {innodb_autoinc_lock_mode: 1}}").Run(t.Context(), givenEnv(inst), nil)
	if err == nil || !strings.Contains(err.Error(), "innodb_autoinc_lock_mode cannot change while the server runs") {
		t.Errorf("static on a given server: %v", err)
	}
	if _, _, err := mustNew(t, "{kind: restart, at: 0s}").Run(t.Context(), givenEnv(inst), nil); err == nil {
		t.Error("restart of a given server was not refused")
	}
}

func TestHoldTransactionSQLAndTerminate(t *testing.T) {
	t.Parallel()
	inst := startServer(t, map[string]string{"performance_schema": "ON"})
	env := embeddedEnv(inst)
	db := openDB(t, inst)
	if _, _, err := mustNew(t, `{kind: sql, at: 0s, sql: ["CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0); SELECT 1; INSERT INTO t VALUES (2, 0)"]}`).Run(t.Context(), env, nil); err != nil {
		t.Fatalf("sql: %v", err)
	}

	if got := value(t, db, "SELECT COUNT(*) FROM t"); got != "2" {
		t.Fatalf("rows after the sql event = %s, want 2 (both statements of its second item ran)", got)
	}
	// A failing statement after a good one in the same item is an error.
	if _, _, err := mustNew(t, `{kind: sql, at: 0s, sql: "SELECT 1; SELEC 2"}`).Run(t.Context(), env, nil); err == nil || !strings.Contains(err.Error(), "1064") {
		t.Errorf("a bad second statement: %v, want a 1064 error", err)
	}

	// A held transaction holds its row lock and shows in INNODB_TRX.
	hold := mustNew(t, `{kind: hold_transaction, at: 0s, duration: 1m, sql: "SELECT * FROM t WHERE id = 1 FOR UPDATE"}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started, done := eventtest.RunAsync(func(s func(map[string]any)) (string, map[string]any, error) { return hold.Run(ctx, env, s) })
	detail := eventtest.WaitStarted(t, started, done)
	id := detail["connection_id"].(int64)
	if got := value(t, db, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?", id); got != "1" {
		t.Errorf("INNODB_TRX has %s transactions of connection %d, want 1", got, id)
	}
	if _, err := db.ExecContext(t.Context(), "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE t SET v = 1 WHERE id = 1"); err == nil || !strings.Contains(err.Error(), "1205") {
		t.Errorf("an UPDATE of the held row: %v, want a lock wait timeout (1205)", err)
	}

	// terminate by id ends it: the held transaction reports the server ended it.
	outcome, _, err := mustNew(t, "{kind: terminate, at: 0s, id: "+itoa(id)+"}").Run(t.Context(), env, nil)
	if err != nil || outcome != "killed connection "+itoa(id) {
		t.Fatalf("terminate: %q, %v", outcome, err)
	}
	result := eventtest.WaitDone(t, done, 30*time.Second)
	if result.Err != nil || !strings.HasPrefix(result.Outcome, "ended by the server") {
		t.Errorf("hold after KILL: %q, %v", result.Outcome, result.Err)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE t SET v = 1 WHERE id = 1"); err != nil {
		t.Errorf("the row is still locked after the kill: %v", err)
	}

	// terminate by workload finds its sessions by program_name.
	workloadSession := openTagged(t, inst, "firedrill:oltp")
	var workloadID int64
	if err := workloadSession.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&workloadID); err != nil {
		t.Fatal(err)
	}
	outcome, detail, err = mustNew(t, "{kind: terminate, at: 0s, workload: oltp}").Run(t.Context(), env, nil)
	if err != nil || outcome != "killed 1 session of workload oltp" {
		t.Errorf("terminate workload: %q, %v, %v", outcome, detail, err)
	}
	if got := value(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", workloadID); got != "0" {
		t.Errorf("the workload's session %d is still there", workloadID)
	}
	if outcome, _, err := mustNew(t, "{kind: terminate, at: 0s, id: 999999}").Run(t.Context(), env, nil); err == nil {
		t.Errorf("terminate of no connection: %q, want an error", outcome)
	}

	// A held transaction cancelled by the end of the run rolls back.
	ctx2, cancel2 := context.WithCancel(t.Context())
	started, done = eventtest.RunAsync(func(s func(map[string]any)) (string, map[string]any, error) {
		return mustNew(t, `{kind: hold_transaction, at: 0s, duration: 1m, sql: "UPDATE t SET v = 99 WHERE id = 1"}`).Run(ctx2, env, s)
	})
	eventtest.WaitStarted(t, started, done)
	cancel2()
	if result := eventtest.WaitDone(t, done, 30*time.Second); result.Err != context.Canceled {
		t.Errorf("cancelled hold: %v", result.Err)
	}
	eventtest.Eventually(t, 10*time.Second, "the cancelled transaction rolled back", func() bool {
		return value(t, db, "SELECT v FROM t WHERE id = 1") == "1"
	})
}

// A hold that runs its whole duration rolls back and says so.
func TestHoldTransactionForItsDuration(t *testing.T) {
	t.Parallel()
	inst := startServer(t, nil)
	outcome, detail, err := mustNew(t, "{kind: hold_transaction, at: 0s, duration: 1500ms, isolation: read committed}").Run(t.Context(), embeddedEnv(inst), nil)
	if err != nil || !strings.HasPrefix(outcome, "held 1.") || detail["isolation"] != "read committed" {
		t.Errorf("hold: %q, %v, %v", outcome, detail, err)
	}
}

func TestTerminateWorkloadWithoutPerformanceSchema(t *testing.T) {
	t.Parallel()
	inst := startServer(t, nil)
	_, _, err := mustNew(t, "{kind: terminate, at: 0s, workload: oltp}").Run(t.Context(), embeddedEnv(inst), nil)
	if err == nil || !strings.Contains(err.Error(), "performance_schema: ON to the server's configuration") {
		t.Errorf("terminate workload without performance_schema: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
