package scenario

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Fallback is where a workload's clients turn when a transaction on
// their own target fails or is slow: the cache-aside read path of a
// service, which reads the cache and, on a miss or a timeout, the
// database (workloads.fallback).
type Fallback struct {
	Pos    Pos
	Target string // the other target, where the fallback scripts run
	// After is the latency above which a transaction that succeeded
	// falls back too; 0 falls back only on failures.
	After time.Duration
	// Scripts run on Target, in its dialect: one for all the workload's
	// scripts, or one per script in their order.
	Scripts []ScriptSource
}

// FallbackWorkload is the load a workload's fallback puts on its target,
// as that target sees it (ForTarget): the same clients, running the
// fallback's scripts, so that the target's confinement checks, its
// connection count and its kind's checks of scripts include them.
func (w *Workload) FallbackWorkload() Workload {
	fb := w.Fallback
	out := *w
	out.Pos, out.Target, out.Scripts, out.Fallback = fb.Pos, fb.Target, fb.Scripts, nil
	out.Mode, out.Settings, out.Pool, out.PoolTimeout = "", nil, 0, 0
	return out
}

// fallback decodes a workload's fallback:, and checks its target and
// scripts once the targets are known.
func (l *loader) fallback(v *yaml.Node, w *Workload, what string) {
	if !l.several() {
		l.hintf(v, "name the systems in targets:, as in targets: {cache: {kind: redis}, db: {kind: postgres}}",
			"%s: fallback: needs a second target to fall back to", what)
		return
	}
	fb := &Fallback{Pos: pos(v)}
	var targetNode *yaml.Node
	var scriptNodes []*yaml.Node
	present := l.fields(v, "fallback", []field{
		{"target", func(n *yaml.Node) {
			targetNode = n
			fb.Target, _ = l.str(n, "target")
		}},
		{"after", func(n *yaml.Node) { fb.After, _ = l.positiveDuration(n, "after") }},
		{"scripts", func(n *yaml.Node) {
			for i, item := range l.list(n, "scripts", false) {
				if src, textNode, ok := l.scriptSource(item, i); ok {
					fb.Scripts = append(fb.Scripts, src)
					scriptNodes = append(scriptNodes, textNode)
				}
			}
		}},
	})
	if present == nil {
		return
	}
	fwhat := what + " fallback"
	l.require(v, present, "target", fwhat, "as in fallback: {target: db, after: 20ms, scripts: [read.sql]}")
	l.require(v, present, "scripts", fwhat, "the scripts the clients run on the fallback's target")
	if targetNode == nil {
		return
	}
	w.Fallback = fb
	l.scriptChecks = append(l.scriptChecks, func() {
		nt, ok := l.targetRef(targetNode, fb.Target, v, fwhat)
		if !ok {
			return
		}
		if own := l.workloadTargets[w.Pos]; own.node != nil && own.name == nt.Name ||
			own.node == nil && len(l.s.Targets) == 1 {
			l.hintf(targetNode, "a fallback runs on another target than the workload's own", "%s: target %q is the workload's own", fwhat, nt.Name)
			return
		}
		if n := len(fb.Scripts); n > 0 && n != 1 && n != len(w.Scripts) {
			l.hintf(present["scripts"].val, "give one script for all, or one per script of the workload",
				"%s: %d scripts for the workload's %d", fwhat, n, len(w.Scripts))
		}
		// The fallback runs on the workload's clients: it reads what
		// the workload's own scripts set.
		var inherited func(string) bool
		if dialect, ok := l.dialectOf(w.Pos); ok {
			inherited = l.setBy(w, dialect)
		}
		saved := l.s.Dialect
		l.s.Dialect = nt.Dialect
		l.checkScripts(&Workload{Name: w.Name, Scripts: fb.Scripts}, fwhat, scriptNodes, inherited)
		l.s.Dialect = saved
	})
}

// fallbacksTo are the loads that the workloads' fallbacks put on the
// target called name (FallbackWorkload), in the file's order.
func (s *Scenario) fallbacksTo(name string) []Workload {
	var out []Workload
	for i := range s.Workloads {
		if w := &s.Workloads[i]; w.Fallback != nil && w.Fallback.Target == name {
			out = append(out, w.FallbackWorkload())
		}
	}
	return out
}

// String says what a fallback does, for messages.
func (fb *Fallback) String() string {
	if fb.After > 0 {
		return fmt.Sprintf("falls back to %s after a failure or %v", fb.Target, fb.After)
	}
	return fmt.Sprintf("falls back to %s after a failure", fb.Target)
}
