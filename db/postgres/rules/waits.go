package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
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

// loadWindow is the span of the run in which workloads measured
// something: from the first interval's start to the last one's end (the
// whole run when there are none).
func loadWindow(run *timeline.Run) (from, to float64) {
	if len(run.Intervals) == 0 {
		return 0, diagnose.RunEnd(run) + 1e-9
	}
	from, to = math.Inf(1), 0
	for _, iv := range run.Intervals {
		from = min(from, iv.Start)
		to = max(to, iv.End)
	}
	return from, to + 1e-9
}

// hostCPUs is the number of CPUs of the machine the server ran on: the
// host sampler's, the manifest's, or 1.
func hostCPUs(run *timeline.Run) float64 {
	if pts := run.Series(hostmetric.Host, hostmetric.CPUs); len(pts) > 0 && pts[len(pts)-1].V > 0 {
		return pts[len(pts)-1].V
	}
	if run.Manifest.Host.CPUs > 0 {
		return float64(run.Manifest.Host.CPUs)
	}
	return 1
}

// sumPoints adds up a series' values with from <= T < to.
func sumPoints(points []timeline.Point, from, to float64) float64 {
	sum := 0.0
	for _, p := range points {
		if p.T >= from && p.T < to {
			sum += p.V
		}
	}
	return sum
}

// humanNum writes a count or rate for people: 1,234 / 56.7 / 0.012.
func humanNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s := fmt.Sprintf("%.0f", math.Abs(v))
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if v < 0 {
			return "-" + b.String()
		}
		return b.String()
	case a >= 100 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// humanMS writes a duration given in milliseconds: "0.4 ms", "38 ms", "2.3 s".
func humanMS(ms float64) string {
	switch {
	case ms < 0:
		return "?"
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms < 120000:
		return fmt.Sprintf("%.0f s", ms/1000)
	}
	return fmt.Sprintf("%.1f min", ms/60000)
}

// humanPct writes a 0..1 ratio as a percentage: "87 %".
func humanPct(r float64) string {
	p := r * 100
	switch {
	case p >= 10 || p == 0:
		return fmt.Sprintf("%.0f %%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.2g %%", p)
}

// oneLine squeezes a query onto one line and cuts it to n bytes.
func oneLine(q string, n int) string {
	s := strings.Join(strings.Fields(q), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
