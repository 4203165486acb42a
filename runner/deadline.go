package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// A server that stops answering (frozen by SIGSTOP, a hung disk, a
// kernel stall) must not hold the run hostage: the run ends at its
// deadline, its duration plus hardStopGrace, with what was measured, and
// says so (status degraded, the frozen windows in the manifest).

// hardStopGrace is how long after its duration a run may take to stop
// its workloads and events; at the deadline what still waits on the
// server is cut off.
const hardStopGrace = 5 * time.Second

// engineStopTime is how long the engine takes from its context's
// cancellation to closing the connections under commands that do not
// return (Config.StopGrace's default, then 3 s of cancel requests).
const engineStopTime = 4 * time.Second

// closeTime is kept, before the deadline, for what follows the engines'
// stop on a frozen server: the summary, the backend's Close.
const closeTime = 500 * time.Millisecond

// eventCleanupLimit is how long past the deadline events may take to undo
// what they did on a server that still answers.
const eventCleanupLimit = 10 * time.Second

// minTickBudget bounds from below the time one tick's sampling may take:
// below a second of sampling interval, a slow query still gets its time.
const minTickBudget = 2 * time.Second

// ErrDegraded reports a run that reached its end but whose server stopped
// answering for a while (Manifest.Frozen): its numbers cover a server
// that was not serving, and a run that could not finish its duration was
// stopped at its deadline.
var ErrDegraded = errors.New("run degraded: the server stopped answering")

// freezeWatch finds, tick by tick, the windows in which the server did
// not answer: no transaction completed and a sampler's query timed out.
type freezeWatch struct {
	mu           sync.Mutex
	minWindow    float64         // windows this short or shorter are noise (one slow tick)
	servers      map[string]bool // the samplers that query the server
	lastAnswered float64         // t of the last tick at which the server answered
	lastTick     float64         // t of the last tick judged
	frozenSince  float64         // the window's start; < 0 while the server answers
	windows      []timeline.FrozenWindow
	// onEdge, if set, is told a window's start once it is judged frozen
	// and then its end, for the window's outage marks; called under mu.
	onEdge    func(frozenEdge)
	announced bool // onEdge was told the open window's start
}

// frozenEdge is the start (Ended false) or the end of a frozen window.
type frozenEdge struct {
	Start, End       float64
	Ended, Recovered bool
}

func newFreezeWatch(interval time.Duration, sources []backend.Source) *freezeWatch {
	f := &freezeWatch{minWindow: max(2*interval, 2*time.Second).Seconds(), frozenSince: -1, servers: map[string]bool{}}
	for _, s := range sources {
		if s.Server {
			f.servers[s.Name()] = true
		}
	}
	return f
}

// queriesServer says whether the sampler of that name reads the server
// (rather than the host or firedrill itself).
func (f *freezeWatch) queriesServer(sampler string) bool {
	return f != nil && f.servers[sampler]
}

// serverProbe sums up one tick's sampler reads of the server.
type serverProbe struct {
	answered, timedOut bool
	// judge is the backend's judgement of an error (nil: isTimeout).
	judge func(error) bool
}

// note records one sampler's read; queries says whether it reads the
// server, cut whether the tick's time ran out (or the run was stopped)
// before the read returned: whatever its error says, the server did not
// answer in time.
func (p *serverProbe) note(queries bool, err error, cut bool) {
	timeout := isTimeout
	if p.judge != nil {
		timeout = p.judge
	}
	switch {
	case !queries:
	case err == nil:
		p.answered = true
	case cut || timeout(err):
		p.timedOut = true
	}
}

// unanswered is a tick in which a query to the server timed out and none
// was answered: one slow view under load is not a frozen server.
func (p *serverProbe) unanswered() bool { return p.timedOut && !p.answered }

