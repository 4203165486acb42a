package backend

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestOutsideChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after map[string]string
		want          []string
	}{
		{"nothing changed", map[string]string{"table a.t": "1"}, map[string]string{"table a.t": "1"}, nil},
		{"one of each, sorted", map[string]string{"table a.t": "1", "table a.u": "x"}, map[string]string{"table a.t": "2", "table a.v": "y"},
			[]string{"changed table a.t (1 → 2)", "created table a.v", "dropped table a.u"}},
		// A server read empty before (a new one) sees everything as created.
		{"from nothing", nil, map[string]string{"schema s": "10"}, []string{"created schema s"}},
	}
	for _, c := range tests {
		if got := OutsideChanges(c.before, c.after); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A setup that changed something outside its place fails with the
// backend's error and says what; one that could not look again says so.
func TestSetupChangedOutside(t *testing.T) {
	t.Parallel()
	errOutside := errors.New("setup changed objects outside its schema")
	before := map[string]string{"schema public": "10"}
	read := func(m map[string]string, err error) func() (map[string]string, error) {
		return func() (map[string]string, error) { return m, err }
	}
	if err := SetupChangedOutside(errOutside, "fd", before, read(before, nil)); err != nil {
		t.Errorf("nothing changed: %v", err)
	}
	err := SetupChangedOutside(errOutside, "fd", before, read(map[string]string{"schema public": "10", "schema x": "10"}, nil))
	if !errors.Is(err, errOutside) || err.Error() != "setup changed objects outside its schema fd (by dynamic SQL, or by another session meanwhile): created schema x" {
		t.Errorf("a created schema: %v", err)
	}
	if err := SetupChangedOutside(errOutside, "fd", before, read(nil, errors.New("connection refused"))); err == nil || err.Error() != "setup: connection refused" {
		t.Errorf("a failed read: %v", err)
	}
}

// The end of a run only warns, in the log, and only of changes.
func TestWarnChangedOutside(t *testing.T) {
	t.Parallel()
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	before := map[string]string{"table db.t": "1"}
	WarnChangedOutside(logf, "the database fd", before, func() (map[string]string, error) { return before, nil })
	WarnChangedOutside(logf, "the database fd", before, func() (map[string]string, error) { return nil, nil })
	want := []string{"warning: objects outside the database fd changed during the run (by this run or by another session): dropped table db.t"}
	if !slices.Equal(lines, want) {
		t.Errorf("log %q, want %q", lines, want)
	}
}
