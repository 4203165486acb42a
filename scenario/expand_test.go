package scenario_test

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

func parseEnv(src string, env map[string]string) (*Scenario, error) {
	opts := kinds.Registry().ScenarioOptions()
	opts.LookupEnv = func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
	return Parse("t.yaml", []byte(src), opts)
}

// TestExpandVariables: ${NAME} and ${NAME:-default} expand before the
// YAML is read (a number stays a number), $${ is a literal ${, and
// PostgreSQL's $$ quotes are left alone.
func TestExpandVariables(t *testing.T) {
	t.Parallel()
	src := `name: ${NAME:-expanded}
duration: ${DURATION:-1m}
workloads:
  - name: oltp
    clients: ${CLIENTS}
    scripts:
      - inline: "SELECT 'a $${literal}' AS x, $$dollar$$ AS y"
    defines: {empty: "${EMPTY}", dflt: "${EMPTY:-d}"}
`
	s, err := parseEnv(src, map[string]string{"CLIENTS": "12", "EMPTY": ""})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "expanded" || s.Duration.String() != "1m0s" || s.Workloads[0].Clients != 12 {
		t.Errorf("name %q duration %v clients %d", s.Name, s.Duration, s.Workloads[0].Clients)
	}
	if got := s.Workloads[0].Scripts[0].Inline; got != "SELECT 'a ${literal}' AS x, $$dollar$$ AS y" {
		t.Errorf("inline script %q", got)
	}
	if d := s.Workloads[0].Defines; d["empty"] != "" || d["dflt"] != "d" {
		t.Errorf("defines %v: a set empty variable is empty, and :- takes the default for it", d)
	}
	if string(s.Source) != src {
		t.Errorf("Source is not the file as written (a variable may hold a secret):\n%s", s.Source)
	}
}

// TestExpandErrors: an unset variable without a default, and a malformed
// ${, are errors at their own file:line:col; other errors keep the
// original file's positions although values before them changed length.
func TestExpandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		env       map[string]string
		want      []string
	}{
		{"unset", "name: t\nduration: 1m\nworkloads:\n  - {name: w, scripts: [select-only], clients: ${CLIENTS}}\n", nil,
			[]string{"t.yaml:4:48: environment variable CLIENTS is not set (set it (CLIENTS=… firedrill …), or give a default: ${CLIENTS:-value})"}},
		{"two unset", "name: ${A}\nduration: ${B}\n", nil,
			[]string{"t.yaml:1:7: environment variable A is not set", "t.yaml:2:11: environment variable B is not set"}},
		{"unclosed", "name: ${A\n", map[string]string{"A": "x"}, []string{"t.yaml:1:7: ${ is not closed by } on its line"}},
		{"bad name", "name: ${1A}\n", nil, []string{`t.yaml:1:7: ${1A}: "1A" is not a variable name`}},
		// The value expands to 30 characters where ${X} was 4: the error
		// after it on the line is still at the original column.
		{"columns kept", "name: t\nduration: 1m\nworkloads:\n  - {name: ${X}, scripts: [select-only], clients: many}\n",
			map[string]string{"X": "a-rather-long-workload-name-xy"},
			[]string{`t.yaml:4:51: clients: want a whole number, got the string "many"`}},
		// A variable holding several lines: later lines keep their numbers.
		{"lines kept", "name: t\ndescription: \"${TEXT}\"\nduration: 1m\nworkloads:\n  - {name: w, scripts: [select-only], clients: -1}\n",
			map[string]string{"TEXT": "a\nb\nc"},
			[]string{"t.yaml:5:"}},
		{"in the variable's value", "name: t\nduration: ${D}\nworkloads:\n  - {name: w, scripts: [select-only], clients: 1}\n",
			map[string]string{"D": "soon"},
			[]string{`t.yaml:2:11: duration: bad duration "soon"`}},
	}
	for _, tt := range tests {
		_, err := parseEnv(tt.src, tt.env)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nwant it to contain\n%s", tt.name, err, w)
			}
		}
	}
}
