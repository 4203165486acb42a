package event

import (
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// TerminateConfig is what a terminate event takes, whatever its database:
// the sessions of one workload, or those its kind's other key picks (By:
// a pid, a connection id, a type of client).
type TerminateConfig[S comparable] struct {
	Workload string // whose sessions (found by their tag, Env.WorkloadTag)
	By       S      // the other key's value; its zero value when Workload is set
}

// TerminateBy is a backend's other way for a terminate event to pick
// sessions: its key ("pid") and how its value decodes (a problem reported
// at the value, ok false).
type TerminateBy[S comparable] struct {
	Key    string
	Decode func(d *scenario.EventDecoder, v scenario.Value) (S, bool)
}

// TerminateByNumber picks one session by a number from 1 to highest
// under key (a pid, a connection id).
func TerminateByNumber[S ~int | ~int64](key string, highest int64) TerminateBy[S] {
	return TerminateBy[S]{Key: key, Decode: func(_ *scenario.EventDecoder, v scenario.Value) (S, bool) {
		n, ok := v.Int(1, highest)
		return S(n), ok
	}}
}

// TerminateKind is the terminate kind of a backend, whose sessions are
// picked by workload or by by; build makes the backend's event.
func TerminateKind[S comparable](by TerminateBy[S], build func(name string, c TerminateConfig[S]) Event) Kind {
	return Kind{
		EventKind: scenario.EventKind{
			Name:    "terminate",
			Keys:    []string{"workload", by.Key},
			Example: "{kind: terminate, at: 40s, workload: oltp}",
			Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
				var c TerminateConfig[S]
				d.Key("workload", func(v scenario.Value) {
					if name, ok := v.Str(); ok {
						d.WorkloadRef(v, name)
						c.Workload = name
					}
				})
				d.Key(by.Key, func(v scenario.Value) {
					if value, ok := by.Decode(d, v); ok {
						c.By = value
					}
				})
				d.NeedOne("workload", by.Key)
				return c, 0
			},
		},
		Build: BuildWith(func(spec scenario.Event, c TerminateConfig[S]) Event { return build(Name(spec), c) }),
	}
}
