package scenario

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// eventSpec is what one kind of event takes, beyond name, kind and at
// (which every event has). A new kind is one line here and its name in
// EventKinds.
type eventSpec struct {
	kind     string
	required []string // keys the kind needs
	oneOf    []string // keys of which exactly one is needed
	optional []string
	example  string // for hints
}

// eventSpecs are the kinds of event and their keys.
var eventSpecs = []eventSpec{
	{kind: "hold_transaction", required: []string{"duration"}, optional: []string{"isolation", "xid", "sql"},
		example: "{kind: hold_transaction, at: 60s, duration: 2m}"},
	{kind: "sql", required: []string{"sql"},
		example: "{kind: sql, at: 90s, sql: \"VACUUM\"}"},
	{kind: "settings", required: []string{"settings"}, optional: []string{"restart"},
		example: "{kind: settings, at: 30s, settings: {work_mem: 64MB}}"},
	{kind: "terminate", oneOf: []string{"workload", "pid"},
		example: "{kind: terminate, at: 40s, workload: oltp}"},
	{kind: "disk_pressure", required: []string{"size"}, optional: []string{"duration", "rate", "path"},
		example: "{kind: disk_pressure, at: 10s, size: 512MB, duration: 30s}"},
	{kind: "shell", required: []string{"command"},
		example: "{kind: shell, at: 5s, command: sync}"},
}

// eventCommonKeys are the keys of every event.
var eventCommonKeys = []string{"name", "kind", "at"}

// specOf finds a kind's spec.
func specOf(kind string) (eventSpec, bool) {
	for _, s := range eventSpecs {
		if s.kind == kind {
			return s, true
		}
	}
	return eventSpec{}, false
}

// allows reports whether an event of this kind takes key.
func (s eventSpec) allows(key string) bool {
	for _, keys := range [][]string{eventCommonKeys, s.required, s.oneOf, s.optional} {
		for _, k := range keys {
			if k == key {
				return true
			}
		}
	}
	return false
}

// kindsAllowing lists the kinds that take key, for hints.
func kindsAllowing(key string) []string {
	var kinds []string
	for _, s := range eventSpecs {
		if s.allows(key) {
			kinds = append(kinds, s.kind)
		}
	}
	return kinds
}

// event decodes one event and checks its keys against its kind.
func (l *loader) event(v *yaml.Node, index int) (Event, bool) {
	e := Event{Pos: pos(v)}
	var workloadNode *yaml.Node
	var restart bool
	present := l.fields(v, "an event", []field{
		{"name", func(v *yaml.Node) { e.Name, _ = l.name(v, "name", eventNameChars) }},
		{"kind", func(v *yaml.Node) { e.Kind, _ = l.oneOf(v, "kind", EventKinds) }},
		{"at", func(v *yaml.Node) { e.At, _ = l.duration(v, "at") }},
		{"duration", func(v *yaml.Node) { e.Duration, _ = l.duration(v, "duration") }},
		{"isolation", func(v *yaml.Node) {
			if s, ok := l.str(v, "isolation"); ok {
				norm := strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(s))), " ")
				for _, iso := range Isolations {
					if norm == iso {
						e.Isolation = iso
						return
					}
				}
				l.hintf(v, "one of "+strings.Join(Isolations, ", "), "isolation: unknown isolation level %s", quoteShort(s))
			}
		}},
		{"xid", func(v *yaml.Node) { e.XID, _ = l.boolean(v, "xid") }},
		{"sql", func(v *yaml.Node) {
			for _, item := range l.list(v, "sql", true) {
				stmt, ok := l.str(item, "sql")
				if !ok {
					continue
				}
				if strings.TrimSpace(stmt) == "" {
					l.errorf(item, "sql: empty statement")
					continue
				}
				e.SQL = append(e.SQL, stmt)
			}
		}},
		{"settings", func(v *yaml.Node) { e.Settings = l.stringMap(v, "settings", settingName) }},
		{"restart", func(v *yaml.Node) { restart, _ = l.boolean(v, "restart"); e.Restart = restart }},
		{"workload", func(v *yaml.Node) {
			if name, ok := l.str(v, "workload"); ok {
				e.Workload, workloadNode = name, v
			}
		}},
		{"pid", func(v *yaml.Node) {
			if n, ok := l.integer(v, "pid", 1, math.MaxInt32); ok {
				e.PID = int(n)
			}
		}},
		{"size", func(v *yaml.Node) { e.Size, _ = l.size(v, "size") }},
		{"rate", func(v *yaml.Node) { e.Rate, _ = l.byteRate(v, "rate") }},
		{"path", func(v *yaml.Node) {
			if p, ok := l.str(v, "path"); ok {
				if p == "" {
					l.errorf(v, "path: empty")
					return
				}
				e.Path = p
			}
		}},
		{"command", func(v *yaml.Node) {
			if c, ok := l.str(v, "command"); ok {
				if strings.TrimSpace(c) == "" {
					l.errorf(v, "command: empty")
					return
				}
				e.Command = c
			}
		}},
	})
	if present == nil {
		return e, false
	}
	if e.Kind != "" && e.Name == "" && !set(present, "name") {
		e.Name = fmt.Sprintf("%s-%d", e.Kind, index+1)
	}
	what := "event"
	if e.Name != "" {
		what = fmt.Sprintf("event %q", e.Name)
	}
	hasKind := l.require(v, present, "kind", what, "one of "+strings.Join(EventKinds, ", "))
	l.require(v, present, "at", what, "when it happens, as in at: 60s")
	spec, ok := specOf(e.Kind)
	if !hasKind || !ok {
		return e, false
	}
	what = fmt.Sprintf("%s event %q", e.Kind, e.Name)
	for _, key := range sortedKeys(present) {
		if !spec.allows(key) {
			l.hintf(present[key].key, "it applies to "+strings.Join(kindsAllowing(key), ", "), "%s does not apply to a %s event", key, e.Kind)
		}
	}
	for _, key := range spec.required {
		if !set(present, key) {
			l.hintf(v, "as in "+spec.example, "%s needs %s", what, key)
		}
	}
	if len(spec.oneOf) > 0 && countPresent(present, spec.oneOf...) != 1 {
		l.hintf(v, "as in "+spec.example, "%s needs exactly one of %s", what, strings.Join(spec.oneOf, " or "))
	}
	l.checkEventValues(v, &e, what, present)
	if workloadNode != nil && spec.allows("workload") {
		l.later = append(l.later, func() { l.checkWorkloadRef(workloadNode, e.Workload, what) })
	}
	l.later = append(l.later, func() { l.checkEventTime(e, what, present) })
	return e, true
}

