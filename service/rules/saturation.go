package servicerules

import (
	"fmt"
	"math"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// saturation says which resource of a service binds when its requests
// wait: the threads are all busy (requests queue for one) or the threads
// wait for a connection. It tells apart, from what the busy threads are
// doing, the CPU (they wait for a core: the run queue), the connection
// pool (they wait for a connection) and the database (they hold a
// connection and wait for the transaction), since each has a different
// remedy and the wrong one (more threads on a saturated CPU, a bigger
// pool in front of a slow database) makes things worse.
type saturation struct{ wide }

var _ diagnose.Rule = saturation{}

func (saturation) ID() string { return "service-saturation" }

// Inputs names the sources the rule reads.
func (saturation) Inputs() diagnose.Inputs { return inputs }

// A tick is saturated when requests wait in the queue or for a
// connection; three in a row make a finding. It is a warning once
// requests were lost to it (refused, or their callers gave up): before
// that the service only queued.
const (
	saturationTicks = 3
	// bindShare: the busy threads' share waiting on one resource that
	// makes it the binding one.
	bindShare = 0.5
)

// What binds.
const (
	bindCPU      = "CPU"
	bindPool     = "connection pool"
	bindDatabase = "database"
)

func (r saturation) Check(run *timeline.Run) []diagnose.Finding {
	var out []diagnose.Finding
	for _, s := range services(run) {
		if f, ok := r.check(s); ok {
			out = append(out, f)
		}
	}
	return out
}

func (saturation) check(s svc) (diagnose.Finding, bool) {
	ticks := s.ticks()
	queued, waiters, busy := s.at(svcmetric.QueueLength, ""), s.at(svcmetric.PoolWaiters, ""), s.at(svcmetric.BusyThreads, "")
	refused, timeouts := s.at(svcmetric.Refused, ""), s.at(svcmetric.Timeouts, "")
	runQueue := s.perInstance(svcmetric.CPURunQueue)
	saturated := func(t float64) bool { return queued[t] >= 1 || waiters[t] >= 1 }
	st, ok := longest(ticks, func(i int) bool { return saturated(ticks[i]) })
	if !ok || st.ticks < saturationTicks {
		return diagnose.Finding{}, false
	}
	tick := diagnose.Tick(s.run)
	// What the busy threads did over every saturated tick.
	var nBusy, nRun, nWait, nQueued, lost float64
	n := 0
	for _, t := range ticks {
		if saturated(t) {
			nBusy += busy[t]
			nRun += runQueue[t]
			nWait += waiters[t]
			nQueued += queued[t]
			n++
		}
		lost += (refused[t] + timeouts[t]) * tick
	}
	nBusy, nRun, nWait, nQueued = nBusy/float64(n), nRun/float64(n), nWait/float64(n), nQueued/float64(n)
	cores := s.Cores * float64(max(1, s.Instances))
	onCPU := nRun
	if cores > 0 && len(runQueue) > 0 {
		onCPU += math.Min(cores, math.Max(0, nBusy-nWait-nRun)) // those running beside the queue
	}
	binds := bindDatabase
	switch {
	case nBusy > 0 && nRun >= bindShare*nBusy:
		binds = bindCPU
	case nBusy > 0 && nWait >= bindShare*nBusy:
		binds = bindPool
	}
	inDB := math.Max(0, nBusy-onCPU-nWait)
	severity := diagnose.Info
	if lost > 0 {
		severity = diagnose.Warning
	}
	key := func(metric string) string { return "service:" + svcmetric.Key(s.Name, metric, "") }
	threads := "its threads"
	if s.MaxThreads > 0 {
		threads = fmt.Sprintf("its %s threads", diagnose.HumanNum(float64(s.MaxThreads*max(1, s.Instances))))
	}
	ev := []diagnose.Evidence{
		{Series: key(svcmetric.BusyThreads), T: st.from, Value: nBusy,
			Text: fmt.Sprintf("%s of %s busy on average while requests waited (%d ticks), %s queued for a thread",
				diagnose.HumanNum(nBusy), threads, n, diagnose.HumanNum(nQueued))},
		{Series: "service:" + s.Name + ".instance.<n>." + svcmetric.CPURunQueue, T: st.from, Value: nRun,
			Text: fmt.Sprintf("%s of them waited for a core (the CPU run queue beyond %s cores)", diagnose.HumanNum(nRun), diagnose.HumanNum(cores))},
		{Series: key(svcmetric.PoolWaiters), T: st.from, Value: nWait,
			Text: fmt.Sprintf("%s of them waited for a database connection", diagnose.HumanNum(nWait))},
		{Series: "workload", T: st.from, Value: inDB,
			Text: fmt.Sprintf("about %s held a connection, in the database", diagnose.HumanNum(inDB))},
	}
	if lost > 0 {
		ev = append(ev, diagnose.Evidence{Series: key(svcmetric.Refused), T: st.to, Value: lost,
			Text: fmt.Sprintf("%s requests lost: refused with the queue full or given up by their callers", diagnose.HumanNum(lost))})
	}
	f := diagnose.Finding{
		Severity: severity,
		Start:    st.from - tick,
		End:      st.to,
		Workload: s.workloadOf(""),
		Headline: fmt.Sprintf("Service %s is bound by the %s: requests waited for %.0f s, most busy threads %s", s.Name, binds, st.span(tick), doing(binds)),
		Evidence: ev,
	}
	switch binds {
	case bindCPU:
		f.Mechanism = "The threads are busy, but most of them wait for a core: more running threads than cores only share the same CPU, so every request's CPU time stretches and the threads stay taken longer. More threads would make it worse."
		f.Remedy = "Add CPU, not threads: more instances (each with its cores), or less CPU per request. Size max_threads near cores × (1 + wait time ÷ CPU time) of a request; beyond it threads only queue for the CPU."
	case bindPool:
		f.Mechanism = "The threads are busy, but most of them wait for a database connection: the pool hands out fewer connections than the threads want, so requests hold a thread while they queue for one."
		f.Remedy = "Look at the database before growing the pool: if its sessions are slow (a missing index, lock waits), a bigger pool only queues the same work inside it. If the database has headroom, raise pool.size (within its max_connections across every instance), else lower max_threads to what the pool serves and refuse the rest early."
	default:
		f.Mechanism = "The threads are busy and most of them hold a connection: they wait for the database's answer. Neither the CPU nor the pool limits the service; the database's time per transaction, times the arrival rate, is more than the threads can cover."
		f.Remedy = "Make the transactions faster (see the database's own findings: indexes, lock waits, commit flushes), or add threads and pool connections only as far as the database has headroom; refuse excess requests early (a bounded accept_count, a throttle) instead of queueing them past the callers' timeout."
	}
	return f, true
}

// doing says what most busy threads did when binds binds.
func doing(binds string) string {
	switch binds {
	case bindCPU:
		return "waiting for a core"
	case bindPool:
		return "waiting for a connection"
	}
	return "waiting on the database"
}
