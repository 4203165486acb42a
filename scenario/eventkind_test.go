package scenario_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/firedrill/firedrill/scenario"
)

// pingConfig and pauseConfig are two kinds of event made up for the
// tests: the loader knows only what Options gives it.
type pingConfig struct {
	Count    int64
	Workload string
}

type pauseConfig struct{ For time.Duration }

var testKinds = Options{EventKinds: []EventKind{
	{
		Name:    "ping",
		Keys:    []string{"count", "workload"},
		Example: "{kind: ping, at: 1s, count: 3}",
		Decode: func(d *EventDecoder) (any, time.Duration) {
			var c pingConfig
			d.Key("count", func(v Value) { c.Count, _ = v.Int(1, 100) })
			d.Key("workload", func(v Value) {
				if name, ok := v.Str(); ok {
					c.Workload = name
					d.WorkloadRef(v, name)
				}
			})
			d.Need("count")
			return c, 0
		},
	},
	{
		Name:    "pause",
		Keys:    []string{"for"},
		Example: "{kind: pause, at: 1s, for: 5s}",
		Decode: func(d *EventDecoder) (any, time.Duration) {
			var c pauseConfig
			d.Key("for", func(v Value) { c.For, _ = v.Duration() })
			d.Need("for")
			d.Later(func(s *Scenario) {
				if !s.Target.Embedded() {
					d.Hintf("use the embedded server", "%s: needs the embedded server", d.What())
				}
			})
			return c, c.For
		},
	},
}}

// TestEventKindsFromOptions: a kind given in Options is all the loader
// needs to decode, check and time an event of it.
func TestEventKindsFromOptions(t *testing.T) {
	t.Parallel()
	base := "name: t\nworkloads: [{name: oltp, scripts: [select-only], clients: 1}]\n"
	s, err := Parse("t.yaml", []byte(base+"events:\n  - {kind: ping, at: 1s, count: 3, workload: oltp}\n  - {kind: pause, at: 10s, for: 20s}\n"), testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Events[0].Config, (pingConfig{Count: 3, Workload: "oltp"}); got != want {
		t.Errorf("ping config %#v, want %#v", got, want)
	}
	// The pause's length bounds the run, as a kind's Decode said.
	if got := s.Events[1]; got.Config != (pauseConfig{For: 20 * time.Second}) || got.Duration != 20*time.Second || s.Duration != 30*time.Second {
		t.Errorf("pause %+v, run %v", got, s.Duration)
	}

	tests := []struct{ name, events, want string }{
		{"unknown key lists the kind's keys", "{kind: ping, at: 1s, count: 3, colour: red}",
			`t.yaml:4:36: unknown key "colour" (known keys of a ping event: name, kind, at, count, workload)`},
		{"another kind's key names that kind", "{kind: ping, at: 1s, count: 3, for: 2s}",
			`t.yaml:4:36: for does not apply to a ping event (it applies to pause)`},
		{"a missing key with the example", "{kind: ping, at: 1s}",
			`t.yaml:4:5: ping event "ping-1" needs count (as in {kind: ping, at: 1s, count: 3})`},
		{"a bad value at its position", "{kind: ping, at: 1s, count: 300}",
			`t.yaml:4:33: count: 300 is out of range (1 to 100)`},
		{"a workload reference checked once workloads are known", "{kind: ping, at: 1s, count: 1, workload: otlp}",
			`t.yaml:4:46: ping event "ping-1": no workload "otlp"; did you mean "oltp"?`},
		{"a check of the whole scenario", "{kind: pause, at: 1s, for: 2s}\ntarget: {dsn: postgres://db/app}",
			`t.yaml:4:5: pause event "pause-1": needs the embedded server (use the embedded server)`},
		{"an unknown kind lists the kinds given", "{kind: vacuum, at: 1s}",
			`t.yaml:4:12: kind: unknown kind "vacuum" (one of ping, pause)`},
	}
	for _, test := range tests {
		_, err := Parse("t.yaml", []byte(base+"events:\n  - "+test.events+"\n"), testKinds)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: got %v, want %s", test.name, err, test.want)
		}
	}

	// Without kinds, a loader refuses events rather than guess.
	_, err = Parse("t.yaml", []byte(base+"events: [{kind: ping, at: 1s, count: 3}]\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "events: this program takes scenarios without events") {
		t.Errorf("without kinds: %v", err)
	}
	if _, err := Parse("t.yaml", []byte(base+"duration: 1m\n"), Options{}); err != nil {
		t.Errorf("without kinds or events: %v", err)
	}
}
