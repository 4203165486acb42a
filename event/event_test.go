package event

import (
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/scenario"
)

func TestKindsMatchScenario(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(scenario.EventKinds))
	if got := Kinds(); !slices.Equal(got, want) {
		t.Errorf("Kinds() = %v, scenario.EventKinds = %v", got, want)
	}
}

// Every kind needs something a zero spec lacks, and says which event it
// refused.
func TestNewRejectsEmptySpecs(t *testing.T) {
	t.Parallel()
	for _, kind := range Kinds() {
		_, err := New(scenario.Event{Kind: kind, Name: "the-event"})
		if err == nil {
			t.Errorf("New(empty %s spec) succeeded", kind)
			continue
		}
		mustContain(t, "error", err.Error(), kind, "the-event")
	}
	_, err := New(scenario.Event{Kind: "flood", Name: "x", Pos: scenario.Pos{Line: 12, Col: 5}})
	if err == nil {
		t.Fatal("New accepted an unknown kind")
	}
	mustContain(t, "error", err.Error(), `event x at 12:5: unknown kind "flood"`, "hold_transaction")
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    scenario.Event
		wantErr string // "" = valid
	}{
		// Isolation is matched without regard to case or spacing.
		{"isolation spelled loosely", scenario.Event{Kind: "hold_transaction", Duration: 1, Isolation: "Repeatable  Read"}, ""},
		{"isolation with underscores", scenario.Event{Kind: "hold_transaction", Duration: 1, Isolation: "read_committed"}, ""},
		{"unknown isolation", scenario.Event{Kind: "hold_transaction", Duration: 1, Isolation: "snapshot"}, `isolation "snapshot"`},
		{"empty statement", scenario.Event{Kind: "sql", SQL: []string{"SELECT 1", " "}}, "sql statement 2 is empty"},
		// A name that could smuggle SQL into ALTER SYSTEM.
		{"bad setting name", scenario.Event{Kind: "settings", Settings: map[string]string{"work_mem = 1; DROP": "1"}}, "not a valid parameter name"},
		{"setting ok", scenario.Event{Kind: "settings", Settings: map[string]string{"pg_stat_statements.track": "all"}}, ""},
		{"workload and pid", scenario.Event{Kind: "terminate", Workload: "oltp", PID: 7}, "either workload"},
		{"negative rate", scenario.Event{Kind: "disk_pressure", Size: 1, Rate: -1}, "rate -1 is negative"},
		{"blank command", scenario.Event{Kind: "shell", Command: "  "}, "needs command"},
	}
	for _, test := range tests {
		_, err := New(test.spec)
		switch {
		case test.wantErr == "" && err != nil:
			t.Errorf("%s: %v", test.name, err)
		case test.wantErr != "" && err == nil:
			t.Errorf("%s: accepted", test.name)
		case test.wantErr != "":
			mustContain(t, test.name+": error", err.Error(), test.wantErr)
		}
	}
}

func TestHoldTransactionBegin(t *testing.T) {
	t.Parallel()
	ev := mustNew(t, scenario.Event{Kind: "hold_transaction", Duration: 1, Isolation: " repeatable READ "})
	if got, want := ev.(*holdTransaction).begin, "BEGIN ISOLATION LEVEL REPEATABLE READ"; got != want {
		t.Errorf("begin = %q, want %q", got, want)
	}
	ev = mustNew(t, scenario.Event{Kind: "hold_transaction", Duration: 1})
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

func TestSummarizeSQL(t *testing.T) {
	t.Parallel()
	if got, want := summarizeSQL("CREATE INDEX CONCURRENTLY i\n\t ON t (v)"), "CREATE INDEX CONCURRENTLY i ON t (v)"; got != want {
		t.Errorf("summarizeSQL = %q, want %q", got, want)
	}
	long := summarizeSQL(strings.Repeat("x ", 100))
	if n := len([]rune(long)); n != 60 || !strings.HasSuffix(long, "…") {
		t.Errorf("summarizeSQL(long) = %q (%d characters)", long, n)
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1536, "1.5 KiB"},
		{512 << 20, "512 MiB"},
		{3 << 29, "1.5 GiB"},
		{2 << 30, "2 GiB"},
	}
	for _, test := range tests {
		if got := formatBytes(test.n); got != test.want {
			t.Errorf("formatBytes(%d) = %q, want %q", test.n, got, test.want)
		}
	}
}

func TestTailBufferLastLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ output, want string }{
		{"", ""},
		{"one\ntwo\n\n", "two"},
		{"  only  ", "only"},
		{strings.Repeat("a", 5000) + "\nlast\r\n", "last"},
		{strings.Repeat("b", 300), strings.Repeat("b", 199) + "…"},
	}
	for _, test := range tests {
		tail := &tailBuffer{max: shellOutputKept}
		// Written in pieces, as a pipe delivers it.
		for chunk := range slices.Chunk([]byte(test.output), 1000) {
			tail.Write(chunk)
		}
		if got := tail.lastLine(); got != test.want {
			t.Errorf("lastLine of %.20q… = %q, want %q", test.output, got, test.want)
		}
	}
}
