package scenario_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

// The scripts' checks beyond parsing: a variable read but never set, and
// a command the target's kind does not have, each at its place (inline
// text in the scenario file, a file's own line).
func TestScriptChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "typo.sql"), []byte("\\set id 1\nSELECT :idd;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		want string // the error, $D for the directory; "" = valid
	}{
		{name: "inline typo", text: "workloads:\n  - name: w\n    clients: 1\n    scripts:\n      - inline: |\n          \\set id 1\n          SELECT :idd;\n",
			want: `$D/s.yaml:7:11: variable :idd is read but never set; did you mean :id?`},
		{name: "file typo", text: "workloads:\n  - name: w\n    clients: 1\n    scripts: [typo.sql]\n",
			want: `$D/typo.sql:2:1: variable :idd is read but never set; did you mean :id?`},
		{name: "defines", text: "workloads:\n  - name: w\n    clients: 1\n    defines: {idd: \"7\"}\n    scripts: [typo.sql]\n"},
		{name: "redis command", text: "target: {kind: redis}\nworkloads:\n  - name: w\n    clients: 1\n    scripts:\n      - inline: |\n          SETT firedrill:k 1\n",
			want: `$D/s.yaml:7:11: unknown command "SETT"; did you mean SET?`},
		{name: "redis module command", text: "target: {kind: redis}\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: \"JSON.GET firedrill:k\"}]\n"},
		// The fallback runs on the workload's clients: it reads what
		// the workload set, and nothing else.
		{name: "fallback reads the workload's", text: "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - name: r\n    target: cache\n    clients: 1\n    scripts: [{inline: \"\\\\set id 1\\nGET firedrill:k::id\"}]\n    fallback: {target: db, after: 20ms, scripts: [{inline: \"SELECT :id;\"}]}\n"},
		{name: "fallback typo", text: "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - name: r\n    target: cache\n    clients: 1\n    scripts: [{inline: \"\\\\set id 1\\nGET firedrill:k::id\"}]\n    fallback: {target: db, after: 20ms, scripts: [{inline: \"SELECT :idd;\"}]}\n",
			want: `$D/s.yaml:7:61: variable :idd is read but never set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, "s.yaml")
			_, err := Parse(path, []byte(tt.text+"name: s\nduration: 1s\n"), kinds.Registry().ScenarioOptions())
			want := strings.ReplaceAll(tt.want, "$D", dir)
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Errorf("error %v\nwant prefix %s", err, want)
			}
		})
	}
}

// Gather lists several checks' problems as one, in file order, each
// once: a wrapping check's words go to each of its problems, any other
// error is the file's, without a place (first).
func TestGather(t *testing.T) {
	t.Parallel()
	at := func(file string, line int, msg string) *Error {
		return &Error{File: file, Pos: Pos{Line: line, Col: 1}, Msg: msg}
	}
	parse := Errors{at("s.yaml", 9, "unknown key"), at("a.sql", 2, "bad script")}
	thresholds := Errors{at("s.yaml", 21, "no such metric")}
	events := fmt.Errorf("target db: %w", errors.Join(Errors{at("s.yaml", 16, "shell events need --allow-shell")}))
	err := Gather("s.yaml", parse, nil, thresholds, events, errors.New("--dsn URL: two targets"), thresholds)
	want := strings.Join([]string{
		"s.yaml: --dsn URL: two targets",
		"s.yaml:9:1: unknown key",
		"s.yaml:16:1: target db: shell events need --allow-shell",
		"s.yaml:21:1: no such metric",
		"a.sql:2:1: bad script",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if Gather("s.yaml", nil, nil) != nil {
		t.Error("nothing gathered is not nil")
	}
}

// With Partial, Parse returns what it could read beside the problems:
// the later checks run on it.
func TestParsePartial(t *testing.T) {
	t.Parallel()
	text := "name: p\nduration: 1s\nworkloads:\n  - name: w\n    clientz: 1\n    scripts: [{inline: \"SELECT 1;\"}]\n"
	opts := kinds.Registry().ScenarioOptions()
	if sc, err := Parse("p.yaml", []byte(text), opts); sc != nil || err == nil {
		t.Fatalf("without Partial: %v, %v", sc, err)
	}
	opts.Partial = true
	sc, err := Parse("p.yaml", []byte(text), opts)
	if err == nil || sc == nil || sc.Name != "p" || len(sc.Workloads) != 1 {
		t.Fatalf("with Partial: %+v, %v", sc, err)
	}
}
