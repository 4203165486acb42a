package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// eventCommonKeys are the keys of every event; the rest belong to its kind.
var eventCommonKeys = []string{"name", "kind", "at"}

// eventKind finds a kind among those the caller gave.
func (l *loader) eventKind(name string) (EventKind, bool) {
	for _, k := range l.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return EventKind{}, false
}

// eventKindNames lists the kinds the caller gave, for messages.
func (l *loader) eventKindNames() []string {
	names := make([]string, len(l.kinds))
	for i, k := range l.kinds {
		names[i] = k.Name
	}
	return names
}

// eventKeys lists every key some event takes, common ones first, then
// each kind's in the kinds' order.
func (l *loader) eventKeys() []string {
	keys := slices.Clone(eventCommonKeys)
	for _, k := range l.kinds {
		for _, key := range k.Keys {
			if !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// kindsTaking lists the kinds that take key, for hints.
func (l *loader) kindsTaking(key string) []string {
	var kinds []string
	for _, k := range l.kinds {
		if slices.Contains(k.Keys, key) {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}

// event decodes one event: name, kind and at here, the rest by its kind.
func (l *loader) event(v *yaml.Node, index int) (Event, bool) {
	e := Event{Pos: pos(v)}
	known := []field{
		{"name", func(v *yaml.Node) { e.Name, _ = l.name(v, "name", eventNameChars) }},
		{"kind", func(v *yaml.Node) { e.Kind, _ = l.oneOf(v, "kind", l.eventKindNames()) }},
		{"at", func(v *yaml.Node) { e.At, _ = l.duration(v, "at") }},
	}
	// The kinds' keys are kept as written until the kind is known; a key
	// no kind takes waits for it too, so that its hint lists the kind's
	// keys.
	for _, key := range l.eventKeys()[len(eventCommonKeys):] {
		known = append(known, field{key, func(*yaml.Node) {}})
	}
	if l.several() {
		known = append(known, field{"target", func(*yaml.Node) {}}) // read by targetEvents
	}
	var unknown []entry
	present := l.decodeFields(v, "an event", known, false, func(e entry) { unknown = append(unknown, e) })
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
	hasKind := l.require(v, present, "kind", what, "one of "+strings.Join(l.eventKindNames(), ", "))
	l.require(v, present, "at", what, "when it happens, as in at: 60s")
	kind, ok := l.eventKind(e.Kind)
	if !hasKind || !ok {
		l.unknownKeys(unknown, "an event", l.eventKeys())
		return e, false
	}
	common := slices.Clone(eventCommonKeys)
	if l.several() {
		common = append(common, "target")
	}
	l.unknownKeys(unknown, fmt.Sprintf("a %s event", kind.Name), append(common, kind.Keys...))
	own := make(map[string]entry)
	for _, key := range sortedKeys(present) {
		switch {
		case slices.Contains(eventCommonKeys, key), key == "target" && l.several():
		case slices.Contains(kind.Keys, key):
			own[key] = present[key]
		default:
			l.hintf(present[key].key, "it applies to "+strings.Join(l.kindsTaking(key), ", "), "%s does not apply to a %s event", key, e.Kind)
		}
	}
	d := &EventDecoder{l: l, node: deref(v), present: own, kind: kind, event: &e}
	e.Config, e.Duration = kind.Decode(d)
	what = d.What()
	l.later = append(l.later, func() { l.checkEventTime(e, what, present) })
	return e, true
}

// unknownKeys reports keys that no event of the kind takes, with the
// closest known key or the list of them.
func (l *loader) unknownKeys(unknown []entry, what string, keys []string) {
	for _, e := range unknown {
		mean, choices := suggest(e.key.Value, keys)
		hint := ""
		if choices != "" {
			hint = "known keys of " + what + ": " + choices
		}
		l.hintf(e.key, hint, "unknown key %q%s", e.key.Value, mean)
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

// targetEvents decodes the events of a scenario of several targets: each
// names its target (the only one by default) and is decoded with the
// kinds of event of that target's kind.
func (l *loader) targetEvents(items []*yaml.Node) {
	for i, item := range items {
		var ref *yaml.Node
		name := ""
		if m := deref(item); m.Kind == yaml.MappingNode {
			if ref = mappingValue(m, "target"); ref != nil {
				ref = deref(ref)
				var ok bool
				if name, ok = l.str(ref, "target"); !ok {
					continue
				}
			}
		}
		what := fmt.Sprintf("event %d", i+1)
		nt, ok := l.targetRef(ref, name, item, what)
		if !ok {
			continue
		}
		l.kinds = nt.kinds
		if e, ok := l.event(item, i); ok {
			e.Target = nt.Name
			l.s.Events = append(l.s.Events, e)
		}
	}
	l.kinds = nil
	l.later = append(l.later, l.checkEventNames)
}
