package timeline

import "slices"

// TargetNames lists the names of a run's targets, in the scenario's
// order: nil for a run of one system (and every run recorded before
// runs could have several).
func (m *Manifest) TargetNames() []string {
	var out []string
	for _, t := range m.Targets {
		out = append(out, t.Name)
	}
	return out
}

// NamedTarget returns the target called name, and whether the run has it.
func (m *Manifest) NamedTarget(name string) (NamedTarget, bool) {
	for _, t := range m.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return NamedTarget{}, false
}

// ForTarget is the run as one of its targets saw it: a run of one system
// whose Manifest.Target is that target, with its workloads, events,
// samples and marks and the host's (those with no target), so that what
// reads a run of one system (rules, charts) reads each target of a run
// of several unchanged. A run of one system is its own only view, for
// any name. The view shares the run's records (read-only).
func (r *Run) ForTarget(name string) *Run {
	nt, ok := r.Manifest.NamedTarget(name)
	if !ok {
		return r
	}
	v := &Run{Dir: r.Dir, Manifest: r.Manifest}
	m := &v.Manifest
	m.Target, m.Targets, m.Settings, m.Frozen = nt.Target, nil, nt.Settings, nt.Frozen
	m.Samplers = append(slices.Clip(r.Manifest.Samplers), nt.Samplers...)
	ours := func(target string) bool { return target == "" || target == name }
	m.Workloads = nil
	workloads := map[string]bool{}
	for _, w := range r.Manifest.Workloads {
		if w.Target == name {
			m.Workloads = append(m.Workloads, w)
			workloads[w.Name] = true
		}
	}
	m.Events = nil
	for _, e := range r.Manifest.Events {
		if ours(e.Target) {
			m.Events = append(m.Events, e)
		}
	}
	if r.Summary != nil {
		s := *r.Summary
		s.Workloads = nil
		for _, w := range r.Summary.Workloads {
			if workloads[w.Name] {
				s.Workloads = append(s.Workloads, w)
			}
		}
		v.Summary = &s
	}
	for _, iv := range r.Intervals {
		if workloads[iv.Workload] {
			v.Intervals = append(v.Intervals, iv)
		}
	}
	for _, s := range r.Samples {
		if ours(s.Target) {
			v.Samples = append(v.Samples, s)
		}
	}
	for _, mk := range r.Marks {
		if ours(mk.Target) {
			v.Marks = append(v.Marks, mk)
		}
	}
	return v
}
