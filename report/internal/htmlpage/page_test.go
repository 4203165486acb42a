package htmlpage

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

func TestClock(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sec  float64
		want string
	}{
		{0, "0:00"},
		{59.4, "0:59"},
		{59.6, "1:00"}, // rounds, as the axis does
		{3599, "59:59"},
		{3600, "1:00:00"},
		{-5, "-0:05"}, // a mark just before the start
	} {
		if got := clock(tt.sec); got != tt.want {
			t.Errorf("clock(%v) = %q, want %q", tt.sec, got, tt.want)
		}
	}
}

func TestWindowText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		t0, t1 float64
		want   string
	}{
		{65, 150, "1:05–2:30 (85 s)"},
		{60, 60, "at 1:00"},            // a moment
		{60, 0, "at 1:00"},             // no end given
		{0, 900, "0:00–15:00 (15m0s)"}, // long windows in minutes
	} {
		if got := windowText(tt.t0, tt.t1); got != tt.want {
			t.Errorf("windowText(%v, %v) = %q, want %q", tt.t0, tt.t1, got, tt.want)
		}
	}
}

func TestNumbers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, got, want string
	}{
		{"ms sub-µs", msText(0.0004), "<0.001"},
		{"ms small", msText(0.25), "0.25"},
		{"ms", msText(12.345), "12.3"},
		{"ms big", msText(1234.6), "1235"},
		{"count", countText(1234567), "1\u202f234\u202f567"},
		{"count small", countText(999), "999"},
		{"count negative", countText(-1234), "-1\u202f234"},
		{"num int", numText(90123), "90\u202f123"},
		{"num float", numText(0.41234), "0.4123"},
		{"rate", rateText(1234.6), "1\u202f235"},
		{"rate small", rateText(12.34), "12.3"},
		{"bytes", bytesText(16 << 30), "16.0 GiB"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestColumnJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(column{0, 1, 2.5, math.NaN(), 1234567.891, 0.000123456789, 1e20, math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	// Integers exact, six significant digits otherwise, gaps as null.
	if want := `[0,1,2.5,null,1.23457e+06,0.000123457,1e+20,null]`; string(b) != want {
		t.Errorf("column = %s, want %s", b, want)
	}
	b, err = json.Marshal(timeColumn{1.0004, 2, 3599.99951})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[1,2,3600]`; string(b) != want {
		t.Errorf("timeColumn = %s, want %s", b, want)
	}
}

func TestEventBands(t *testing.T) {
	t.Parallel()
	marks := []timeline.Mark{
		{T: 10, Event: "hold", Kind: "hold_transaction", Phase: timeline.PhaseStart},
		{T: 12, Event: "kill", Kind: "terminate", Phase: timeline.PhaseStart},
		{T: 12.1, Event: "kill", Kind: "terminate", Phase: timeline.PhaseEnd, Outcome: "3 backends"},
		{T: 20, Event: "hold", Kind: "hold_transaction", Phase: timeline.PhaseEnd, Outcome: "rolled back"},
		{T: 30, Event: "hold", Kind: "hold_transaction", Phase: timeline.PhaseStart}, // repeated, never ended
		{T: 40, Event: "orphan", Kind: "sql", Phase: timeline.PhaseEnd, Error: "syntax error"},
	}
	want := []eventBand{
		{Name: "hold", Kind: "hold_transaction", Start: 10, End: 20, Outcome: "rolled back"},
		{Name: "kill", Kind: "terminate", Start: 12, End: 12.1, Outcome: "3 backends"},
		{Name: "hold", Kind: "hold_transaction", Start: 30, End: -1},
		{Name: "orphan", Kind: "sql", Start: 40, End: 40, Error: "syntax error"},
	}
	if got := eventBands(marks); !reflect.DeepEqual(got, want) {
		t.Errorf("eventBands =\n%+v\nwant\n%+v", got, want)
	}
}

func TestSettingChanges(t *testing.T) {
	t.Parallel()
	initial := map[string]string{"work_mem": "4MB", "shared_buffers": "128MB"}
	mark := func(tm float64, changed any) timeline.Mark {
		return timeline.Mark{T: tm, Event: "tune", Kind: "settings", Phase: timeline.PhaseEnd, Detail: map[string]any{"changed": changed}}
	}
	for _, tt := range []struct {
		name  string
		marks []timeline.Mark
		want  []settingChange
	}{
		{
			name:  "name to new value: before from the start settings",
			marks: []timeline.Mark{mark(5, map[string]any{"work_mem": "64MB"})},
			want:  []settingChange{{T: 5, Event: "tune", Name: "work_mem", Before: "4MB", After: "64MB", AfterFromEvent: true}},
		},
		{
			name: "two changes in a row: the second's before is the first's after",
			marks: []timeline.Mark{
				mark(5, map[string]any{"work_mem": "64MB"}),
				mark(9, map[string]any{"work_mem": "1GB"}),
			},
			want: []settingChange{
				{T: 5, Event: "tune", Name: "work_mem", Before: "4MB", After: "64MB", AfterFromEvent: true},
				{T: 9, Event: "tune", Name: "work_mem", Before: "64MB", After: "1GB", AfterFromEvent: true},
			},
		},
		{
			name:  "old and new given",
			marks: []timeline.Mark{mark(5, map[string]any{"shared_buffers": map[string]any{"old": "128MB", "new": "1GB"}})},
			want:  []settingChange{{T: 5, Event: "tune", Name: "shared_buffers", Before: "128MB", After: "1GB", AfterFromEvent: true}},
		},
		{
			name: "a list of name/from/to, and name=value strings",
			marks: []timeline.Mark{mark(5, []any{
				map[string]any{"name": "jit", "from": "on", "to": "off"},
				"max_wal_size = 4GB",
			})},
			want: []settingChange{
				{T: 5, Event: "tune", Name: "jit", Before: "on", After: "off", AfterFromEvent: true},
				{T: 5, Event: "tune", Name: "max_wal_size", BeforeUnknown: true, After: "4GB", AfterFromEvent: true},
			},
		},
		{
			name:  "numbers are settings too",
			marks: []timeline.Mark{mark(5, map[string]any{"max_connections": float64(500)})},
			want:  []settingChange{{T: 5, Event: "tune", Name: "max_connections", BeforeUnknown: true, After: "500", AfterFromEvent: true}},
		},
	} {
		if got := settingChanges(initial, tt.marks); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestSortFindings(t *testing.T) {
	t.Parallel()
	got := sortFindings([]diagnose.Finding{
		{Rule: "a", Severity: diagnose.Info, Start: 1},
		{Rule: "b", Severity: "bogus", Start: 0},
		{Rule: "c", Severity: diagnose.Critical, Start: 50},
		{Rule: "d", Severity: diagnose.Warning, Start: 5},
		{Rule: "e", Severity: diagnose.Critical, Start: 10},
	})
	var rules, ids []string
	for _, f := range got {
		rules = append(rules, f.Rule)
		ids = append(ids, f.ID)
	}
	// Most severe first, earlier first within a severity; an unknown
	// severity last, never above a known one.
	if want := []string{"e", "c", "d", "a", "b"}; !reflect.DeepEqual(rules, want) {
		t.Errorf("order = %v, want %v", rules, want)
	}
	if want := []string{"finding-1", "finding-2", "finding-3", "finding-4", "finding-5"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
}

func TestSQLStateName(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		"40P01":                  "deadlock_detected",
		"40003":                  "transaction rollback", // unlisted: its class
		timeline.PoolTimeoutCode: "no pooled connection in time",
		"ZZ999":                  "",
		"":                       "",
	} {
		if got := sqlstateName(code); got != want {
			t.Errorf("sqlstateName(%q) = %q, want %q", code, got, want)
		}
	}
}
