package scenario_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

// overrideBase is a scenario with a workload reached through an anchor,
// so that overrides are seen to change only the place they name.
const overrideBase = `name: t
duration: 1m
x-shape: &shape {clients: 4, mode: simple}
workloads:
  - name: oltp
    <<: *shape
    scripts: [select-only@1]
    settings: {statement_timeout: 5s}
  - name: batch
    <<: *shape
    scripts: [tpcb-like@1]
events:
  - {kind: sql, at: 10s, sql: "SELECT 1"}
thresholds:
  oltp.p99: "< 50ms"
`

func parseWith(t *testing.T, src string, sets ...string) (*Scenario, error) {
	t.Helper()
	opts := kinds.Registry().ScenarioOptions()
	for _, s := range sets {
		o, err := ParseOverride(s)
		if err != nil {
			return nil, err
		}
		opts.Overrides = append(opts.Overrides, o)
	}
	return Parse("t.yaml", []byte(src), opts)
}

// TestOverrides: --set values land where their key path says, are
// checked as the file's values are, and leave anchored values shared by
// other places alone.
func TestOverrides(t *testing.T) {
	t.Parallel()
	s, err := parseWith(t, overrideBase,
		"workloads.oltp.clients=64",
		"duration=30s",
		"target.settings.shared_buffers=256MB",
		"target.settings.auto_explain.log_min_duration=1s", // dots inside a setting's name
		"workloads.1.mode=prepared",                        // by index
		"workloads.oltp.settings.lock_timeout=1s",
		"events.sql-1.at=20s", // an event by its default name
		"thresholds.oltp.p99=< 80ms",
		"thresholds.batch.tps=>= 1",
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Workloads[0].Clients; got != 64 {
		t.Errorf("oltp clients %d, want 64", got)
	}
	if got := s.Workloads[1].Clients; got != 4 {
		t.Errorf("batch clients %d, want 4: the anchor it shares with oltp was changed", got)
	}
	if got := s.Workloads[1].Mode; got != "prepared" {
		t.Errorf("batch mode %q, want prepared", got)
	}
	if got := s.Workloads[0].Mode; got != "simple" {
		t.Errorf("oltp mode %q, want simple", got)
	}
	if s.Duration != 30*time.Second {
		t.Errorf("duration %v, want 30s", s.Duration)
	}
	want := map[string]string{"shared_buffers": "256MB", "auto_explain.log_min_duration": "1s"}
	for k, v := range want {
		if s.Target.Settings[k] != v {
			t.Errorf("target.settings[%s] = %q, want %q (all: %v)", k, s.Target.Settings[k], v, s.Target.Settings)
		}
	}
	if got := s.Workloads[0].Settings; got["lock_timeout"] != "1s" || got["statement_timeout"] != "5s" {
		t.Errorf("oltp settings %v, want lock_timeout added beside statement_timeout", got)
	}
	if s.Events[0].At != 20*time.Second {
		t.Errorf("event at %v, want 20s", s.Events[0].At)
	}
	conds := map[string]string{}
	for _, th := range s.Thresholds {
		conds[th.Metric] = th.Text
	}
	if conds["oltp.p99"] != "< 80ms" || conds["batch.tps"] != ">= 1" {
		t.Errorf("thresholds %v", conds)
	}
	if !strings.Contains(string(s.Source), "clients: 4") {
		t.Errorf("Source changed: it is the file as read\n%s", s.Source)
	}
}

// TestOverrideErrors: a --set that names no key, or gives a bad value, is
// an error at the --set argument with the key path, never at a line of
// the file; several are all reported.
func TestOverrideErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		set  string
		want string
	}{
		{"workloads.oltp.clients=many", `--set workloads.oltp.clients=many: clients: want a whole number, got the string "many"`},
		{"workloads.oltp.clients=0", `--set workloads.oltp.clients=0: workload "oltp": clients must be at least 1`},
		{"workloads.oltp.clientz=5", `--set workloads.oltp.clientz=5: unknown key "clientz"; did you mean "clients"?`},
		{"workloads.oltpp.clients=5", `--set workloads.oltpp.clients=5: workloads has no item named "oltpp"; did you mean "oltp"?`},
		{"workloads.7.clients=5", "--set workloads.7.clients=5: workloads has 2 items: no index 7"},
		{"duration=soon", "--set duration=soon: duration:"},
		{"duration.x=1", `--set duration.x=1: duration is the string "1m", not a mapping: it has no key x`},
		{"durration=1m", `--set durration=1m: unknown key "durration"; did you mean "duration"?`},
		{"name=[a", "--set name=[a: the value: yaml:"},
		{"thresholds.oltp.p99=fast", "--set thresholds.oltp.p99=fast:"},
		{`workloads.oltp.scripts=[{inline: \bogus 1}]`, `--set workloads.oltp.scripts=[{inline: \bogus 1}]:`},
	}
	for _, tt := range tests {
		_, err := parseWith(t, overrideBase, tt.set)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--set %s: error\n%v\nwant it to contain\n%s", tt.set, err, tt.want)
			continue
		}
	}
	_, err := parseWith(t, overrideBase, "workloads.oltp.clients=x", "duration=-1s")
	if err == nil || strings.Count(err.Error(), "--set") != 2 {
		t.Errorf("two bad --set: error\n%v\nwant both", err)
	}
	for _, bad := range []string{"clients", "=5", "workloads..clients=5"} {
		if _, err := ParseOverride(bad); err == nil || !strings.Contains(err.Error(), "--set "+bad) {
			t.Errorf("ParseOverride(%q) = %v, want an error naming it", bad, err)
		}
	}
}

// TestOverrideEmptyRemoves: an empty value removes the key, so a rate in
// the file can give way to clients from the command line.
func TestOverrideEmptyRemoves(t *testing.T) {
	t.Parallel()
	src := strings.Replace(overrideBase, "    scripts: [tpcb-like@1]\n", "    scripts: [tpcb-like@1]\n    rate: 100\n", 1)
	src = strings.Replace(src, "  - name: batch\n    <<: *shape\n", "  - name: batch\n", 1)
	s, err := parseWith(t, src, "workloads.batch.rate=", "workloads.batch.clients=3")
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Workloads[1]; w.Rate != 0 || w.Clients != 3 {
		t.Errorf("batch rate %v clients %d, want 0 and 3", w.Rate, w.Clients)
	}
}

// FuzzOverride applies a --set to arbitrary files: it must never panic
// nor loop, and its problems are Errors like the file's.
func FuzzOverride(f *testing.F) {
	f.Add([]byte(overrideBase), "workloads.oltp.clients=64")
	f.Add([]byte(overrideBase), "workloads.1.settings.a.b=1")
	f.Add([]byte("x: &a {<<: *a}\n"), "x.y=1")
	f.Add([]byte("a: &a [*a, *a]\nname: *a\n"), "a.0.b=1")
	f.Add([]byte("w: &w {name: w, clients: 1}\nworkloads: [*w, {<<: *w, name: v}]\n"), "workloads.v.clients=[1, {a: *b}]")
	f.Add([]byte("- a\n- b\n"), "0=x")
	f.Add([]byte(""), "name=x")
	opts := kinds.Registry().ScenarioOptions()
	f.Fuzz(func(t *testing.T, data []byte, arg string) {
		o, err := ParseOverride(arg)
		if err != nil {
			return
		}
		opts := opts
		opts.Overrides = []Override{o, o}
		_, err = Parse("t.yaml", data, opts)
		if err == nil {
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error is a %T (%v), want Errors", err, err)
		}
	})
}
