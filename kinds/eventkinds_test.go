package kinds_test

import (
	"fmt"
	"github.com/firedrill/firedrill/event/eventtest"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
)

// TestEventKindsConform runs every kind of event firedrill has (the
// neutral ones and every backend's) through what a kind promises, so that
// a new kind is tested by registering it: its example
// decodes and builds, a key it does not take is refused at its
// file:line:col with the kind's keys as the hint, and every key it
// declares is one its Decode reads.
func TestEventKindsConform(t *testing.T) {
	t.Parallel()
	// Each backend's kinds, as a scenario of its kind decodes them (two
	// backends may each have a kind of the same name).
	for _, b := range kinds.Registry().Backends() {
		t.Run(b.Kind(), func(t *testing.T) {
			t.Parallel()
			checkEventKinds(t, b.Kind(), backend.EventKindsOf(b))
		})
	}
}

// checkEventKinds runs one backend's kinds through what a kind promises.
func checkEventKinds(t *testing.T, backendKind string, eventKinds []event.Kind) {
	parseEvent := func(spec string) (*scenario.Scenario, error) {
		opts := kinds.Registry().ScenarioOptions()
		opts.Kind = backendKind
		return eventtest.ParseEvent(spec, opts)
	}
	seen := make(map[string]bool)
	for _, kind := range eventKinds {
		if seen[kind.Name] {
			t.Errorf("kind %s is registered twice", kind.Name)
		}
		seen[kind.Name] = true
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			if kind.Decode == nil || !strings.HasPrefix(kind.Example, "{kind: "+kind.Name+",") || !strings.HasSuffix(kind.Example, "}") {
				t.Fatalf("kind %s: want a Decode and an example {kind: %s, …}, got %q", kind.Name, kind.Name, kind.Example)
			}
			for _, key := range kind.Keys {
				if key == "name" || key == "kind" || key == "at" {
					t.Errorf("kind %s declares %s, which every event has", kind.Name, key)
				}
			}

			sc, err := parseEvent(kind.Example)
			if err != nil {
				t.Fatalf("the example %s: %v", kind.Example, err)
			}
			spec := sc.Events[0]
			if spec.Kind != kind.Name || spec.Config == nil {
				t.Fatalf("the example decoded to %+v", spec)
			}
			if _, err := event.New(eventKinds, spec); err != nil {
				t.Errorf("New(the example): %v", err)
			}

			withUnknown := strings.TrimSuffix(kind.Example, "}") + ", no_such_key: 1}"
			_, err = parseEvent(withUnknown)
			col := strings.Index(withUnknown, "no_such_key") + 5 // after "  - " on line 9
			wantKeys := strings.Join(append([]string{"name", "kind", "at"}, kind.Keys...), ", ")
			if err == nil {
				t.Fatalf("%s: accepted", withUnknown)
			}
			mustContain(t, "error", err.Error(), fmt.Sprintf(`event.yaml:9:%d: unknown key "no_such_key" (known keys of a %s event: %s)`, col, kind.Name, wantKeys))

			// A value no key takes (an empty mapping) is refused at
			// the value: the key reached Decode, and was not merely
			// allowed through.
			for _, key := range kind.Keys {
				event := strings.TrimSuffix(kind.Example, "}")
				if strings.Contains(event, " "+key+":") {
					continue // the example gives it; a duplicate is another error
				}
				event += ", " + key + ": {}}"
				_, err := parseEvent(event)
				col := strings.LastIndex(event, "{}") + 5
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("event.yaml:9:%d: ", col)) {
					t.Errorf("%s: want an error at 9:%d, got %v", event, col, err)
				}
			}
		})
	}
	want := map[string][]string{
		"postgres": {"hold_transaction", "sql", "settings", "terminate", "disk_pressure", "shell"},
		"redis":    {"settings", "command", "restart", "terminate", "disk_pressure", "shell"},
		"mariadb":  {"hold_transaction", "sql", "settings", "terminate", "restart", "disk_pressure", "shell"},
	}[backendKind]
	if got := event.KindNames(eventKinds); want != nil && !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v (messages list them in this order)", got, want)
	}
}

// mustContain fails the test unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s %q does not contain %q", what, s, part)
		}
	}
}
