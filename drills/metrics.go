package drills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/drills/measure"
	"github.com/firedrill/firedrill/timeline"
)

// Measures are the metrics expectations may name: the neutral ones
// (throughput, latency, errors, stalls) and those of the kinds it was
// made with. Its zero value has the neutral ones only.
type Measures struct {
	kinds []measure.Metric // merged by name, in the order first declared
}

// NewMeasures gathers the kinds' metrics; those of one name merge (their
// series and error codes add up).
func NewMeasures(kinds ...[]measure.Metric) Measures {
	var ms Measures
	for _, metrics := range kinds {
		for _, m := range metrics {
			i := slices.IndexFunc(ms.kinds, func(have measure.Metric) bool { return have.Name == m.Name })
			if i < 0 {
				m.Sum, m.ErrorCodes, m.Members = slices.Clone(m.Sum), slices.Clone(m.ErrorCodes), slices.Clone(m.Members)
				ms.kinds = append(ms.kinds, m)
				continue
			}
			have := &ms.kinds[i]
			have.Sum = append(have.Sum, m.Sum...)
			have.ErrorCodes = append(have.ErrorCodes, m.ErrorCodes...)
		}
	}
	return ms
}

// Names lists the metrics an expectation may name.
func (ms Measures) Names() []string {
	names := make([]string, 0, len(metrics)+len(ms.kinds))
	for _, m := range metrics {
		names = append(names, m.name)
	}
	for _, m := range ms.kinds {
		names = append(names, m.Name)
	}
	return names
}

// lookupOrAny is lookup; a nil ms takes any metric.
func (ms *Measures) lookupOrAny(name string) (metricSpec, bool) {
	if ms == nil {
		return metricSpec{name: name}, true
	}
	return ms.lookup(name)
}

// lookup finds a metric by the name an expectation writes: a neutral
// one, or a kind's with the family member it names ("" for none).
func (ms Measures) lookup(name string) (metricSpec, bool) {
	for _, m := range metrics {
		if m.name == name {
			return m, true
		}
	}
	for i := range ms.kinds {
		m := &ms.kinds[i]
		prefix, _, family := strings.Cut(m.Name, "<")
		switch {
		case !family && m.Name == name:
			return metricSpec{name: name, unit: m.Unit, kind: m}, true
		case family && strings.HasPrefix(name, prefix) && slices.Contains(m.Members, name[len(prefix):]):
			return metricSpec{name: name, unit: m.Unit, kind: m, member: name[len(prefix):]}, true
		}
	}
	return metricSpec{}, false
}

// measureKind measures a kind's metric over span.
func measureKind(run *timeline.Run, spec metricSpec, span Span) (float64, error) {
	m := spec.kind
	if m.HitRate != nil {
		return hitRate(run, *m.HitRate, spec.member, span)
	}
	total, sampled := 0.0, false
	for _, s := range m.Sum {
		for _, p := range run.Series(s.Source, s.Key) {
			sampled = true
			in := p.T >= span.From && p.T < span.To
			if m.Trailing {
				in = p.T > span.From && p.T <= span.To
			}
			if in {
				total += p.V
			}
		}
	}
	if sampled || len(m.ErrorCodes) == 0 {
		return total, nil
	}
	for _, iv := range run.Intervals {
		if mid := (iv.Start + iv.End) / 2; mid >= span.From && mid < span.To {
			for _, code := range m.ErrorCodes {
				total += float64(iv.Errors[code])
			}
		}
	}
	return total, nil
}

// hitRate pools a cache's hits and reads over the span's samples (each a
// per-second rate over one tick).
func hitRate(run *timeline.Run, hr measure.HitRate, member string, span Span) (float64, error) {
	var hits, reads float64
	for _, s := range run.SourceSamples(hr.Source) {
		if s.Error != "" || s.T <= span.From || s.T > span.To {
			continue
		}
		hits += s.Values[member+hr.HitsSuffix]
		reads += s.Values[member+hr.ReadsSuffix]
	}
	if hits+reads == 0 {
		return 0, fmt.Errorf("no access to the %s cache between %.1f and %.1f s", member, span.From, span.To)
	}
	return hits / (hits + reads), nil
}
