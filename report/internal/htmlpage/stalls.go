package htmlpage

import (
	"fmt"
	"sort"

	"github.com/firedrill/firedrill/timeline"
)

// stallKind is the band kind of a stretch where the server left the
// samplers unanswered; the script draws it over the plots, so the gap in
// their lines reads as the stall it is.
const stallKind = "stall"

// stallBands are the stretches, per target, in which the server did not
// answer the samplers (reads with timeline.Sample.Stall): each from the
// tick whose reads first timed out to the first read answered after it
// (or the stall's own length when none was), with its length in the name.
func stallBands(run *timeline.Run) []eventBand {
	type span struct {
		from, to float64
		sources  map[string]bool // the samplers it cut: one of them answering again ends it
	}
	spans := map[string][]span{} // by target
	open := map[string]*span{}
	var targets []string
	for i := range run.Samples {
		s := &run.Samples[i]
		cur := open[s.Target]
		switch {
		case s.Stall > 0:
			if cur == nil {
				if _, seen := spans[s.Target]; !seen {
					targets = append(targets, s.Target)
					spans[s.Target] = nil
				}
				start := s.T + s.Duration/1000 - s.Stall
				cur = &span{from: start, to: start, sources: map[string]bool{}}
				open[s.Target] = cur
			}
			cur.to = max(cur.to, s.T+s.Duration/1000)
			cur.sources[s.Source] = true
		case cur != nil && s.Error == "" && cur.sources[s.Source]:
			cur.to = max(cur.to, s.T)
			spans[s.Target] = append(spans[s.Target], *cur)
			open[s.Target] = nil
		}
	}
	for target, cur := range open {
		if cur != nil {
			spans[target] = append(spans[target], *cur)
		}
	}
	sort.Strings(targets)
	var out []eventBand
	for _, target := range targets {
		for _, sp := range spans[target] {
			name := fmt.Sprintf("server stalled %.1f s", sp.to-sp.from)
			if target != "" {
				name = target + ": " + name
			}
			out = append(out, eventBand{Name: name, Kind: stallKind, Start: sp.from, End: sp.to,
				Outcome: "the server did not answer firedrill's samplers: their charts have no values here"})
		}
	}
	return out
}
