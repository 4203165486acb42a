package event

import (
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event/eventtest"
	"github.com/firedrill/firedrill/scenario"
)

func TestSummarizeSQL(t *testing.T) {
	t.Parallel()
	if got, want := SummarizeSQL("CREATE INDEX CONCURRENTLY i\n\t ON t (v)"), "CREATE INDEX CONCURRENTLY i ON t (v)"; got != want {
		t.Errorf("SummarizeSQL = %q, want %q", got, want)
	}
	long := SummarizeSQL(strings.Repeat("x ", 100))
	if n := len([]rune(long)); n != 60 || !strings.HasSuffix(long, "…") {
		t.Errorf("SummarizeSQL(long) = %q (%d characters)", long, n)
	}
}

// sharedKeysConfig is what the test kind below decodes: every key an SQL
// backend's kinds decode with this file's helpers.
type sharedKeysConfig struct {
	Settings  map[string]string
	Restart   bool
	SQL       []string
	Isolation string
	Duration  time.Duration
}

// sharedKeysKind is a kind made of the helpers alone, so that their
// messages are checked here once rather than per backend.
var sharedKeysKind = Kind{
	EventKind: scenario.EventKind{
		Name:    "shared_keys",
		Keys:    []string{"settings", "restart", "sql", "isolation", "duration"},
		Example: "{kind: shared_keys, at: 1s, settings: {a: 1}}",
		Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
			var c sharedKeysConfig
			d.Key("settings", func(v scenario.Value) {
				c.Settings = DecodeSettings(d, v, "settings: {a: 1}", func(name string) bool { return !strings.Contains(name, "-") }, "a name without -")
			})
			d.Key("restart", func(v scenario.Value) { c.Restart = DecodeRestart(d, v) })
			d.Key("sql", func(v scenario.Value) { c.SQL = DecodeStatements(v) })
			d.Key("isolation", func(v scenario.Value) {
				if level, ok := DecodeIsolation(v, []string{"read committed", "serializable"}); ok {
					c.Isolation = level
				}
			})
			d.Key("duration", func(v scenario.Value) { c.Duration = DecodePositiveDuration(d, v) })
			return c, 0
		},
	},
	Build: BuildWith(func(scenario.Event, sharedKeysConfig) Event { return nil }),
}

func TestSharedKeysDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		want    any    // the config, when wantErr is ""
		wantErr string // "" = valid
	}{
		{"all keys", `{kind: shared_keys, at: 1s, settings: {a: 1}, restart: true, sql: ["SELECT 1", "SELECT 2"], isolation: Read_Committed, duration: 2s}`,
			sharedKeysConfig{Settings: map[string]string{"a": "1"}, Restart: true, SQL: []string{"SELECT 1", "SELECT 2"}, Isolation: "read committed", Duration: 2 * time.Second}, ""},
		{"one statement", `{kind: shared_keys, at: 1s, sql: "SELECT 1"}`, sharedKeysConfig{SQL: []string{"SELECT 1"}}, ""},
		{"empty settings", "{kind: shared_keys, at: 1s, settings: {}}", nil, "as in settings: {a: 1}"},
		{"bad name", "{kind: shared_keys, at: 1s, settings: {a-b: 1}}", nil, `settings: "a-b" is not a name without -`},
		{"NUL in a value", `{kind: shared_keys, at: 1s, settings: {a: "x\0y"}}`, nil, "settings.a: the value holds a NUL byte"},
		{"empty statement", `{kind: shared_keys, at: 1s, sql: ["SELECT 1", " "]}`, nil, "sql: empty statement"},
		{"unknown isolation", "{kind: shared_keys, at: 1s, isolation: snapshot}", nil, `isolation: unknown isolation level "snapshot"`},
		{"zero duration", "{kind: shared_keys, at: 1s, duration: 0s}", nil, "duration must be longer than 0s"},
	}
	kinds := []Kind{sharedKeysKind}
	build := func(ev scenario.Event) error { _, err := New(kinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, ScenarioOptions(kinds), build, c.name, c.event, c.want, c.wantErr)
	}
}

func TestWorkloadTag(t *testing.T) {
	t.Parallel()
	if got := (&Env{}).WorkloadTag("orders"); got != "firedrill:orders" {
		t.Errorf("without AppName: %q", got)
	}
	env := &Env{AppName: func(w string) string { return "run7:" + w }}
	if got := env.WorkloadTag("orders"); got != "run7:orders" {
		t.Errorf("with AppName: %q", got)
	}
}
