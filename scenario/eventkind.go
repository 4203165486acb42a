package scenario

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/script"
)

// Options are what Load and Parse need from their caller: the kinds of
// event the scenario may use. The scenario package knows the keys every
// event has (name, kind, at); each kind decodes the rest itself.
type Options struct {
	// EventKinds are the kinds of event, in the order messages list them,
	// when ForKind is nil or does not know the scenario's kind.
	EventKinds []EventKind
	// ForKind gives what depends on the kind of database: the kinds of
	// event a target of that kind takes and its scripts' dialect
	// (backend.Registry.ScenarioOptions). The target is decoded first, so
	// that two kinds of database may each have an event kind of the same
	// name (sql, settings).
	ForKind func(kind string) (KindOptions, bool)
	// Kind is the kind of database when the scenario names none
	// (target.kind): the caller may know it from a --dsn URL's scheme.
	Kind string
	// KindOfDSN, when set, tells the kind of database of the scenario's
	// own target.dsn by its URL scheme, for a scenario that names no kind
	// and is not given one.
	KindOfDSN func(dsn string) (string, bool)
	// DefaultKind is the kind of a scenario that names none and whose
	// kind nothing else tells (the registry's default kind).
	DefaultKind string
	// LookupEnv is the environment for ${NAME} in the file (os.LookupEnv);
	// nil has nothing set, so only ${NAME:-default} expands.
	LookupEnv func(name string) (string, bool)
	// Overrides are the command line's --set values, applied in order
	// after the file is read and before it is checked.
	Overrides []Override
	// DSNs give targets of a scenario of several a server each
	// (--dsn NAME=URL): name → connection string, as if written as the
	// target's dsn; a name the scenario has no target of is an error.
	DSNs map[string]string
	// Partial makes Parse return the scenario as far as it could read it
	// beside its problems (not only the problems), so that validate can
	// run its later checks on it and list every problem in one run. Such
	// a scenario may lack what its problems are about: it is for
	// checking, never for running.
	Partial bool
}

// KindOptions are what one kind of database brings to a scenario.
type KindOptions struct {
	EventKinds []EventKind
	Dialect    script.Dialect
	// DBMetrics are the database metrics a threshold may name on a
	// target of the kind ("db.deadlocks", "shard2.db.rollbacks"), each
	// with its Measure: a kind without them has none.
	DBMetrics []MetricSpec
}

// kindOptions are the options of the scenario's kind of database (kindOf).
func (o Options) kindOptions(t Target) KindOptions {
	kind := o.kindOf(t)
	if o.ForKind != nil {
		if ko, ok := o.ForKind(kind); ok {
			return ko
		}
	}
	return KindOptions{EventKinds: o.EventKinds}
}

// kindOf is the kind of database of target t: its kind, else the
// caller's, else its dsn's, else the default kind ("" when none says).
func (o Options) kindOf(t Target) string {
	kind := t.Kind
	if kind == "" {
		kind = o.Kind
	}
	if kind == "" && o.KindOfDSN != nil && t.DSN != "" {
		kind, _ = o.KindOfDSN(t.DSN)
	}
	if kind == "" {
		kind = o.DefaultKind
	}
	return kind
}

// EventKind is one kind of event as a scenario writes it: a new kind is a
// value of this type (one file each, in package event or in a backend's
// event package such as db/postgres/pgevent), not a change to this
// package.
type EventKind struct {
	Name string
	// Keys are the keys the kind takes besides name, kind and at, in the
	// order the README lists them: the loader rejects every other key, and
	// names the kinds that take it.
	Keys []string
	// Example is a whole event of the kind, for hints ("as in …") and for
	// the kinds' conformance test (package kinds).
	Example string
	// Decode decodes the kind's keys of one event and checks them,
	// reporting each problem through d. It returns the kind's config (kept
	// in Event.Config) and how long the event lasts (Event.Duration; 0 for
	// one that takes as long as its action).
	Decode func(d *EventDecoder) (config any, lasts time.Duration)
}

// EventDecoder gives an event kind's Decode the kind's keys of one event,
// with their positions, and collects its problems with the scenario's
// others, so that `firedrill validate` reports all of them at once.
type EventDecoder struct {
	l       *loader
	node    *yaml.Node
	present map[string]entry // the kind's keys as written, null ones included
	kind    EventKind
	event   *Event
}

// What names the event in messages: sql event "sql-2".
func (d *EventDecoder) What() string {
	return fmt.Sprintf("%s event %q", d.event.Kind, d.event.Name)
}

