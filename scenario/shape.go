package scenario

import (
	"math"
	"path/filepath"
	"time"
)

// Resolve returns the path to open for a file the scenario names: absolute
// paths as they are, relative ones against the scenario file's directory.
func (s *Scenario) Resolve(path string) string {
	if filepath.IsAbs(path) || s.File == "" {
		return path
	}
	return filepath.Join(filepath.Dir(s.File), path)
}

// Bounds returns when the last bounded thing in the scenario ends: a
// workload's stop (or the end of its stages) or an event's at+duration.
// ok is false when nothing bounds the run, so that it needs an explicit
// duration. Instant events do not bound the run: they must happen before
// its end.
func (s *Scenario) Bounds() (end time.Duration, ok bool) {
	for _, w := range s.Workloads {
		if e, bounded := w.Bound(); bounded {
			end, ok = max(end, e), true
		}
	}
	for _, e := range s.Events {
		if e.Duration > 0 {
			end, ok = max(end, e.End()), true
		}
	}
	return end, ok
}

// Workload returns the workload of that name, for events and thresholds
// that name one.
func (s *Scenario) Workload(name string) (Workload, bool) {
	for _, w := range s.Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Open reports whether the workload runs on the open model (an arrival
// rate, or stages that set rates) rather than as fast as its clients go.
func (w Workload) Open() bool {
	if len(w.Stages) > 0 {
		return w.Stages[0].Rate != nil
	}
	return w.Rate > 0
}

// StagesDuration is how long the workload's stages last together.
func (w Workload) StagesDuration() time.Duration {
	var total time.Duration
	for _, st := range w.Stages {
		total += st.Duration
	}
	return total
}

// Bound returns when the workload ends by itself: its stop, or else the end
// of its stages; ok is false when it runs until the end of the run.
func (w Workload) Bound() (end time.Duration, ok bool) {
	switch {
	case w.Stop > 0:
		return w.Stop, true
	case len(w.Stages) > 0:
		return w.Start + w.StagesDuration(), true
	}
	return 0, false
}

// Window returns when the workload runs within a run of the given length.
// A workload whose stages end before its stop holds the last stage's
// clients or rate until the stop.
func (w Workload) Window(run time.Duration) (start, stop time.Duration) {
	stop = run
	if end, ok := w.Bound(); ok {
		stop = min(end, run)
	}
	return min(w.Start, stop), stop
}

// MaxClients is the most clients the workload runs at once, and so the
// most connections it opens (fewer with Pool): Clients for the closed
// model, the highest stage for clients stages, and for a rate the clients
// that carry it, by default one per 100 transactions/s and at least 8.
func (w Workload) MaxClients() int {
	if w.Open() {
		if w.Clients > 0 {
			return w.Clients
		}
		return defaultRateClients(w.maxRate())
	}
	n := w.Clients
	for _, st := range w.Stages {
		if st.Clients != nil {
			n = max(n, *st.Clients)
		}
	}
	return n
}

// maxRate is the highest rate the workload reaches.
func (w Workload) maxRate() float64 {
	r := w.Rate
	for _, st := range w.Stages {
		if st.Rate != nil {
			r = max(r, *st.Rate)
		}
	}
	return r
}

// txPerRateClient and minRateClients set the default number of clients
// that carry an arrival rate: one per 100 transactions/s, at least 8, so
// that latencies up to about 10 ms keep up without schedule lag.
const (
	txPerRateClient = 100
	minRateClients  = 8
)

// defaultRateClients is the default number of clients carrying rate.
func defaultRateClients(rate float64) int {
	n := math.Ceil(rate / txPerRateClient)
	if n > MaxClientsPerWorkload {
		return MaxClientsPerWorkload
	}
	return max(int(n), minRateClients)
}

// End is when the event is over: At plus its Duration (At for instant
// events).
func (e Event) End() time.Duration { return e.At + e.Duration }
