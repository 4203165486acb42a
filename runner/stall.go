package runner

import (
	"slices"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// noteStall records a stall of the server's answers to the samplers.
// While a tick's queries to the server time out with none answered, each
// read of the server that failed carries the seconds since the stall
// began (timeline.Sample.Stall): the charts draw the gap as the stall it
// is. When the server answers again, one line of the log says how long
// it lasted and which samplers it cut, rather than a warning per sampler.
// failed says, per sample, that it read the server and failed.
func (r *run) noteStall(tr *targetRun, t float64, samples []timeline.Sample, failed []bool, probe serverProbe) {
	if probe.unanswered() {
		if !tr.stalled {
			tr.stalled, tr.stallSince, tr.stallReads, tr.stallSource = true, t, 0, nil
		}
		for i := range samples {
			if !failed[i] {
				continue
			}
			samples[i].Stall = max(t-tr.stallSince, 0) + samples[i].Duration/1000
			tr.stallReads++
			if !slices.Contains(tr.stallSource, samples[i].Source) {
				tr.stallSource = append(tr.stallSource, samples[i].Source)
			}
		}
		return
	}
	if !tr.stalled || !probe.answered {
		return
	}
	tr.stalled = false
	r.logf("%sthe server left firedrill's samplers unanswered for %.1f s from %.1f s (%d reads of %s): recorded as a stall",
		tr.prefix(), t-tr.stallSince, tr.stallSince, tr.stallReads, strings.Join(tr.stallSource, ", "))
}
