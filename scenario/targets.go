package scenario

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/script"
)

// NamedTarget is one system of a scenario with several (targets:): its
// name, what target: says of a scenario's only one, and its own setup.
type NamedTarget struct {
	Name   string
	Pos    Pos // where its name is written
	Target Target
	Setup  Setup
	// Dialect is the language of the scripts of the workloads that load
	// it: its kind's (Options.ForKind).
	Dialect script.Dialect
	// kinds are the event kinds a target of its kind takes.
	kinds []EventKind
}

// targetNameChars are the punctuation a target's name may hold: no dot,
// which separates a threshold metric's parts.
const targetNameChars = "_-"

// TargetNames lists the names of the scenario's targets in the file's
// order: nil for a scenario of one system (target:).
func (s *Scenario) TargetNames() []string {
	var out []string
	for _, t := range s.Targets {
		out = append(out, t.Name)
	}
	return out
}

// NamedTarget returns the target called name, and whether there is one.
func (s *Scenario) NamedTarget(name string) (NamedTarget, bool) {
	for _, t := range s.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return NamedTarget{}, false
}

// ForTarget is the scenario as one of its targets sees it: a scenario of
// one system whose Target, Setup and Dialect are that target's, with only
// the workloads (a fallback to it among them, FallbackWorkload), events
// and kind-specific keys that concern it, so that a
// backend reads each target of a scenario of several as it reads a
// scenario of one. A scenario of one system is its own view, for any
// name. The view shares the scenario's slices' elements (read-only).
func (s *Scenario) ForTarget(name string) *Scenario {
	nt, ok := s.NamedTarget(name)
	if !ok {
		return s
	}
	v := *s
	v.Targets = nil
	v.Target, v.Setup, v.Dialect = nt.Target, nt.Setup, nt.Dialect
	v.Workloads, v.Events, v.KindKeys = nil, nil, nil
	for _, w := range s.Workloads {
		if w.Target == name {
			v.Workloads = append(v.Workloads, w)
		}
	}
	v.Workloads = append(v.Workloads, s.fallbacksTo(name)...)
	for _, e := range s.Events {
		if e.Target == name {
			v.Events = append(v.Events, e)
		}
	}
	for _, k := range s.KindKeys {
		if k.Target == name {
			v.KindKeys = append(v.KindKeys, k)
		}
	}
	return &v
}

// several says whether the scenario names its systems (targets:).
func (l *loader) several() bool { return l.targetsNode != nil }

// targets decodes targets:, a mapping of names to targets in the file's
// order, each with its own setup.
func (l *loader) targets(v *yaml.Node) {
	v = deref(v)
	if v.Kind != yaml.MappingNode {
		l.hintf(v, "as in targets: {db: {kind: postgres}, cache: {kind: redis}}", "targets: want a mapping of names to targets, got %s", describe(v))
		return
	}
	entries := l.entries(v)
	if len(entries) == 0 {
		l.hintf(v, "name at least one, as in targets: {db: {kind: postgres}}", "targets: the mapping is empty")
		return
	}
	for _, e := range entries {
		name := e.key.Value
		if !validName(name, targetNameChars) {
			l.hintf(e.key, "use lower-case letters, digits and "+charList(targetNameChars), "targets: %s is not a valid name", quoteShort(name))
			continue
		}
		nt := NamedTarget{Name: name, Pos: pos(e.key)}
		l.curTarget = name
		if isNull(e.val) {
			nt.Target.Pos = pos(e.val) // the default kind, embedded
		} else {
			l.targetInto(e.val, &nt.Target, "targets."+name, []field{
				{"setup", func(v *yaml.Node) { l.setupInto(v, &nt.Setup) }},
			})
		}
		l.curTarget = ""
		l.databaseRef(nt)
		if dsn, ok := l.opts.DSNs[name]; ok {
			nt.Target.DSN = dsn
		}
		l.s.Targets = append(l.s.Targets, nt)
	}
	for name := range l.opts.DSNs {
		if _, ok := l.s.NamedTarget(name); !ok {
			l.errs = append(l.errs, &Error{File: "--dsn " + name + "=…",
				Msg: fmt.Sprintf("the scenario has no target %q (targets: %s)", name, strings.Join(l.s.TargetNames(), ", "))})
		}
	}
}

