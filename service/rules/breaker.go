package servicerules

import (
	"fmt"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// breakerFlapping reports a circuit breaker that opened: once, it did
// its job (info, with what it turned away); again and again, half-open
// trial calls keep failing and the target keeps being let back in and
// shut out, which is the target still failing, not a recovery.
type breakerFlapping struct{ wide }

var _ diagnose.Rule = breakerFlapping{}

func (breakerFlapping) ID() string { return "breaker-flapping" }

// Inputs names the sources the rule reads.
func (breakerFlapping) Inputs() diagnose.Inputs { return inputs }

// flapOpenings: a breaker that opened this many times flaps.
const flapOpenings = 3

// Breaker states as the series records them.
const (
	breakerClosed   = 0
	breakerOpen     = 1
	breakerHalfOpen = 2
)

func (r breakerFlapping) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		for _, target := range s.suffixes(svcmetric.BreakerState) {
			if f, ok := r.check(s, target); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

func (breakerFlapping) check(s svc, target string) (diagnose.Finding, bool) {
	pts := s.series(svcmetric.BreakerState, target)
	openings, reopenings := 0, 0
	first, last, openS := 0.0, 0.0, 0.0
	tick := diagnose.Tick(s.run)
	prev := float64(breakerClosed)
	for _, p := range pts {
		if p.V == breakerOpen && prev != breakerOpen {
			if openings == 0 {
				first = p.T
			}
			openings++
			if prev == breakerHalfOpen {
				reopenings++
			}
			last = p.T
		}
		if p.V == breakerOpen {
			openS += tick
		}
		prev = p.V
	}
	if openings == 0 {
		return diagnose.Finding{}, false
	}
	rejected := 0.0
	for _, p := range s.series(svcmetric.BreakerRejected, target) {
		rejected += p.V * tick
	}
	severity := diagnose.Info
	headline := fmt.Sprintf("The circuit breaker of service %s on %s opened at %.0f s and turned away %s calls", s.Name, target, first, diagnose.HumanNum(rejected))
	if openings >= flapOpenings {
		severity = diagnose.Warning
		headline = fmt.Sprintf("The circuit breaker of service %s on %s flapped: it opened %s between %.0f s and %.0f s",
			s.Name, target, diagnose.Times(float64(openings)), first, last)
	}
	key := func(metric string) string { return "service:" + svcmetric.Key(s.Name, metric, target) }
	f := diagnose.Finding{
		Severity: severity,
		Start:    first - tick,
		End:      last,
		Workload: s.workloadOf(target),
		Target:   s.findingTarget(target),
		Headline: headline,
		Evidence: []diagnose.Evidence{
			{Series: key(svcmetric.BreakerState), T: first, Value: float64(openings),
				Text: fmt.Sprintf("opened %s (%d times again after half-open trial calls), open for about %.0f s in all", diagnose.Times(float64(openings)), reopenings, openS)},
			{Series: key(svcmetric.BreakerRejected), T: last, Value: rejected,
				Text: fmt.Sprintf("%s calls refused at once instead of waiting on %s", diagnose.HumanNum(rejected), target)},
		},
		Mechanism: "The breaker opens when the failure or slow-call rate of the last calls passes its threshold, refuses calls for wait_in_open, " +
			"then lets a few trial calls through (half-open). Trial calls that fail open it again: while the target is still overloaded " +
			"the breaker flaps, each half-open spell sending it a burst it cannot take.",
		Remedy: "Opening once is the breaker doing its job: the calls it refused failed fast instead of holding threads. If it flaps, the target " +
			"has not recovered: lengthen wait_in_open, keep permitted_calls_in_half_open small, and remove the overload itself (a throttle on " +
			"the hot key, a bulkhead so the target's calls cannot take every thread).",
	}
	f.Lasting = true // openings happened; they cannot be taken back
	return f, true
}