// checkEventValues checks values whose limits depend on the kind.
func (l *loader) checkEventValues(v *yaml.Node, e *Event, what string, present map[string]entry) {
	val := func(key string) *yaml.Node { return deref(present[key].val) }
	switch e.Kind {
	case "hold_transaction":
		if good(present, "duration") && e.Duration <= 0 {
			l.errorf(val("duration"), "%s: duration must be longer than 0s", what)
		}
	case "settings":
		if set(present, "settings") && len(e.Settings) == 0 && val("settings").Kind == yaml.MappingNode && len(val("settings").Content) == 0 {
			l.hintf(val("settings"), "as in settings: {work_mem: 64MB}", "%s: settings: empty", what)
		}
		if e.Restart {
			l.later = append(l.later, func() {
				if !l.s.Target.Embedded() {
					l.hintf(val("restart"), "firedrill restarts only the server it started; remove dsn or restart", "%s: restart needs the embedded target, and dsn is set", what)
				}
			})
		}
	case "disk_pressure":
		if good(present, "size") && e.Size <= 0 {
			l.errorf(val("size"), "%s: size must be above 0", what)
		}
		if !set(present, "path") {
			l.later = append(l.later, func() {
				if !l.s.Target.Embedded() {
					l.hintf(v, "set path to a directory on the server's filesystem", "%s: path is needed when the target is not embedded", what)
				}
			})
		}
	}
}

// checkWorkloadRef reports an event naming a workload that does not exist.
func (l *loader) checkWorkloadRef(v *yaml.Node, name, what string) {
	var names []string
	for _, w := range l.s.Workloads {
		if w.Name == name {
			return
		}
		names = append(names, w.Name)
	}
	mean, _ := suggest(name, names)
	l.hintf(v, "workloads: "+strings.Join(names, ", "), "%s: no workload %q%s", what, name, mean)
}

// checkEventTime checks that an event happens, and ends, within the run.
func (l *loader) checkEventTime(e Event, what string, present map[string]entry) {
	run := l.s.Duration
	if run <= 0 || !good(present, "at") {
		return
	}
	at := deref(present["at"].val)
	switch {
	case e.At >= run:
		l.hintf(at, "move it earlier or lengthen duration", "%s: at %v is not before the end of the run (%v)", what, e.At, run)
	case e.End() > run:
		l.hintf(at, "shorten it or lengthen duration", "%s: ends at %v, after the end of the run (%v)", what, e.End(), run)
	}
}

// checkEventNames reports events with the same name (given or default).
func (l *loader) checkEventNames() {
	first := make(map[string]Pos)
	for _, e := range l.s.Events {
		if e.Name == "" {
			continue
		}
		if p, dup := first[e.Name]; dup {
			l.report(e.Pos, "give one a name: of its own", "duplicate event name %q (first at line %d)", e.Name, p.Line)
			continue
		}
		first[e.Name] = e.Pos
	}
}

// sortedKeys lists a mapping's present keys in the file's order.
func sortedKeys(present map[string]entry) []string {
	keys := make([]string, 0, len(present))
	for k := range present {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := present[keys[i]].key, present[keys[j]].key
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return keys
}
