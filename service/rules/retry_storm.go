package servicerules

import (
	"fmt"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// retryStorm reports retries that multiply the load on a target that is
// already failing: each failed call is tried again, the attempts per
// request climb, and the extra attempts keep the target overloaded, so
// more calls fail and are retried.
type retryStorm struct{ wide }

var _ diagnose.Rule = retryStorm{}

func (retryStorm) ID() string { return "retry-storm" }

// Inputs names the sources the rule reads.
func (retryStorm) Inputs() diagnose.Inputs { return inputs }

// A tick storms when attempts per request reach stormAmplification while
// calls fail; stormTicks in a row make a warning.
const (
	stormAmplification = 1.5
	stormTicks         = 3
)

func (r retryStorm) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		if f, ok := r.check(s); ok {
			out = append(out, f)
		}
	}
	return out
}

func (retryStorm) check(s svc) (diagnose.Finding, bool) {
	ticks := s.ticks()
	amp, retries, arrivals, failed := s.at(svcmetric.Amplification, ""), s.at(svcmetric.Retries, ""), s.at(svcmetric.Arrivals, ""), s.at(svcmetric.Failed, "")
	st, ok := longest(ticks, func(i int) bool {
		t := ticks[i]
		return amp[t] >= stormAmplification && retries[t] > 0 && failed[t] > 0
	})
	if !ok || st.ticks < stormTicks {
		return diagnose.Finding{}, false
	}
	tick := diagnose.Tick(s.run)
	top, topAt := peak(amp, ticks, st.from, st.to)
	meanRetries, meanArrivals := mean(retries, ticks, st.from, st.to), mean(arrivals, ticks, st.from, st.to)
	failedN := total(failed, ticks, st.from, st.to, tick)
	key := func(metric string) string { return "service:" + svcmetric.Key(s.Name, metric, "") }
	remedy := "Give retries a budget (retry.budget: 0.1, at most a tenth of the calls), back off exponentially with jitter (retry.multiplier: 2), " +
		"and put the circuit breaker before the retry, so that a failing target gets fewer calls, not more; do not retry timeouts and refusals of an overloaded target."
	if s.RetryBudget > 0 {
		remedy = fmt.Sprintf("The budget of %s still let the retries through: lower it, ", diagnose.HumanPct(s.RetryBudget)) +
			"back off exponentially with jitter, and open a circuit breaker on the failing target before retrying."
	}
	return diagnose.Finding{
		Severity: diagnose.Warning,
		Start:    st.from - tick,
		End:      st.to,
		Workload: s.workloadOf(""),
		Headline: fmt.Sprintf("Retries multiplied the load of service %s by up to %s for %.0f s while its calls failed",
			s.Name, diagnose.HumanNum(top), st.span(tick)),
		Evidence: []diagnose.Evidence{
			{Series: key(svcmetric.Amplification), T: topAt, Value: top,
				Text: fmt.Sprintf("%s attempts per request at %.0f s", diagnose.HumanNum(top), topAt)},
			{Series: key(svcmetric.Retries), T: st.from, Value: meanRetries,
				Text: fmt.Sprintf("%s retries/s on %s requests/s arriving", diagnose.HumanNum(meanRetries), diagnose.HumanNum(meanArrivals))},
			{Series: key(svcmetric.Failed), T: st.to, Value: failedN,
				Text: fmt.Sprintf("%s requests failed after every attempt", diagnose.HumanNum(failedN))},
		},
		Mechanism: "Each failed call is tried again while the thread waits, so a target that fails under load gets more calls the more it fails: " +
			"the retries add to the overload that made the calls fail, and hold threads that new requests need.",
		Remedy: remedy,
	}, true
}
