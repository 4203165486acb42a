package servicerules

import (
	"fmt"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// oldestStarve reports a service that keeps answering but answers too
// late: with a FIFO queue longer than its threads clear within the
// callers' timeout, each thread takes the oldest request, whose caller
// has already given up, so the throughput holds while the goodput (the
// answers in time) falls, and the work goes to nobody (the journal
// service behind Tomcat's 200 threads, INCIDENTS.md §2).
type oldestStarve struct{ wide }

var _ diagnose.Rule = oldestStarve{}

func (oldestStarve) ID() string { return "oldest-requests-starve" }

// Inputs names the sources the rule reads.
func (oldestStarve) Inputs() diagnose.Inputs { return inputs }

// Thresholds: a tick starves when the service still answered (it is not
// stopped), under half of its answers were in time, and some were wasted
// (finished for callers who had gone: it works for nobody). Three ticks
// in a row make a warning, 10 s a critical finding.
const (
	starveGoodputShare = 0.5
	starveTicks        = 3
	starveCriticalS    = 10.0
)

func (r oldestStarve) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		if f, ok := r.check(s); ok {
			out = append(out, f)
		}
	}
	return out
}

func (oldestStarve) check(s svc) (diagnose.Finding, bool) {
	ticks := s.ticks()
	thr, good := s.at(svcmetric.Throughput, ""), s.at(svcmetric.Goodput, "")
	wasted, timeouts := s.at(svcmetric.Wasted, ""), s.at(svcmetric.Timeouts, "")
	age, queued := s.at(svcmetric.QueueOldestAge, ""), s.at(svcmetric.QueueLength, "")
	st, ok := longest(ticks, func(i int) bool {
		t := ticks[i]
		return thr[t] > 0 && good[t] < starveGoodputShare*thr[t] && wasted[t] > 0 && timeouts[t] > 0
	})
	if !ok || st.ticks < starveTicks {
		return diagnose.Finding{}, false
	}
	tick := diagnose.Tick(s.run)
	severity := diagnose.Warning
	if st.span(tick) >= starveCriticalS {
		severity = diagnose.Critical
	}
	// Medians: a workload that stops ends its requests in flight at once,
	// and one tick's throughput jumps with them.
	meanThr, meanGood := median(thr, ticks, st.from, st.to), median(good, ticks, st.from, st.to)
	wastedN, timeoutsN := total(wasted, ticks, st.from, st.to, tick), total(timeouts, ticks, st.from, st.to, tick)
	oldest, oldestAt := peak(age, ticks, st.from, st.to)
	maxQueued, queuedAt := peak(queued, ticks, st.from, st.to)
	key := func(metric string) string { return "service:" + svcmetric.Key(s.Name, metric, "") }
	timeout := "the callers' timeout"
	if s.Timeout > 0 {
		timeout = "the callers' " + humanS(s.Timeout) + " timeout"
	}
	queue := "its queue"
	if !s.LIFO {
		queue = "its FIFO queue"
	}
	f := diagnose.Finding{
		Severity: severity,
		Start:    st.from - tick,
		End:      st.to,
		Workload: s.workloadOf(""),
		Headline: fmt.Sprintf("Service %s answered %s requests/s but only %s in time for %.0f s: its threads serve the oldest requests, whose callers gave up (%s wasted)",
			s.Name, diagnose.HumanNum(meanThr), diagnose.HumanNum(meanGood), st.span(tick), diagnose.HumanNum(wastedN)),
		Evidence: []diagnose.Evidence{
			{Series: key(svcmetric.Goodput), T: st.from, Value: meanGood,
				Text: fmt.Sprintf("median goodput %s/s against a throughput of %s/s (%s in time) from %.0f s to %.0f s",
					diagnose.HumanNum(meanGood), diagnose.HumanNum(meanThr), diagnose.HumanPct(meanGood/meanThr), st.from-tick, st.to)},
			{Series: key(svcmetric.Wasted), T: st.to, Value: wastedN,
				Text: fmt.Sprintf("%s responses finished after their caller had gone, %s callers gave up", diagnose.HumanNum(wastedN), diagnose.HumanNum(timeoutsN))},
			{Series: key(svcmetric.QueueOldestAge), T: oldestAt, Value: oldest,
				Text: fmt.Sprintf("the oldest queued request had waited %s at %.0f s, against %s", humanS(oldest), oldestAt, timeout)},
			{Series: key(svcmetric.QueueLength), T: queuedAt, Value: maxQueued,
				Text: fmt.Sprintf("%s requests queued for a thread at %.0f s", diagnose.HumanNum(maxQueued), queuedAt)},
		},
		Mechanism: fmt.Sprintf("Requests arrive faster than the threads finish them, so they wait in %s. A free thread takes the oldest one, "+
			"which by then has waited longer than %s: its caller has gone, and the thread works for nobody while the requests behind it "+
			"age past the timeout in turn. The service stays as busy as ever, but almost nothing it answers is still wanted.", queue, timeout),
		Remedy: starveRemedy(s, meanThr),
	}
	return f, true
}

// starveRemedy says what would have kept the answers in time, from how
// the service was set up.
func starveRemedy(s svc, throughput float64) string {
	var out string
	if !s.CancelOnTimeout {
		out = "Stop working for callers who left: carry the caller's deadline with the request and drop it when it has passed (cancel_on_timeout: true). "
	}
	if !s.LIFO {
		out += "Serve the newest request first under overload (queue: lifo), so that most callers get an answer in time and only the oldest time out. "
	}
	if s.Timeout > 0 && throughput > 0 {
		out += fmt.Sprintf("Bound the queue to what the threads clear within the timeout: about %s requests at %s/s in %s (accept_count across %d instance(s)); refuse the rest at once. ",
			diagnose.HumanNum(throughput*s.Timeout), diagnose.HumanNum(throughput), humanS(s.Timeout), max(1, s.Instances))
	}
	out += "Add capacity as instances, not threads on the same cores: more threads on the same CPU slow every request (five servers of 200 threads beat one of 1,000)."
	return out
}
