// Package timelinetest builds run directories for tests of what reads a
// run: in particular a run of several targets composed from recorded runs
// of one system each (diagnose/testdata), so that the report, compare,
// thresholds and /metrics can be tested on one without a runner writing
// it. Only tests import it.
package timelinetest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Part is one target of a composed run: its name in the run and the
// recorded run of one system that stands for it.
type Part struct {
	Name string
	Dir  string
	// Clock makes the composed run start when this part did, so that the
	// wall-clock times its samples hold in their details (a latency
	// monitor's event times) fall within the run; the first part's
	// otherwise. Rules of the other parts that read such times see them
	// out of place.
	Clock bool
}

// hostSource says whether a sampler's source is the host's (the machine's
// and firedrill's own) rather than a target's: a composed run keeps the
// first part's, as one run on one host has one of each.
func hostSource(source string) bool { return source == hostmetric.Host || source == hostmetric.Self }

// Compose writes into dir one run of several targets made of the runs of
// one system that parts name, on one clock (each starts at 0): the
// manifest lists them as Targets (the first's also as Target, Settings
// and Frozen, as a runner writes them), their workloads, events, samples,
// intervals and marks carry their target's name, and the host's samples
// are the first part's. A workload whose name an earlier part already
// used is renamed "<target>-<name>". It returns the run as Open reads it.
func Compose(dir string, parts ...Part) (*timeline.Run, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("compose %s: no parts", dir)
	}
	var (
		out      timeline.Manifest
		summary  *timeline.Summary
		names    []string
		hostSeen bool
		clock    timeline.Manifest
	)
	w, err := timeline.Create(dir)
	if err != nil {
		return nil, fmt.Errorf("compose %s: %w", dir, err)
	}
	defer w.Close()
	for i, p := range parts {
		run, err := timeline.Open(p.Dir)
		if err != nil {
			return nil, fmt.Errorf("compose %s: part %s: %w", dir, p.Name, err)
		}
		m := run.Manifest
		if i == 0 {
			out = m
			out.Samplers, out.Workloads, out.Events, out.Targets = nil, nil, nil, nil
		}
		if p.Clock {
			clock = m
		}
		names = append(names, m.Name)
		nt := timeline.NamedTarget{Name: p.Name, Target: m.Target, Settings: m.Settings, Frozen: m.Frozen}
		for _, s := range m.Samplers {
			switch {
			case !hostSource(s.Name):
				nt.Samplers = append(nt.Samplers, s)
			case i == 0:
				out.Samplers = append(out.Samplers, s)
			}
		}
		out.Targets = append(out.Targets, nt)
		rename := map[string]string{}
		for _, wi := range m.Workloads {
			name := wi.Name
			if slices.ContainsFunc(out.Workloads, func(o timeline.WorkloadInfo) bool { return o.Name == name }) {
				name = p.Name + "-" + name
			}
			rename[wi.Name] = name
			wi.Name, wi.Target = name, p.Name
			out.Workloads = append(out.Workloads, wi)
		}
		for _, e := range m.Events {
			e.Target = p.Name
			out.Events = append(out.Events, e)
		}
		if run.Summary != nil {
			if summary == nil {
				s := *run.Summary
				s.Workloads = nil
				summary = &s
			}
			summary.Duration = max(summary.Duration, run.Summary.Duration)
			for _, ws := range run.Summary.Workloads {
				ws.Name = rename[ws.Name]
				summary.Workloads = append(summary.Workloads, ws)
			}
		}
		for _, iv := range run.Intervals {
			iv.Workload = rename[iv.Workload]
			w.Add(timeline.Record{Interval: &iv})
		}
		for _, s := range run.Samples {
			if hostSource(s.Source) {
				if i > 0 && hostSeen {
					continue
				}
			} else {
				s.Target = p.Name
			}
			w.Add(timeline.Record{Sample: &s})
		}
		hostSeen = hostSeen || slices.ContainsFunc(run.Samples, func(s timeline.Sample) bool { return hostSource(s.Source) })
		for _, mk := range run.Marks {
			mk.Target = p.Name
			if mk.Kind == timeline.MarkOutage {
				// Outages are numbered per run: keep each part's apart.
				mk.Event = p.Name + "-" + mk.Event
				if wl, ok := mk.Detail["workload"].(string); ok {
					mk.Detail["workload"] = rename[wl]
				}
			}
			w.Add(timeline.Record{Mark: &mk})
		}
	}
	out.Name = strings.Join(names, "+")
	if !clock.Started.IsZero() {
		out.Started, out.Ended = clock.Started, clock.Ended
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compose %s: %w", dir, err)
	}
	if err := timeline.WriteJSON(dir, timeline.ManifestFile, &out); err != nil {
		return nil, fmt.Errorf("compose %s: %w", dir, err)
	}
	if summary != nil {
		if err := timeline.WriteJSON(dir, timeline.SummaryFile, summary); err != nil {
			return nil, fmt.Errorf("compose %s: %w", dir, err)
		}
	}
	return timeline.Open(dir)
}
