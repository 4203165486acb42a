package pgevent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/instance/postgres"
	"github.com/firedrill/firedrill/scenario"
)

// startServer starts a throwaway server that is stopped when the test ends.
func startServer(t *testing.T) *postgres.Instance {
	t.Helper()
	inst, err := postgres.Start(t.Context(), postgres.Options{})
	if err != nil {
		t.Fatalf("start the embedded server: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop the embedded server: %v", err)
		}
	})
	return inst
}

// envFor is the Env the runner gives events for an embedded server.
func envFor(inst *postgres.Instance) *event.Env {
	return &event.Env{
		ConnString: inst.ConnString(),
		Restart:    func(ctx context.Context) error { return inst.Restart(ctx, nil) },
		DataDir:    inst.DataDir(),
		AppName:    func(workload string) string { return "firedrill:" + workload },
	}
}

// mustNew builds an event of spec or fails the test.
func mustNew(t *testing.T, spec scenario.Event) event.Event {
	t.Helper()
	ev, err := event.New(kinds, spec)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	return ev
}

// runResult is what Run returned.
type runResult struct {
	outcome string
	detail  map[string]any
	err     error
}

// runAsync runs ev in the background: the first channel receives what
// it passed to started, the second what Run returned.
func runAsync(ctx context.Context, ev event.Event, env *event.Env) (<-chan map[string]any, <-chan runResult) {
	started := make(chan map[string]any, 1)
	done := make(chan runResult, 1)
	go func() {
		outcome, detail, err := ev.Run(ctx, env, func(detail map[string]any) { started <- detail })
		done <- runResult{outcome, detail, err}
	}()
	return started, done
}

// waitStarted waits for an event to call started, failing the test if it
// returns first or takes over a minute.
func waitStarted(t *testing.T, started <-chan map[string]any, done <-chan runResult) map[string]any {
	t.Helper()
	select {
	case detail := <-started:
		return detail
	case result := <-done:
		t.Fatalf("Run returned before starting: outcome %q, err %v", result.outcome, result.err)
	case <-time.After(time.Minute):
		t.Fatal("the event did not start within a minute")
	}
	return nil
}

// waitDone waits for Run to return; within is generous, so that only a
// hung event fails it.
func waitDone(t *testing.T, done <-chan runResult, within time.Duration) runResult {
	t.Helper()
	select {
	case result := <-done:
		return result
	case <-time.After(within):
		t.Fatalf("Run did not return within %s", within)
	}
	return runResult{}
}

// connectAs opens a session with the given application_name, closed when
// the test ends.
func connectAs(t *testing.T, connString, appName string) *pgconn.PgConn {
	t.Helper()
	config, err := pgconn.ParseConfig(connString)
	if err != nil {
		t.Fatalf("parse %q: %v", connString, err)
	}
	config.RuntimeParams["application_name"] = appName
	conn, err := pgconn.ConnectConfig(t.Context(), config)
	if err != nil {
		t.Fatalf("connect as %s: %v", appName, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// queryRows runs sql on a new connection and returns its rows as text
// ("" for NULL).
func queryRows(t *testing.T, connString, sql string) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, connString+" application_name=event-test")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	results, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var rows [][]string
	for _, row := range results[len(results)-1].Rows {
		values := make([]string, len(row))
		for i, value := range row {
			values[i] = string(value)
		}
		rows = append(rows, values)
	}
	return rows
}

// queryValue runs sql on a new connection and returns the first column of
// its only row.
func queryValue(t *testing.T, connString, sql string) string {
	t.Helper()
	rows := queryRows(t, connString, sql)
	if len(rows) != 1 {
		t.Fatalf("%s: %d rows, want 1", sql, len(rows))
	}
	return rows[0][0]
}

// eventually polls cond until it holds, failing the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sessionsNamed counts the sessions with an application_name.
func sessionsNamed(t *testing.T, connString, appName string) int {
	t.Helper()
	return len(queryRows(t, connString,
		"SELECT pid FROM pg_stat_activity WHERE application_name = "+quoteLiteral(appName)))
}

// mustContain fails the test unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s %q does not contain %q", what, s, part)
		}
	}
}