// databaseRef checks a target's database: (the target whose connection
// string its embedded service is handed): a target written before it,
// which the run opens first.
func (l *loader) databaseRef(nt NamedTarget) {
	db := nt.Target.Database
	if db == "" {
		return
	}
	if db == nt.Name {
		l.report(nt.Target.DatabasePos, "name the database's target", "database: %s is this target itself", db)
		return
	}
	if _, ok := l.s.NamedTarget(db); ok {
		return
	}
	names := l.s.TargetNames()
	mean, _ := suggest(db, names)
	hint := "targets open in the file's order: write the database's target first"
	if len(names) > 0 {
		hint += " (before it: " + strings.Join(names, ", ") + ")"
	}
	l.report(nt.Target.DatabasePos, hint, "database: no target %q before %s%s", db, nt.Name, mean)
}

// kindOfTargets settles each target's kind options once the file is read:
// its kind, else its dsn's URL scheme, else the default kind (a --dsn
// without a name, Options.Kind, is for a scenario of one system).
func (l *loader) kindOfTargets() {
	opts := l.opts
	opts.Kind = ""
	for i := range l.s.Targets {
		nt := &l.s.Targets[i]
		ko := opts.kindOptions(nt.Target)
		nt.kinds, nt.Dialect = ko.EventKinds, ko.Dialect
		if nt.Setup.Schema == "" {
			nt.Setup.Schema = DefaultSchema
		}
	}
	if len(l.s.Targets) > 0 {
		first := l.s.Targets[0]
		l.s.Target, l.s.Setup, l.s.Dialect = first.Target, first.Setup, first.Dialect
	}
}

// targetRef resolves the target a workload or event names (target,
// written at v, or nil when left out): the only one by default. It
// reports a missing or unknown name, and returns false then.
func (l *loader) targetRef(v *yaml.Node, target string, at *yaml.Node, what string) (NamedTarget, bool) {
	names := l.s.TargetNames()
	if v == nil {
		if len(l.s.Targets) == 1 {
			return l.s.Targets[0], true
		}
		if len(l.s.Targets) > 1 {
			l.hintf(at, "as in target: "+names[0], "%s: name its target (targets: %s)", what, strings.Join(names, ", "))
		}
		return NamedTarget{}, false
	}
	if nt, ok := l.s.NamedTarget(target); ok {
		return nt, true
	}
	if target != "" {
		mean, _ := suggest(target, names)
		l.hintf(v, "targets: "+strings.Join(names, ", "), "%s: no target %q%s", what, target, mean)
	}
	return NamedTarget{}, false
}

// resolveWorkloadTargets gives each workload its target, the only one by
// default, and checks the names; it runs before the scripts are parsed,
// in their target's dialect.
func (l *loader) resolveWorkloadTargets() {
	for i := range l.s.Workloads {
		w := &l.s.Workloads[i]
		ref := l.workloadTargets[w.Pos]
		what := "workload"
		if w.Name != "" {
			what = fmt.Sprintf("workload %q", w.Name)
		}
		nt, ok := l.targetRef(ref.node, ref.name, ref.at, what)
		if !ok {
			l.badTarget[w.Pos] = true
			continue
		}
		w.Target = nt.Name
		for j := range l.s.KindKeys {
			if k := &l.s.KindKeys[j]; k.Target == workloadKeyMarker(w.Pos) {
				k.Target = nt.Name
			}
		}
	}
}

// workloadKeyMarker stands, in a KeyUse's Target, for the target of the
// workload at p until it is resolved.
func workloadKeyMarker(p Pos) string { return fmt.Sprintf("\x00workload %d:%d", p.Line, p.Col) }

// targetWritten is a workload's target: as written.
type targetWritten struct {
	node *yaml.Node // the value; nil when left out
	name string
	at   *yaml.Node // the workload
}

// dialectOf is the dialect the scripts of the workload at p are read in,
// once its target is resolved; false when its target is wrong (reported).
func (l *loader) dialectOf(p Pos) (script.Dialect, bool) {
	if !l.several() {
		return l.s.Dialect, true
	}
	for _, w := range l.s.Workloads {
		if w.Pos != p || l.badTarget[p] {
			continue
		}
		if nt, ok := l.s.NamedTarget(w.Target); ok {
			return nt.Dialect, true
		}
	}
	return l.s.Dialect, false
}

// setupOf is the setup of a workload's target.
func (l *loader) setupOf(w *Workload) Setup {
	if nt, ok := l.s.NamedTarget(w.Target); ok {
		return nt.Setup
	}
	return l.s.Setup
}
