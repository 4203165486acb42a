package pgevent

import (
	"context"
	"github.com/firedrill/firedrill/event/eventtest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/event"
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

// sessionsNamed counts the sessions with an application_name.
func sessionsNamed(t *testing.T, connString, appName string) int {
	t.Helper()
	return len(queryRows(t, connString,
		"SELECT pid FROM pg_stat_activity WHERE application_name = "+quoteLiteral(appName)))
}

// runResult is what an event's Run returned (eventtest).
type runResult = eventtest.Result

// runAsync runs ev in the background (eventtest.RunAsync).
func runAsync(ctx context.Context, ev event.Event, env *event.Env) (<-chan map[string]any, <-chan runResult) {
	return eventtest.RunAsync(func(started func(map[string]any)) (string, map[string]any, error) {
		return ev.Run(ctx, env, started)
	})
}

var (
	waitStarted = eventtest.WaitStarted
	waitDone    = eventtest.WaitDone
	eventually  = eventtest.Eventually
	mustContain = eventtest.MustContain
)
