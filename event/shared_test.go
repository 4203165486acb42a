package event

import (
	"context"
	"math"
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

// noEvent is what the shared kinds' test builds: their decoding is what
// is tested here, each backend's tests run its events.
type noEvent struct{}

func (noEvent) Run(context.Context, *Env, Started) (string, map[string]any, error) {
	return "", nil, nil
}

// sharedKinds are the shared kinds as a backend would make them, with
// options that exercise every shared key.
var sharedKinds = []Kind{
	SQLKind(`{kind: sql, at: 1s, sql: "SELECT 1"}`, nil),
	SettingsKind(SettingsOptions{
		Example:   "settings: {a: 1}",
		ValidName: func(name string) bool { return !strings.Contains(name, "-") },
		NotAName:  "a name without -",
		Restart:   true,
	}, nil),
	HoldTransactionKind(HoldTransactionOptions{
		Isolation:        []string{"read committed", "serializable"},
		DefaultIsolation: "read committed",
		XID:              true,
	}, func(string, HoldTransactionConfig) Event { return noEvent{} }),
	TerminateKind(TerminateByNumber[int]("pid", math.MaxInt32), func(string, TerminateConfig[int]) Event { return noEvent{} }),
}

// TestSharedDecode: the keys that several backends' kinds share decode
// here, once; every problem names its file:line:col (the event is on line
// 9 of eventtest.ParseEvent's scenario, at column 5).
func TestSharedDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		want    any    // the config, when wantErr is ""
		wantErr string // "" = valid
	}{
		// sql
		{"statements", `{kind: sql, at: 1s, sql: ["SELECT 1", "SELECT 2"]}`, SQLConfig{SQL: []string{"SELECT 1", "SELECT 2"}}, ""},
		{"one statement", `{kind: sql, at: 1s, sql: "SELECT 1"}`, SQLConfig{SQL: []string{"SELECT 1"}}, ""},
		{"empty statement", `{kind: sql, at: 1s, sql: ["SELECT 1", " "]}`, nil, "event.yaml:9:43: sql: empty statement"},
		{"no sql", `{kind: sql, at: 1s}`, nil, `event.yaml:9:5: sql event "sql-1" needs sql`},
		{"sql not a string", `{kind: sql, at: 1s, sql: [{a: 1}]}`, nil, "event.yaml:9:31: sql: "},
		// settings
		{"settings", `{kind: settings, at: 1s, settings: {a: 1, b: x}, restart: true}`,
			SettingsConfig{Settings: map[string]string{"a": "1", "b": "x"}, Restart: true}, ""},
		{"empty settings", "{kind: settings, at: 1s, settings: {}}", nil, `event.yaml:9:40: settings event "settings-1": settings: empty`},
		{"empty settings hint", "{kind: settings, at: 1s, settings: {}}", nil, "as in settings: {a: 1}"},
		{"bad name", "{kind: settings, at: 1s, settings: {a-b: 1}}", nil, `event.yaml:9:40: settings: "a-b" is not a name without -`},
		{"NUL in a value", `{kind: settings, at: 1s, settings: {a: "x\0y"}}`, nil, "event.yaml:9:40: settings.a: the value holds a NUL byte"},
		{"restart not a bool", "{kind: settings, at: 1s, settings: {a: 1}, restart: soon}", nil, "event.yaml:9:57: restart: "},
		{"no settings", "{kind: settings, at: 1s, restart: true}", nil, `event.yaml:9:5: settings event "settings-1" needs settings`},
		// hold_transaction
		{"hold", `{kind: hold_transaction, at: 1s, duration: 2s, isolation: Serializable, xid: true, sql: "SELECT 1"}`,
			HoldTransactionConfig{Duration: 2 * time.Second, Isolation: "serializable", XID: true, SQL: []string{"SELECT 1"}}, ""},
		{"default isolation", `{kind: hold_transaction, at: 1s, duration: 2s}`,
			HoldTransactionConfig{Duration: 2 * time.Second, Isolation: "read committed"}, ""},
		{"isolation spelled loosely", `{kind: hold_transaction, at: 1s, duration: 2s, isolation: " Read_Committed "}`,
			HoldTransactionConfig{Duration: 2 * time.Second, Isolation: "read committed"}, ""},
		{"unknown isolation", "{kind: hold_transaction, at: 1s, duration: 1s, isolation: snapshot}", nil,
			`event.yaml:9:63: isolation: unknown isolation level "snapshot"`},
		{"zero duration", "{kind: hold_transaction, at: 1s, duration: 0s}", nil,
			`event.yaml:9:48: hold_transaction event "hold_transaction-1": duration must be longer than 0s`},
		{"no duration", "{kind: hold_transaction, at: 1s}", nil, `event.yaml:9:5: hold_transaction event "hold_transaction-1" needs duration`},
		{"empty statement in hold", `{kind: hold_transaction, at: 1s, duration: 1s, sql: ""}`, nil, "event.yaml:9:57: sql: empty statement"},
		// terminate
		{"terminate a workload", "{kind: terminate, at: 1s, workload: oltp}", TerminateConfig[int]{Workload: "oltp"}, ""},
		{"terminate a pid", "{kind: terminate, at: 1s, pid: 7}", TerminateConfig[int]{By: 7}, ""},
		{"unknown workload", "{kind: terminate, at: 1s, workload: oltq}", nil, `event.yaml:9:41: terminate event "terminate-1": no workload "oltq"`},
		{"bad pid", "{kind: terminate, at: 1s, pid: 0}", nil, "event.yaml:9:36: pid: "},
		{"both", "{kind: terminate, at: 1s, workload: oltp, pid: 7}", nil,
			`event.yaml:9:5: terminate event "terminate-1" needs exactly one of workload or pid`},
		{"neither", "{kind: terminate, at: 1s}", nil, `event.yaml:9:5: terminate event "terminate-1" needs exactly one of workload or pid`},
		// keys of another shared kind
		{"xid on sql", `{kind: sql, at: 1s, sql: "SELECT 1", xid: true}`, nil, "event.yaml:9:42: xid does not apply to a sql event"},
	}
	build := func(ev scenario.Event) error { _, err := New(sharedKinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, ScenarioOptions(sharedKinds), build, c.name, c.event, c.want, c.wantErr)
	}
}