// Key decodes key's value with decode when the event gives it one (a null
// value counts as absent). A problem decode reports marks the key as not
// Good.
func (d *EventDecoder) Key(key string, decode func(v Value)) {
	e, ok := d.present[key]
	if !ok || isNull(e.val) {
		return
	}
	before := len(d.l.errs)
	decode(Value{d: d.l.decoder, n: deref(e.val), key: key})
	if len(d.l.errs) > before {
		e.bad = true
		d.present[key] = e
	}
}

// Has reports whether the event gives key a value.
func (d *EventDecoder) Has(key string) bool { return set(d.present, key) }

// Good reports whether the event gives key a value and it decoded without
// problems, so that checks of what it means do not pile more errors on
// the same mistake.
func (d *EventDecoder) Good(key string) bool { return good(d.present, key) }

// Need reports each of keys the event does not give, with the kind's
// example.
func (d *EventDecoder) Need(keys ...string) {
	for _, key := range keys {
		if !d.Has(key) {
			d.Hintf("as in "+d.kind.Example, "%s needs %s", d.What(), key)
		}
	}
}

// NeedOne reports an event that does not give exactly one of keys.
func (d *EventDecoder) NeedOne(keys ...string) {
	if countPresent(d.present, keys...) != 1 {
		d.Hintf("as in "+d.kind.Example, "%s needs exactly one of %s", d.What(), strings.Join(keys, " or "))
	}
}

// Hintf reports a problem of the whole event, at its position, with what
// to do about it.
func (d *EventDecoder) Hintf(hint, format string, args ...any) {
	d.l.hintf(d.node, hint, format, args...)
}

// Later queues a check that needs the whole scenario (its target, its
// workloads): it runs once every section is decoded and defaulted.
func (d *EventDecoder) Later(check func(s *Scenario)) {
	d.l.later = append(d.l.later, func() { check(d.l.s) })
}

// WorkloadRef checks, once the workloads are decoded, that v names one of
// them.
func (d *EventDecoder) WorkloadRef(v Value, name string) {
	what := d.What()
	d.l.later = append(d.l.later, func() { d.l.checkWorkloadRef(v.n, name, what) })
}

// Value is the value of one key of a scenario, with its position, for
// decoders outside this package (event kinds). Its methods decode it as
// the scenario's own keys are decoded, and report a problem at its
// file:line:col (ok false).
type Value struct {
	d   *decoder
	n   *yaml.Node
	key string // names the value in messages
}

// Pos is where the value is.
func (v Value) Pos() Pos { return pos(v.n) }

// Str decodes a string.
func (v Value) Str() (string, bool) { return v.d.str(v.n, v.key) }

// Bool decodes true or false.
func (v Value) Bool() (bool, bool) { return v.d.boolean(v.n, v.key) }

// Int decodes a whole number within [lo, hi].
func (v Value) Int(lo, hi int64) (int64, bool) { return v.d.integer(v.n, v.key, lo, hi) }

// Duration decodes a duration: Go syntax or a bare number of seconds.
func (v Value) Duration() (time.Duration, bool) { return v.d.duration(v.n, v.key) }

// Size decodes a size in bytes (512MB, 1GiB).
func (v Value) Size() (int64, bool) { return v.d.size(v.n, v.key) }

// ByteRate decodes a rate in bytes per second (50MB/s).
func (v Value) ByteRate() (int64, bool) { return v.d.byteRate(v.n, v.key) }

// List returns the items of a list; with single, a lone value stands for
// a list of one ("sql: SELECT 1"). Each item is named by the list's key.
func (v Value) List(single bool) []Value {
	nodes := v.d.list(v.n, v.key, single)
	items := make([]Value, len(nodes))
	for i, n := range nodes {
		items[i] = Value{d: v.d, n: n, key: v.key}
	}
	return items
}

// Settings decodes a mapping of server setting names to values, the
// names vetted as settings' names (they are spliced into ALTER SYSTEM).
func (v Value) Settings() map[string]string { return v.d.stringMap(v.n, v.key, settingName) }

// EmptyMapping reports whether the value is a mapping with no keys ({}).
func (v Value) EmptyMapping() bool { return v.n.Kind == yaml.MappingNode && len(v.n.Content) == 0 }

// Errorf reports a problem at the value.
func (v Value) Errorf(format string, args ...any) { v.d.errorf(v.n, format, args...) }

// Hintf reports a problem at the value, with what to do about it.
func (v Value) Hintf(hint, format string, args ...any) { v.d.hintf(v.n, hint, format, args...) }

// Quote is the value's text quoted for a message, shortened when long.
func (v Value) Quote() string { return quoteShort(v.n.Value) }
