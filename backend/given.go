package backend

import (
	"fmt"
	"io"
	"os"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// The helpers below are the parts of opening a target and running setup
// that every backend does alike, whatever its database.

// GivenDSN is the connection string of the server a run is given (--dsn,
// else the scenario's target dsn); "" means the embedded server.
func GivenDSN(spec Spec) string {
	if spec.DSN != "" {
		return spec.DSN
	}
	return spec.Scenario.Target.DSN
}

// Logf writes a backend's progress lines to w (Spec.Log), one per call;
// nothing when w is nil.
func Logf(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format+"\n", args...)
		}
	}
}

// ReadSQLSource gives one piece of setup.sql: its text, and the name that
// messages give it (the file's path, or "scenario:line:col (inline SQL)").
func ReadSQLSource(sc *scenario.Scenario, src scenario.SQLSource) (name, text string, err error) {
	if src.File == "" {
		return fmt.Sprintf("%s:%d:%d (inline SQL)", sc.File, src.Pos.Line, src.Pos.Col), src.Inline, nil
	}
	path := sc.Resolve(src.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	return path, string(b), nil
}

// EachSQL calls visit with every piece of SQL a scenario runs, in order:
// its setup SQL, its workloads' scripts, and its events' statements
// (event.Statements: those of sql and hold_transaction events). at places a line:col
// of the text in the scenario's files ("file:line:col", or for inline text
// "scenario:line:col (what, its line L col C)"). A file that cannot be
// read goes to unreadable as "scenario:line:col: error", in its place.
func EachSQL(sc *scenario.Scenario,
	visit func(at func(line, col int) string, text string), unreadable func(problem string)) {
	inFile := func(path string) func(int, int) string {
		return func(line, col int) string { return fmt.Sprintf("%s:%d:%d", path, line, col) }
	}
	inline := func(pos scenario.Pos, what string) func(int, int) string {
		return func(line, col int) string {
			return fmt.Sprintf("%s:%d:%d (%s, its line %d col %d)", sc.File, pos.Line, pos.Col, what, line, col)
		}
	}
	fromFile := func(file string, pos scenario.Pos) {
		b, err := os.ReadFile(sc.Resolve(file))
		if err != nil {
			unreadable(fmt.Sprintf("%s:%d:%d: %v", sc.File, pos.Line, pos.Col, err))
			return
		}
		visit(inFile(sc.Resolve(file)), string(b))
	}
	for _, src := range sc.Setup.SQL {
		if src.File != "" {
			fromFile(src.File, src.Pos)
		} else {
			visit(inline(src.Pos, "inline setup SQL"), src.Inline)
		}
	}
	for _, w := range sc.Workloads {
		for _, src := range w.Scripts {
			switch {
			case src.File != "":
				fromFile(src.File, src.Pos)
			case src.Inline != "":
				visit(inline(src.Pos, "inline script of workload "+w.Name), src.Inline)
			}
		}
	}
	for _, ev := range sc.Events {
		for i, sql := range event.Statements(ev) {
			visit(inline(ev.Pos, fmt.Sprintf("event %s, statement %d", ev.Name, i+1)), sql)
		}
	}
}
