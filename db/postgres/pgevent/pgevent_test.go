package pgevent

import (
	"github.com/firedrill/firedrill/event/eventtest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// TestDecode: each kind decodes its keys into its config, with the
// scenario's defaults and spellings, and rejects what could not run.
func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		want    any    // the config, when wantErr is ""
		wantErr string // "" = valid
	}{
		// Isolation is matched without regard to case, spacing or
		// underscores, and defaults to read committed.
		{"isolation spelled loosely", "{kind: hold_transaction, at: 1s, duration: 1s, isolation: Repeatable  Read}",
			event.HoldTransactionConfig{Duration: time.Second, Isolation: "repeatable read"}, ""},
		{"isolation with underscores", "{kind: hold_transaction, at: 1s, duration: 1s, isolation: read_committed, xid: true, sql: SELECT 1}",
			event.HoldTransactionConfig{Duration: time.Second, Isolation: "read committed", XID: true, SQL: []string{"SELECT 1"}}, ""},
		{"default isolation", "{kind: hold_transaction, at: 1s, duration: 1s}",
			event.HoldTransactionConfig{Duration: time.Second, Isolation: "read committed"}, ""},
		{"unknown isolation", "{kind: hold_transaction, at: 1s, duration: 1s, isolation: snapshot}", nil,
			`:9:63: isolation: unknown isolation level "snapshot"`},
		{"no duration", "{kind: hold_transaction, at: 1s}", nil, `needs duration`},
		{"empty statement", `{kind: sql, at: 1s, sql: ["SELECT 1", " "]}`, nil, ":9:43: sql: empty statement"},
		{"statements", `{kind: sql, at: 1s, sql: ["SELECT 1", "VACUUM"]}`, event.SQLConfig{SQL: []string{"SELECT 1", "VACUUM"}}, ""},
		// A name that could smuggle SQL into ALTER SYSTEM.
		{"bad setting name", `{kind: settings, at: 1s, settings: {"work_mem = 1; DROP": 1}}`, nil, "is not a setting name"},
		{"setting value with NUL", `{kind: settings, at: 1s, settings: {work_mem: "1\0"}}`, nil, "NUL"},
		{"setting ok", "{kind: settings, at: 1s, settings: {pg_stat_statements.track: all, work_mem: 64}, restart: true}",
			event.SettingsConfig{Settings: map[string]string{"pg_stat_statements.track": "all", "work_mem": "64"}, Restart: true}, ""},
		{"workload and pid", "{kind: terminate, at: 1s, workload: oltp, pid: 7}", nil, "needs exactly one of workload or pid"},
		{"no such workload", "{kind: terminate, at: 1s, workload: olap}", nil, `no workload "olap"`},
		{"pid", "{kind: terminate, at: 1s, pid: 7}", event.TerminateConfig[int]{By: 7}, ""},
	}
	build := func(ev scenario.Event) error { _, err := event.New(kinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, event.ScenarioOptions(append(Kinds(), event.Kinds()...)), build, c.name, c.event, c.want, c.wantErr)
	}
}

// Statements gives the runner the SQL of the kinds that run the user's
// SQL, for the outside-the-schema check, and nothing for the others.
func TestStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		event string
		want  []string
	}{
		{`{kind: sql, at: 1s, sql: ["SELECT 1", "VACUUM"]}`, []string{"SELECT 1", "VACUUM"}},
		{`{kind: hold_transaction, at: 1s, duration: 1s, sql: "DROP TABLE public.t"}`, []string{"DROP TABLE public.t"}},
		{`{kind: settings, at: 1s, settings: {work_mem: 1MB}}`, nil},
		{`{kind: shell, at: 1s, command: "psql -c 'DROP TABLE t'"}`, nil},
	}
	for _, test := range tests {
		sc, err := parseEvent(test.event)
		if err != nil {
			t.Fatal(err)
		}
		if got := event.Statements(sc.Events[0]); !slices.Equal(got, test.want) {
			t.Errorf("Statements(%s) = %q, want %q", test.event, got, test.want)
		}
	}
}

// parseEvent loads a scenario with one event, with PostgreSQL's kinds and the neutral ones.
func parseEvent(spec string) (*scenario.Scenario, error) {
	return eventtest.ParseEvent(spec, event.ScenarioOptions(append(Kinds(), event.Kinds()...)))
}

func TestHoldTransactionBegin(t *testing.T) {
	t.Parallel()
	sc, err := parseEvent("{kind: hold_transaction, at: 1s, duration: 1s, isolation: \" repeatable READ \"}")
	if err != nil {
		t.Fatal(err)
	}
	ev := mustNew(t, sc.Events[0])
	if got, want := ev.(*holdTransaction).begin, "BEGIN ISOLATION LEVEL REPEATABLE READ"; got != want {
		t.Errorf("begin = %q, want %q", got, want)
	}
	ev = mustNew(t, scenario.Event{Kind: "hold_transaction", Config: event.HoldTransactionConfig{Duration: 1}})
	if got, want := ev.(*holdTransaction).begin, "BEGIN"; got != want {
		t.Errorf("begin = %q, want %q", got, want)
	}
}

func TestQuoteLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"64MB", "'64MB'"},
		{"it's", "'it''s'"},
		// E'' so that the backslash means itself even with
		// standard_conforming_strings off.
		{`a\b'c`, `E'a\\b''c'`},
		{"", "''"},
	}
	for _, test := range tests {
		if got := quoteLiteral(test.in); got != test.want {
			t.Errorf("quoteLiteral(%q) = %s, want %s", test.in, got, test.want)
		}
	}
}

func TestAlterSystem(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, value, want string }{
		{"work_mem", "64MB", "ALTER SYSTEM SET work_mem = '64MB'"},
		{"Work_Mem", "64MB", "ALTER SYSTEM SET work_mem = '64MB'"},
		// Not a list: the comma is part of the value.
		{"log_line_prefix", "%m, %p ", "ALTER SYSTEM SET log_line_prefix = '%m, %p '"},
		// Lists of names: one literal per element, unquoted names folded.
		{"shared_preload_libraries", "pg_stat_statements, Auto_Explain", "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements', 'auto_explain'"},
		{"search_path", `"$user", public, "Odd ""Schema"""`, `ALTER SYSTEM SET search_path = '$user', 'public', 'Odd "Schema"'`},
		{"search_path", "", "ALTER SYSTEM SET search_path = ''"},
	}
	for _, test := range tests {
		if got := alterSystem(test.name, test.value); got != test.want {
			t.Errorf("alterSystem(%q, %q) =\n  %s\nwant\n  %s", test.name, test.value, got, test.want)
		}
	}
}

func TestSessionAppName(t *testing.T) {
	t.Parallel()
	if got, want := sessionAppName("hold-1"), "firedrill-event:hold-1"; got != want {
		t.Errorf("sessionAppName = %q, want %q", got, want)
	}
	// The server keeps 63 bytes; a cut never splits a character.
	long := sessionAppName(strings.Repeat("é", 40))
	if len(long) > maxAppName || !strings.HasPrefix(long, appNamePrefix) || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("sessionAppName(long) = %q (%d bytes)", long, len(long))
	}
}
