package servicerules

import (
	"fmt"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// throttleLag reports a throttle that learns of what it admitted too
// late to stop a surge: a limiter fed through a queue (the messenger's
// join throttle read a Kafka topic, INCIDENTS.md §4 c) sees the admitted
// rate seconds behind, and lets everything through for that long, which
// is exactly when the surge comes.
type throttleLag struct{ wide }

var _ diagnose.Rule = throttleLag{}

func (throttleLag) ID() string { return "throttle-lag" }

// Inputs names the sources the rule reads.
func (throttleLag) Inputs() diagnose.Inputs { return inputs }

// A tick overshoots when the throttle admitted overshootRatio × its rate
// while it lagged; overshootTicks in a row make a warning.
const (
	overshootRatio = 1.5
	overshootTicks = 2
)

func (r throttleLag) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		if f, ok := r.check(s); ok {
			out = append(out, f)
		}
	}
	return out
}

func (throttleLag) check(s svc) (diagnose.Finding, bool) {
	ticks := s.ticks()
	admitted, rejected, lag := s.at(svcmetric.ThrottleAdmitted, ""), s.at(svcmetric.ThrottleRejected, ""), s.at(svcmetric.ThrottleLag, "")
	arrivals := s.at(svcmetric.Arrivals, "")
	if len(admitted) == 0 || s.ThrottleRate <= 0 {
		return diagnose.Finding{}, false
	}
	limit := s.ThrottleRate
	st, ok := longest(ticks, func(i int) bool {
		t := ticks[i]
		return lag[t] > 0 && admitted[t] >= overshootRatio*limit
	})
	if !ok || st.ticks < overshootTicks {
		return diagnose.Finding{}, false
	}
	tick := diagnose.Tick(s.run)
	top, topAt := peak(admitted, ticks, st.from, st.to)
	maxLag, lagAt := peak(lag, ticks, st.from, st.to)
	excess := 0.0
	for _, t := range ticks {
		if t >= st.from && t <= st.to {
			excess += (admitted[t] - limit) * tick
		}
	}
	meanArrivals := mean(arrivals, ticks, st.from, st.to)
	rejectedN := total(rejected, ticks, st.from, st.to, tick)
	key := func(metric string) string { return "service:" + svcmetric.Key(s.Name, metric, "") }
	ev := []diagnose.Evidence{
		{Series: key(svcmetric.ThrottleAdmitted), T: topAt, Value: top,
			Text: fmt.Sprintf("%s requests/s admitted at %.0f s against a limit of %s/s (%s arriving)",
				diagnose.HumanNum(top), topAt, diagnose.HumanNum(limit), diagnose.HumanNum(meanArrivals))},
		{Series: key(svcmetric.ThrottleLag), T: lagAt, Value: maxLag,
			Text: fmt.Sprintf("the limiter saw the admitted rate %s late", humanS(maxLag))},
		{Series: key(svcmetric.ThrottleAdmitted), T: st.to, Value: excess,
			Text: fmt.Sprintf("%s requests admitted above the limit from %.0f s to %.0f s; %s rejected", diagnose.HumanNum(excess), st.from-tick, st.to, diagnose.HumanNum(rejectedN))},
	}
	// What the surge did behind the throttle.
	if peakQ, at := peak(s.at(svcmetric.QueueLength, ""), ticks, st.from, st.to+5*tick); peakQ > 0 {
		ev = append(ev, diagnose.Evidence{Series: key(svcmetric.QueueLength), T: at, Value: peakQ,
			Text: fmt.Sprintf("%s requests queued for a thread behind it at %.0f s", diagnose.HumanNum(peakQ), at)})
	}
	return diagnose.Finding{
		Severity: diagnose.Warning,
		Start:    st.from - tick,
		End:      st.to,
		Workload: s.workloadOf(""),
		Headline: fmt.Sprintf("The throttle of service %s admitted up to %s requests/s against its limit of %s/s: it saw admissions %s late, and the surge went through",
			s.Name, diagnose.HumanNum(top), diagnose.HumanNum(limit), humanS(maxLag)),
		Evidence: ev,
		Mechanism: "The limiter counts what it admitted from a feed that arrives late (a queue, another service), so when a surge starts " +
			"it still sees the quiet rate of a few seconds ago and admits everything for as long as the lag. The surge reaches the database " +
			"before the throttle reacts, slows it, and the slower processing lengthens the lag further.",
		Remedy: fmt.Sprintf("Count admissions where they happen: a local token bucket per server (throttle.mode: local; with %d instance(s), "+
			"each allowing its share of the %s/s), so the limit holds from the first request of a surge. Keep a shared limiter only as a second, coarse line.",
			max(1, s.Instances), diagnose.HumanNum(limit)),
	}, true
}