// TestSharedDecodeOptions: what a backend leaves out of a shared kind
// (restart, xid) is no key of its events.
func TestSharedDecodeOptions(t *testing.T) {
	t.Parallel()
	kinds := []Kind{
		SettingsKind(SettingsOptions{Example: "settings: {a: 1}"}, nil),
		HoldTransactionKind(HoldTransactionOptions{Isolation: []string{"serializable"}}, func(string, HoldTransactionConfig) Event { return noEvent{} }),
	}
	tests := []struct {
		name    string
		event   string
		want    any
		wantErr string
	}{
		{"any name without ValidName", "{kind: settings, at: 1s, settings: {maxmemory-policy: noeviction}}",
			SettingsConfig{Settings: map[string]string{"maxmemory-policy": "noeviction"}}, ""},
		{"no restart key", "{kind: settings, at: 1s, settings: {a: 1}, restart: true}", nil, `event.yaml:9:48: unknown key "restart"`},
		{"no xid key", "{kind: hold_transaction, at: 1s, duration: 1s, xid: true}", nil, `event.yaml:9:52: unknown key "xid"`},
		{"no default isolation", "{kind: hold_transaction, at: 1s, duration: 1s}", HoldTransactionConfig{Duration: time.Second}, ""},
	}
	build := func(ev scenario.Event) error { _, err := New(kinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, ScenarioOptions(kinds), build, c.name, c.event, c.want, c.wantErr)
	}
}

// TestRestartNeedsEmbedded: restart: true, and a restart event, are
// refused at their file:line:col in a scenario whose target is given.
func TestRestartNeedsEmbedded(t *testing.T) {
	t.Parallel()
	kinds := []Kind{sharedKinds[1], RestartKind("remove dsn", "not embedded")}
	src := `name: given
duration: 10m
target: {dsn: "postgres://db.example/app"}
workloads:
  - {name: oltp, scripts: [select-only], clients: 1}
events:
  - {kind: settings, at: 1s, settings: {a: 1}, restart: true}
  - {kind: restart, at: 2s}
`
	_, err := scenario.Parse("given.yaml", []byte(src), ScenarioOptions(kinds))
	if err == nil {
		t.Fatal("accepted restarts of a given server")
	}
	eventtest.MustContain(t, "error", err.Error(),
		`given.yaml:7:57: settings event "settings-1": restart needs the embedded target, and dsn is set`,
		`given.yaml:8:5: restart event "restart-2": restart needs the embedded target, and dsn is set`)
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