// tick judges one tick at t from the intervals it closed and whether the
// server left the samplers' queries unanswered.
func (f *freezeWatch) tick(t float64, ivs []timeline.Interval, timedOut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// An interval may reach the clock a tick late or more: the server
	// answered until the end of the last one with a transaction, whenever
	// that came, but only one that ended since the last tick says it
	// answers now.
	completed := false
	for _, iv := range ivs {
		if iv.Count == 0 {
			continue
		}
		f.lastAnswered = max(f.lastAnswered, iv.End)
		if iv.End > f.lastTick {
			completed = true
		} else if f.frozenSince >= 0 {
			f.frozenSince = max(f.frozenSince, iv.End)
		}
	}
	f.lastTick = t
	switch {
	case timedOut && !completed:
		if f.frozenSince < 0 {
			f.frozenSince = f.lastAnswered
		}
	default:
		if f.frozenSince >= 0 && (f.announced || t-f.frozenSince > f.minWindow) {
			f.close(timeline.FrozenWindow{Start: f.frozenSince, End: t, Recovered: true})
		}
		f.frozenSince = -1
		if !timedOut {
			f.lastAnswered = t
		}
	}
	if f.frozenSince >= 0 && t-f.frozenSince > f.minWindow {
		f.announce()
	}
}

// announce tells onEdge that the open window is a frozen server, once.
func (f *freezeWatch) announce() {
	if f.announced {
		return
	}
	f.announced = true
	if f.onEdge != nil {
		f.onEdge(frozenEdge{Start: f.frozenSince})
	}
}

// close records the open window w as over and tells onEdge.
func (f *freezeWatch) close(w timeline.FrozenWindow) {
	f.announce()
	f.windows = append(f.windows, w)
	f.announced = false
	if f.onEdge != nil {
		f.onEdge(frozenEdge{Start: w.Start, End: w.End, Ended: true, Recovered: w.Recovered})
	}
}

// frozen reports whether the server has not answered since a tick that is
// at least minWindow before t.
func (f *freezeWatch) frozen(t float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozenSince >= 0 && t-f.frozenSince > f.minWindow
}

// since is when the server last answered, while it does not.
func (f *freezeWatch) since() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozenSince
}

