package pgrules

import (
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Helpers for the rules that read where active sessions spend their time
// (pg_stat_activity's wait events), and for writing numbers for people.

// activitySource is the sampler of pg_stat_activity.
const activitySource = pgmetric.Activity

// waitTime summarises, over a window, how many active sessions waited on
// a class of wait events.
type waitTime struct {
	Samples  int     // pg_stat_activity samples in the window
	Active   float64 // sum of aas over those samples
	Waiting  float64 // sum of the matching wait.* sessions
	PeakT    float64 // when the most sessions waited
	PeakWait float64
	// ByEvent is the sum per matching wait event ("LWLock:WALWrite").
	ByEvent map[string]float64
}

// Share is the part of active time spent in the matching waits (0..1).
func (w waitTime) Share() float64 {
	if w.Active <= 0 {
		return 0
	}
	return math.Min(1, w.Waiting/w.Active)
}

// MeanWaiting is the mean number of sessions in the matching waits.
func (w waitTime) MeanWaiting() float64 {
	if w.Samples == 0 {
		return 0
	}
	return w.Waiting / float64(w.Samples)
}

// MeanActive is the mean number of active sessions.
func (w waitTime) MeanActive() float64 {
	if w.Samples == 0 {
		return 0
	}
	return w.Active / float64(w.Samples)
}

// TopEvents lists the matching wait events, most time first.
func (w waitTime) TopEvents() []string {
	events := make([]string, 0, len(w.ByEvent))
	for e := range w.ByEvent {
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool {
		if w.ByEvent[events[i]] != w.ByEvent[events[j]] {
			return w.ByEvent[events[i]] > w.ByEvent[events[j]]
		}
		return events[i] < events[j]
	})
	return events
}

// waitsIn adds up the pg_stat_activity samples with from <= T < to whose
// wait event ("Lock:transactionid", "CPU") match.
func waitsIn(run *timeline.Run, from, to float64, match func(event string) bool) waitTime {
	w := waitTime{ByEvent: map[string]float64{}}
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != activitySource || s.Error != "" || s.T < from || s.T >= to {
			continue
		}
		aas, ok := s.Values["aas"]
		if !ok {
			continue
		}
		w.Samples++
		w.Active += aas
		sum := 0.0
		for k, v := range s.Values {
			if event, ok := strings.CutPrefix(k, "wait."); ok && match(event) {
				sum += v
				w.ByEvent[event] += v
			}
		}
		w.Waiting += sum
		if sum > w.PeakWait {
			w.PeakWait, w.PeakT = sum, s.T
		}
	}
	return w
}
