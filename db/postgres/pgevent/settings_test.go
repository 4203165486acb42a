package pgevent

import (
	"maps"
	"testing"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	env := envFor(inst)
	connString := inst.ConnString()

	t.Run("reload", func(t *testing.T) {
		changed := map[string]string{"work_mem": "64MB", "maintenance_work_mem": "128MB"}
		ev := mustNew(t, scenario.Event{Name: "mem", Kind: "settings", Config: event.SettingsConfig{Settings: changed}})
		var startedWith map[string]any
		outcome, detail, err := ev.Run(t.Context(), env, func(d map[string]any) { startedWith = d })
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		if want := "maintenance_work_mem = 128MB, work_mem = 64MB; reloaded"; outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		if got, _ := detail["changed"].(map[string]string); !maps.Equal(got, changed) {
			t.Errorf("detail changed = %v, want %v", detail["changed"], changed)
		}
		if startedWith == nil {
			t.Error("started was not called")
		}
		if got := queryValue(t, connString, "SHOW work_mem"); got != "64MB" {
			t.Errorf("work_mem on a new session = %s, want 64MB", got)
		}
	})

	// Values that need quoting reach the server unchanged: quotes,
	// backslashes, a comma in a plain string, and a list of names.
	t.Run("quoting", func(t *testing.T) {
		prefix := `%m [%p] it's, a\b `
		searchPath := `"$user", public, "Odd Schema"`
		ev := mustNew(t, scenario.Event{Name: "quotes", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{"log_line_prefix": prefix, "search_path": searchPath}}})
		if _, _, err := ev.Run(t.Context(), env, nil); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := queryValue(t, connString, "SHOW log_line_prefix"); got != prefix {
			t.Errorf("log_line_prefix = %q, want %q", got, prefix)
		}
		if got := queryValue(t, connString, "SHOW search_path"); got != searchPath {
			t.Errorf("search_path = %q, want %q", got, searchPath)
		}
	})

	t.Run("needs a restart it may not do", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "buffers", Kind: "settings", Config: event.SettingsConfig{Settings: map[string]string{"shared_buffers": "256MB"}}})
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err == nil {
			t.Fatalf("Run succeeded: %s", outcome)
		}
		want := "shared_buffers needs a restart; set restart: true"
		if outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		mustContain(t, "error", err.Error(), want)
	})

	t.Run("restart", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "buffers", Kind: "settings", Config: event.SettingsConfig{Restart: true,
			Settings: map[string]string{"shared_buffers": "256MB"}}})
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("outcome: %s", outcome)
		mustContain(t, "outcome", outcome, "shared_buffers = 256MB; restarted in ")
		if detail["restart_seconds"] == nil {
			t.Errorf("detail %v lacks restart_seconds", detail)
		}
		if got := queryValue(t, connString, "SHOW shared_buffers"); got != "256MB" {
			t.Errorf("shared_buffers after the event = %s, want 256MB", got)
		}
	})

	t.Run("restart without an embedded server", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "buffers", Kind: "settings", Config: event.SettingsConfig{Restart: true,
			Settings: map[string]string{"shared_buffers": "128MB"}}})
		remote := *env
		remote.Restart = nil
		if err := ev.(event.Checker).Check(&remote); err == nil {
			t.Error("Check accepted restart: true without env.Restart")
		}
		_, _, err := ev.Run(t.Context(), &remote, nil)
		if err == nil {
			t.Fatal("Run succeeded without env.Restart")
		}
		mustContain(t, "error", err.Error(), "restart needs the embedded server")
		// Refused before changing anything.
		if got := queryValue(t, connString, "SELECT setting FROM pg_file_settings "+
			"WHERE name = 'shared_buffers' AND sourcefile LIKE '%postgresql.auto.conf'"); got != "256MB" {
			t.Errorf("shared_buffers in postgresql.auto.conf = %s, want 256MB (set by the previous subtest)", got)
		}
	})
}