// finish closes a window still open at the run's end t and returns them
// all.
func (f *freezeWatch) finish(t float64) []timeline.FrozenWindow {
	if f == nil {
		return nil // the run ended before its load started
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozenSince >= 0 && (f.announced || t-f.frozenSince > f.minWindow) {
		f.close(timeline.FrozenWindow{Start: f.frozenSince, End: t})
		f.frozenSince = -1
	}
	return f.windows
}

// isTimeout reports whether a sampler's error is the server not answering
// in time, rather than refusing or failing, when the backend does not say
// (backend.Sampling.Unanswered). The samplers' errors reach the
// runner wrapped in ways that keep only their text at times (a failed
// connection repeated), hence the words.
func isTimeout(err error) bool {
	// Cancelled too: the run ended while the query waited on the server.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		strings.Contains(err.Error(), "timeout") || strings.Contains(err.Error(), "context canceled")
}

// stopIfFrozen cancels the run's context (its workloads and events) when
// the server has stopped answering. A server that answers keeps the usual
// end: workloads that started late (connecting many clients takes time)
// finish their own duration, up to 5 s after the run's.
func (r *run) stopIfFrozen(cancel context.CancelFunc) {
	for _, tr := range r.targets {
		if tr.freeze.frozen(time.Since(r.start).Seconds()) {
			r.logf("%sthe server has not answered since %.0f s: stopping the workloads and events at the run's deadline",
				tr.prefix(), tr.freeze.since())
			cancel()
			return
		}
	}
}

// sampleTick reads the samplers due at a tick, all within one budget (the
// tick's interval, at least minTickBudget, never past the deadline), so
// that a server that does not answer delays the clock by a tick at most,
// not by a timeout per sampler.
func (r *run) sampleTick(ctx context.Context, now time.Time, ivs []timeline.Interval, deadline time.Time) {
	budget := now.Add(max(r.sc.SampleInterval, minTickBudget))
	if budget.After(deadline) {
		budget = deadline
	}
	tickCtx, cancel := context.WithDeadline(ctx, budget)
	defer cancel()
	r.sample(tickCtx, now, ivs, false)
}

// sampleLast reads every sampler once more after the load, within one
// tick's budget.
func (r *run) sampleLast(ivs []timeline.Interval) {
	ctx, cancel := context.WithTimeout(context.Background(), max(r.sc.SampleInterval, minTickBudget))
	defer cancel()
	r.sample(ctx, time.Now(), ivs, true)
}

// eventMarks guards the events' marks: after the deadline the runner
// writes the end of events still stuck, and what they mark later is
// dropped (the timeline is closed by then).
type eventMarks struct {
	mu      sync.Mutex
	closed  bool
	started map[string]bool
	ended   map[string]bool
}

// eventMark records an event's mark unless the run has given up on the
// events.
func (r *run) eventMark(m timeline.Mark) {
	r.evMarks.mu.Lock()
	defer r.evMarks.mu.Unlock()
	if r.evMarks.closed {
		return
	}
	if r.evMarks.started == nil {
		r.evMarks.started, r.evMarks.ended = map[string]bool{}, map[string]bool{}
	}
	if m.Phase == timeline.PhaseStart {
		r.evMarks.started[m.Event] = true
	} else {
		r.evMarks.ended[m.Event] = true
	}
	r.mark(m)
}

// keepPlannedEnd puts the end mark of an event that has a duration at its
// planned end when the event returned later: its session was stuck on a
// server that did not answer (a ROLLBACK that could not be sent), which
// is the server's delay, not the event's. When the event really returned
// is kept in the detail (returned_s).
func (r *run) keepPlannedEnd(m *timeline.Mark, spec scenario.Event) {
	if spec.Duration <= 0 {
		return
	}
	planned := (spec.At + spec.Duration).Seconds()
	now := time.Since(r.start).Seconds()
	if now-planned < 1 {
		return
	}
	if m.Detail == nil {
		m.Detail = map[string]any{}
	}
	m.Detail["returned_s"] = now
	m.T = planned
	if m.Error != "" {
		m.Error = fmt.Sprintf("stuck on the server from its planned end (%.1f s) until %.1f s: %s", planned, now, m.Error)
	}
}

// waitEvents waits for the events until the deadline (on a server that
// still answers, eventCleanupLimit longer); those still running then are
// given up: their end is marked (at their planned end, or now) with an
// error saying why, and their later marks are dropped.
func (r *run) waitEvents(events *sync.WaitGroup, deadline time.Time) {
	done := make(chan struct{})
	go func() { events.Wait(); close(done) }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	why := "the server did not answer"
	if !r.anyFrozen(time.Since(r.start).Seconds()) {
		// A server that answers: the events' own cleanup (a rollback, a
		// removal, each bounded) gets its time, with a limit for what
		// no server bounds (an fsync on a hung disk).
		timer.Reset(eventCleanupLimit)
		select {
		case <-done:
			return
		case <-timer.C:
		}
		why = fmt.Sprintf("still running %v after it", eventCleanupLimit)
	}
	r.evMarks.mu.Lock()
	defer r.evMarks.mu.Unlock()
	now := time.Since(r.start)
	for _, spec := range r.sc.Events {
		if r.evMarks.ended[spec.Name] || spec.At > now {
			continue
		}
		if !r.evMarks.started[spec.Name] {
			r.mark(timeline.Mark{T: spec.At.Seconds(), Event: spec.Name, Target: spec.Target, Kind: spec.Kind, Phase: timeline.PhaseStart})
		}
		end := timeline.Mark{Event: spec.Name, Target: spec.Target, Kind: spec.Kind, Phase: timeline.PhaseEnd,
			Error: fmt.Sprintf("did not finish by the run's deadline (%.0f s): %s; given up",
				deadline.Sub(r.start).Seconds(), why)}
		if planned := spec.At + spec.Duration; spec.Duration > 0 && planned < now {
			end.T = planned.Seconds()
		}
		r.mark(end)
		r.logf("event %s (%s): %s", spec.Name, spec.Kind, end.Error)
	}
	r.evMarks.closed = true
}

// holdToPlan computes the summary's throughput over the planned duration:
// time a workload spent past it waiting on a server that did not answer
// is not time it could have run transactions in.
func (r *run) holdToPlan(sum *timeline.Summary) {
	sum.Duration = min(sum.Duration, r.sc.Duration.Seconds())
	for i := range sum.Workloads {
		ws := &sum.Workloads[i]
		for _, wr := range r.workloads {
			if wr.spec.Name != ws.Name || wr.cfg.Duration <= 0 {
				continue
			}
			if planned := wr.cfg.Duration.Seconds(); ws.Duration > planned {
				ws.Duration = planned
				ws.TPS = float64(ws.Count) / planned
			}
		}
	}
}

// unreachable is an outage that had not ended when its workload did: the
// server died, or was still down at the end.
type unreachable struct {
	workload string
	start    float64
	cause    string // the error that opened the outage
}

// markFrozen marks a frozen window on the timeline as an outage (kind
// timeline.MarkOutage, named outage-N with the workloads' own), so that
// reports list the time the server did not answer with the time it
// refused: its start once the window is judged frozen, placed where the
// server last answered, and its end.
func (r *run) markFrozen(tr *targetRun, e frozenEdge) {
	var workloads []string
	for _, wr := range r.workloads {
		if wr.tr == tr {
			workloads = append(workloads, wr.spec.Name)
		}
	}
	detail := map[string]any{"workload": strings.Join(workloads, ", "), "code": frozenCode}
	if !e.Ended {
		tr.frozenOutage = fmt.Sprintf("outage-%d", r.outages.Add(1))
		detail["cause"] = frozenCause
		r.mark(timeline.Mark{T: e.Start, Event: tr.frozenOutage, Target: tr.name, Kind: timeline.MarkOutage, Phase: timeline.PhaseStart, Detail: detail})
		r.logf("%sthe server has not answered since %.1f s (frozen?)", tr.prefix(), e.Start)
		return
	}
	took := e.End - e.Start
	detail["duration_s"] = took
	outcome := fmt.Sprintf("recovered after %.1f s: the server answers again", took)
	if !e.Recovered {
		outcome = fmt.Sprintf("not recovered by the end of the run, %.1f s later", took)
	}
	r.mark(timeline.Mark{T: e.End, Event: tr.frozenOutage, Target: tr.name, Kind: timeline.MarkOutage, Phase: timeline.PhaseEnd, Outcome: outcome, Detail: detail})
	r.logf("%s%s: the server did not answer: %s", tr.prefix(), tr.frozenOutage, outcome)
}

// The code and cause of a frozen window's outage marks.
const (
	frozenCode  = "frozen"
	frozenCause = "the server did not answer: no transaction completed and its samplers' queries timed out"
)

// degraded records the frozen windows in the manifest and returns
// ErrDegraded, saying when, if the server stopped answering for a while
// or could not be reached when the load ended (an outage not recovered).
func (r *run) degraded(end float64) error {
	var spans []string
	for i, tr := range r.targets {
		windows := tr.freeze.finish(end)
		if r.several() {
			r.man.Targets[i].Frozen = windows
		} else {
			r.man.Frozen = windows
		}
		for _, w := range windows {
			to := fmt.Sprintf("%.0f s", w.End)
			if !w.Recovered {
				to = "the end of the run"
			}
			spans = append(spans, fmt.Sprintf("%sfrom %.0f s to %s", tr.prefix(), w.Start, to))
		}
	}
	r.unreachable.Lock()
	for _, o := range r.unreachable.outages {
		spans = append(spans, fmt.Sprintf("from %.0f s to the end of workload %s (unreachable: %s)", o.start, o.workload, o.cause))
	}
	r.unreachable.Unlock()
	if len(spans) == 0 {
		return nil
	}
	return fmt.Errorf("%w %s", ErrDegraded, strings.Join(spans, ", "))
}
