package pgevent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// On a given server (a Target with a Schema in Env.Backend) a settings
// event records what it replaces, and RestoreSettings puts postgresql.auto.conf back as it was:
// a value the user had set comes back, a setting that was not there is
// reset, a restart-only one that never applied stops pending, and one
// changed since by someone else is left alone.
func TestSettingsAreRestored(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	inst := startServer(t)
	ctx := context.Background()
	admin, err := pgconn.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("ALTER SYSTEM SET work_mem = '5MB'")
	exec("ALTER SYSTEM SET maintenance_work_mem = '70MB'")
	exec("SELECT pg_reload_conf()")
	autoConf := filepath.Join(inst.DataDir(), "postgresql.auto.conf")
	before := readFile(t, autoConf)

	env := envFor(inst)
	env.Restart, env.Backend = nil, &Target{Schema: "firedrill"}
	ev := mustNew(t, scenario.Event{Name: "knobs", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{
		"work_mem": "64MB", "log_min_duration_statement": "0", "maintenance_work_mem": "80MB"}}})
	if _, _, err := ev.Run(ctx, env, nil); err != nil {
		t.Fatalf("settings event: %v", err)
	}
	big := mustNew(t, scenario.Event{Name: "big", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{"shared_buffers": "256MB"}}})
	if _, _, err := big.Run(ctx, env, nil); err == nil || !strings.Contains(err.Error(), "needs a restart") {
		t.Fatalf("shared_buffers without restart: %v", err)
	}
	// A second change of work_mem must not take 64MB for the original.
	again := mustNew(t, scenario.Event{Name: "again", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{"work_mem": "32MB"}}})
	if _, _, err := again.Run(ctx, env, nil); err != nil {
		t.Fatal(err)
	}
	changed := readFile(t, autoConf)
	for _, want := range []string{"work_mem = '32MB'", "log_min_duration_statement = '0'", "shared_buffers = '256MB'"} {
		if !strings.Contains(changed, want) {
			t.Fatalf("postgresql.auto.conf lacks %q:\n%s", want, changed)
		}
	}
	// Someone else changes maintenance_work_mem after firedrill did.
	exec("ALTER SYSTEM SET maintenance_work_mem = '90MB'")

	restored, err := RestoreSettings(ctx, inst.ConnString(), "firedrill")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	got := map[string]string{}
	for _, r := range restored {
		got[r.Name] = r.Outcome
		if r.PendingRestart {
			t.Errorf("%s still pending a restart after the restore", r.Name)
		}
	}
	want := map[string]string{
		"work_mem":                   "set back to 5MB",
		"log_min_duration_statement": "reset (it was not in postgresql.auto.conf before the run)",
		"shared_buffers":             "reset (it was not in postgresql.auto.conf before the run)",
		"maintenance_work_mem":       "left alone: changed to 90MB since by someone else",
	}
	for name, outcome := range want {
		if got[name] != outcome {
			t.Errorf("%s: %q, want %q", name, got[name], outcome)
		}
	}
	exec("ALTER SYSTEM SET maintenance_work_mem = '70MB'") // what the user had
	if after := readFile(t, autoConf); after != before {
		t.Errorf("postgresql.auto.conf not as before:\n%s\nwant:\n%s", after, before)
	}
	res := admin.ExecParams(ctx, "SELECT count(*) FROM pg_settings WHERE pending_restart", nil, nil, nil, nil).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "0" {
		t.Errorf("settings pending a restart after the restore: %v %v", res.Rows, res.Err)
	}
	// Nothing left to restore: a second call is a no-op.
	if again, err := RestoreSettings(ctx, inst.ConnString(), "firedrill"); err != nil || len(again) != 0 {
		t.Errorf("second restore: %v, %v", again, err)
	}
	// And a server that never had a settings event has nothing to restore.
	if none, err := RestoreSettings(ctx, inst.ConnString(), "no_such_schema"); err != nil || len(none) != 0 {
		t.Errorf("restore without the table: %v, %v", none, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
