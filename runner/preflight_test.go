package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	pgbackend "github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
)

// preflightScenario has one event of each kind Preflight may refuse, on
// known lines.
const preflightScenario = `name: preflight
duration: 5s
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {kind: shell, at: 1s, command: "true"}
  - {kind: settings, at: 2s, settings: {shared_buffers: 64MB}, restart: true}
  - {kind: settings, at: 2s, settings: {work_mem: 8MB}}
  - {kind: sql, at: 1s, sql: "SELECT 1"}
`

func TestPreflight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		dsn        string // --dsn
		targetDSN  string // the scenario's target.dsn
		allowShell bool
		want       []string // the refusals, by file:line:col prefix
	}{
		// The embedded server can be restarted; only the shell is refused.
		{name: "embedded", want: []string{"p.yaml:8:5: shell shell-1: shell events need --allow-shell"}},
		{name: "embedded, shell allowed", allowShell: true},
		// A given server is never restarted, whether --dsn or target.dsn
		// names it.
		{name: "--dsn", dsn: "postgres://u@127.0.0.1:1/db", allowShell: true,
			want: []string{"p.yaml:9:5: settings settings-2: restart needs the embedded server (the target is a given server"}},
		{name: "target.dsn", targetDSN: "host=127.0.0.1 port=1", allowShell: true,
			want: []string{"p.yaml:9:5: settings settings-2: restart needs the embedded server"}},
		{name: "--dsn without --allow-shell", dsn: "postgres://u@127.0.0.1:1/db",
			want: []string{"p.yaml:8:5: shell shell-1: shell events need --allow-shell", "p.yaml:9:5: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Parse("p.yaml", []byte(preflightScenario), kinds.Registry().ScenarioOptions())
			if err != nil {
				t.Fatal(err)
			}
			sc.Target.DSN = tt.targetDSN
			err = Preflight(pgbackend.New(), sc, tt.dsn, tt.allowShell)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Preflight: %v, want nil", err)
				}
				return
			}
			var errs scenario.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Preflight: %v, want scenario.Errors", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("Preflight refused:\n%v\nwant %d problems", err, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("problem %d = %q, want it to start with %q", i, lines[i], want)
				}
			}
			// The shell's refusal is not blamed on the given server.
			if strings.Contains(lines[0], "shell events") && strings.Contains(lines[0], "given server") {
				t.Errorf("shell refusal with the server hint: %q", lines[0])
			}
		})
	}
}

// eventlessBackend is a kind of database with no event kinds of its own.
type eventlessBackend struct{}

func (eventlessBackend) Kind() string { return "eventless" }

func (eventlessBackend) Open(context.Context, backend.Spec) (backend.Target, error) {
	return nil, errors.New("eventless: not for running")
}

// Events decode with every kind firedrill has, before the backend is
// known; Validate then refuses, at its position, an event of a kind the
// target's backend does not have, and keeps the neutral kinds.
func TestValidateRefusesAnotherBackendsEventKind(t *testing.T) {
	t.Parallel()
	const src = `name: eventless
duration: 5s
target: {kind: eventless}
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {kind: shell, at: 1s, command: "true"}
  - {kind: sql, at: 1s, sql: "SELECT 1"}
`
	sc, err := scenario.Parse("e.yaml", []byte(src), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = Validate(sc, Options{Backends: backend.NewRegistry(eventlessBackend{}), AllowShell: true})
	want := "e.yaml:10:5: sql events make no sense for a eventless target"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "make no sense") != 1 {
		t.Fatalf("Validate: %v, want one refusal starting %q", err, want)
	}
	if !strings.Contains(err.Error(), "takes events of kind disk_pressure, shell") {
		t.Errorf("Validate: %v, want the kinds it takes as the hint", err)
	}
}

// The runner links no kind of database of its own: a caller that hands
// it no registry is told so, rather than given every kind by default.
func TestRunAndValidateNeedTheRegistry(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("p.yaml", []byte(preflightScenario), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(sc, Options{}); !errors.Is(err, errNoBackends) {
		t.Errorf("Validate without Backends: %v, want %v", err, errNoBackends)
	}
	if _, err := Run(t.Context(), Options{Scenario: sc, RunDir: t.TempDir()}); !errors.Is(err, errNoBackends) {
		t.Errorf("Run without Backends: %v, want %v", err, errNoBackends)
	}
}

// target.settings apply only to the server firedrill starts: with --dsn
// Validate refuses them at their key (and the events' refusals still
// come with them); without --dsn they pass.
func TestValidateRefusesSettingsOnAGivenServer(t *testing.T) {
	t.Parallel()
	const text = `name: settings
target:
  kind: postgres
  settings: {work_mem: 8MB}
duration: 5s
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {kind: shell, at: 1s, command: "true"}
`
	reg := kinds.Registry()
	sc, err := scenario.Parse("s.yaml", []byte(text), reg.ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Backends: reg, AllowShell: true}
	if err := Validate(sc, opts); err != nil {
		t.Errorf("embedded: %v", err)
	}
	opts.DSN, opts.AllowShell = "postgres://app@127.0.0.1:1/db", false
	err = scenario.Gather("s.yaml", Validate(sc, opts))
	want := []string{
		"s.yaml:4:13: target.settings apply only to the server firedrill starts, and --dsn gives the server",
		"s.yaml:11:5: shell shell-1: shell events need --allow-shell",
	}
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != len(want) {
		t.Fatalf("Validate with --dsn:\n%v\nwant %d problems", err, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, lines[i], want[i])
		}
	}
}
