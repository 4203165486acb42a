package event

import (
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// HoldTransactionConfig is what a hold_transaction event takes, whatever
// its database.
type HoldTransactionConfig struct {
	Duration time.Duration // how long the transaction stays open
	// Isolation is one of the kind's levels (lower case, words apart);
	// "" is the session's default.
	Isolation string
	XID       bool     // take a transaction id at once (kinds whose HoldTransactionOptions.XID is set)
	SQL       []string // run inside the transaction first (the locks it holds)
}

func (c HoldTransactionConfig) statements() []string { return c.SQL }

// HoldTransactionOptions are what a backend's hold_transaction kind says
// of its keys.
type HoldTransactionOptions struct {
	// Isolation are the levels a scenario may ask for (lower case, words
	// apart); DefaultIsolation is the config's without the key ("": the
	// session's).
	Isolation        []string
	DefaultIsolation string
	// XID offers the xid key: take a transaction id at once.
	XID bool
}

// HoldTransactionKind is the hold_transaction kind of a backend; build
// makes the backend's event.
func HoldTransactionKind(opts HoldTransactionOptions, build func(name string, c HoldTransactionConfig) Event) Kind {
	keys := []string{"duration", "isolation", "sql"}
	if opts.XID {
		keys = []string{"duration", "isolation", "xid", "sql"}
	}
	return Kind{
		EventKind: scenario.EventKind{
			Name:    "hold_transaction",
			Keys:    keys,
			Example: "{kind: hold_transaction, at: 60s, duration: 2m}",
			Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
				c := HoldTransactionConfig{Isolation: opts.DefaultIsolation}
				d.Key("duration", func(v scenario.Value) {
					duration, ok := v.Duration()
					if ok && duration <= 0 {
						v.Errorf("%s: duration must be longer than 0s", d.What())
					}
					c.Duration = duration
				})
				d.Key("isolation", func(v scenario.Value) {
					if level, ok := decodeIsolation(v, opts.Isolation); ok {
						c.Isolation = level
					}
				})
				d.Key("xid", func(v scenario.Value) { c.XID, _ = v.Bool() })
				d.Key("sql", func(v scenario.Value) { c.SQL = decodeStatements(v) })
				d.Need("duration")
				return c, c.Duration
			},
		},
		Build: BuildWith(func(spec scenario.Event, c HoldTransactionConfig) Event {
			c.SQL = slices.Clone(c.SQL)
			return build(Name(spec), c)
		}),
	}
}

// decodeIsolation decodes an isolation level among levels (lower case,
// words apart), spelled as a person may: "Repeatable Read",
// "repeatable_read"; ok is false (and v reported) for any other.
func decodeIsolation(v scenario.Value, levels []string) (level string, ok bool) {
	s, ok := v.Str()
	if !ok {
		return "", false
	}
	level = strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(s))), " ")
	if !slices.Contains(levels, level) {
		v.Hintf("one of "+strings.Join(levels, ", "), "isolation: unknown isolation level %s", v.Quote())
		return "", false
	}
	return level, true
}
