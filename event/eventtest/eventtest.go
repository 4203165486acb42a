// Package eventtest holds what the tests of event kinds share, in event/
// and in each backend's event package: loading a scenario with one event,
// checking what a kind decodes, running an event in the background and
// waiting for it to start and to return. It imports no event package, so
// event's own tests can use it.
package eventtest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// Result is what an event's Run returned.
type Result struct {
	Outcome string
	Detail  map[string]any
	Err     error
}

// RunAsync runs an event in the background; run calls the event's Run
// with the started callback it is given, e.g.
//
//	started, done := eventtest.RunAsync(func(s func(map[string]any)) (string, map[string]any, error) { return ev.Run(ctx, env, s) })
//
// The first channel receives what the event passed to started, the
// second what Run returned.
func RunAsync(run func(started func(map[string]any)) (string, map[string]any, error)) (<-chan map[string]any, <-chan Result) {
	started := make(chan map[string]any, 1)
	done := make(chan Result, 1)
	go func() {
		outcome, detail, err := run(func(detail map[string]any) { started <- detail })
		done <- Result{outcome, detail, err}
	}()
	return started, done
}

// WaitStarted waits for an event to call started, failing the test if it
// returns first or takes over a minute.
func WaitStarted(t *testing.T, started <-chan map[string]any, done <-chan Result) map[string]any {
	t.Helper()
	select {
	case detail := <-started:
		return detail
	case result := <-done:
		t.Fatalf("Run returned before starting: outcome %q, err %v", result.Outcome, result.Err)
	case <-time.After(time.Minute):
		t.Fatal("the event did not start within a minute")
	}
	return nil
}

// WaitDone waits for Run to return; within is generous, so that only a
// hung event fails it.
func WaitDone(t *testing.T, done <-chan Result, within time.Duration) Result {
	t.Helper()
	select {
	case result := <-done:
		return result
	case <-time.After(within):
		t.Fatalf("Run did not return within %s", within)
	}
	return Result{}
}

// Eventually polls cond until it holds, failing the test after within.
func Eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MustContain fails the test unless s contains every part.
func MustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s %q does not contain %q", what, s, part)
		}
	}
}

// ParseEvent loads a scenario with one event, written on line 9, decoded
// with the kinds of opts.
func ParseEvent(spec string, opts scenario.Options) (*scenario.Scenario, error) {
	src := `name: one-event
duration: 10m
workloads:
  - name: oltp
    scripts: [select-only]
    clients: 1
events:
  # the event
  - ` + spec + "\n"
	return scenario.Parse("event.yaml", []byte(src), opts)
}

// CheckDecode loads event with opts and checks the config its kind decodes
// it into (want), or the error it gives (wantErr, "" when valid); build is
// the event package's New, which must accept every valid event.
func CheckDecode(t *testing.T, opts scenario.Options, build func(scenario.Event) error, name, event string, want any, wantErr string) {
	t.Helper()
	sc, err := ParseEvent(event, opts)
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case wantErr != "" && err == nil:
		t.Errorf("%s: accepted", name)
	case wantErr != "":
		MustContain(t, name+": error", err.Error(), wantErr)
	default:
		if got := sc.Events[0].Config; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: config %#v, want %#v", name, got, want)
		}
		if err := build(sc.Events[0]); err != nil {
			t.Errorf("%s: New: %v", name, err)
		}
	}
}
