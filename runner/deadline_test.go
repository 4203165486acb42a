package runner

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/firedrill/firedrill/timeline"
)

func TestFreezeWatch(t *testing.T) {
	t.Parallel()
	// tick is one tick of the clock: the transactions its intervals
	// completed (one interval [t-1, t)) and whether the server left the
	// samplers unanswered.
	type tick struct {
		completed  int64
		unanswered bool
	}
	ok, frozen := tick{completed: 5}, tick{unanswered: true}
	tests := []struct {
		name  string
		ticks []tick // at t = 1, 2, 3 …
		end   float64
		want  []timeline.FrozenWindow
	}{
		{"always answering", []tick{ok, ok, ok, ok}, 4, nil},
		// Frozen from the end of the last interval that completed a
		// transaction to the end of the run.
		{"frozen to the end", []tick{ok, ok, frozen, frozen, frozen}, 5.5,
			[]timeline.FrozenWindow{{Start: 2, End: 5.5}}},
		{"frozen, then answering again", []tick{ok, frozen, frozen, frozen, ok, ok}, 6,
			[]timeline.FrozenWindow{{Start: 1, End: 5, Recovered: true}}},
		// One slow tick is not a frozen server.
		{"one tick", []tick{ok, frozen, ok, ok}, 4, nil},
		// Samplers timing out while transactions still complete: a slow
		// server, not a frozen one.
		{"slow samplers", []tick{ok, {completed: 3, unanswered: true}, {completed: 1, unanswered: true}, ok}, 4, nil},
		// An interval that reaches the clock late moves the window's
		// start; it does not end the window.
		{"late interval", []tick{ok, frozen, {completed: -2, unanswered: true}, frozen, frozen}, 6,
			[]timeline.FrozenWindow{{Start: 2, End: 6}}},
		// No load (a workload that starts later): samplers alone judge.
		{"idle server that answers", []tick{{}, {}, {}}, 3, nil},
		{"idle server frozen", []tick{{}, frozen, frozen, frozen}, 4, []timeline.FrozenWindow{{Start: 1, End: 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFreezeWatch(time.Second, nil)
			var edges []frozenEdge // what the outage marks are made of
			f.onEdge = func(e frozenEdge) { edges = append(edges, e) }
			for i, tk := range tt.ticks {
				at := float64(i + 1)
				iv := timeline.Interval{Start: at - 1, End: at, Count: tk.completed}
				if tk.completed < 0 { // the previous tick's interval, late, with -completed transactions
					iv = timeline.Interval{Start: at - 2, End: at - 1, Count: -tk.completed}
				}
				f.tick(at, []timeline.Interval{iv}, tk.unanswered)
			}
			got := f.finish(tt.end)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("windows %+v, want %+v", got, tt.want)
			}
			// Each window is told twice, its start then its end, with
			// the same span: its outage marks.
			var want []frozenEdge
			for _, w := range got {
				want = append(want, frozenEdge{Start: w.Start}, frozenEdge{Start: w.Start, End: w.End, Ended: true, Recovered: w.Recovered})
			}
			if !reflect.DeepEqual(edges, want) {
				t.Errorf("edges %+v, want %+v", edges, want)
			}
		})
	}
}

func TestServerProbe(t *testing.T) {
	t.Parallel()
	errCut := errors.New("driver: bad connection")
	timeout := fmt.Errorf("read locks: %w", context.DeadlineExceeded)
	refused := errors.New("connect to 127.0.0.1:1: connection refused")
	answered := errors.New("ERROR: canceling statement due to statement timeout (SQLSTATE 57014)")
	tests := []struct {
		name       string
		reads      []error // of samplers that query the server
		host       error   // a sampler that does not
		unanswered bool
	}{
		{"all answered", []error{nil, nil}, nil, false},
		{"all timed out", []error{timeout, timeout}, nil, true},
		{"one slow view", []error{timeout, nil}, nil, false},
		// The server said no in time: an answer (how a backend tells is
		// its own: db/postgres's unanswered).
		{"an answer, if an error", []error{answered, answered}, nil, false},
		// Refused is an outage, not a frozen server.
		{"refused", []error{refused, refused}, nil, false},
		{"the host sampler does not count", []error{timeout}, nil, true},
		{"nor its timeouts", []error{nil}, timeout, false},
		// Cut short by the tick's end or the run's stop: unanswered,
		// whatever the error (a driver's "canceled", a closed socket).
		{"cut short", []error{errCut}, nil, true},
	}
	for _, tt := range tests {
		p := serverProbe{judge: func(err error) bool { return err != answered && isTimeout(err) }}
		for _, err := range tt.reads {
			p.note(true, err, err == errCut)
		}
		p.note(false, tt.host, false)
		if got := p.unanswered(); got != tt.unanswered {
			t.Errorf("%s: unanswered = %v, want %v", tt.name, got, tt.unanswered)
		}
	}
}
