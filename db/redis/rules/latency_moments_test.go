package redisrules

import (
	"testing"
	"time"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// The latency monitor's seconds are the server's wall clock; the run's
// clock starts after setup, not at the manifest's Started. No occurrence
// may land after the reading that reported it, nor past the run's end.
func TestLatencyMomentsOnTheRunsClock(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		recording, event string
		near             float64 // when the recording's reading saw it
	}{
		// redis-fork's setup loaded 320 MiB for 15 s before the clock
		// started: its fork was read at 4 s, not at 19 s.
		{"redis-fork", rm.EventFork, 4},
		{"aof-broken", rm.EventAOFWritePendingFsync, -1},
	} {
		run := openRecording(t, c.recording)
		reads := map[float64]bool{}
		for _, s := range run.SourceSamples(rm.Latency) {
			reads[s.T] = true
		}
		moments := latencyMoments(run, c.event)
		if len(moments) == 0 {
			t.Fatalf("%s: no %s moments", c.recording, c.event)
		}
		for _, m := range moments {
			if m.T < 0 || m.T > diagnose.RunEnd(run) {
				t.Errorf("%s: %s at %.1f s, outside the run (0–%.1f s)", c.recording, c.event, m.T, diagnose.RunEnd(run))
			}
		}
		if c.near >= 0 && (moments[0].T < c.near-1.5 || moments[0].T > c.near+0.1) {
			t.Errorf("%s: %s at %.1f s, want within a second and a half before %.0f s", c.recording, c.event, moments[0].T, c.near)
		}
	}

	// A run recorded with the age of each occurrence: the reading at
	// 10 s saw a fork 2.5 s before it, whatever Started says.
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Started: time.Unix(1_000, 0)}}
	run.Samples = append(run.Samples, timeline.Sample{Source: rm.Latency, T: 10,
		Detail: []byte(`[{"event":"fork","unix":1100,"ms":300,"age_s":2.5}]`)})
	if m := latencyMoments(run, rm.EventFork); len(m) != 1 || m[0].T != 7.5 {
		t.Errorf("moments %+v, want one at 7.5 s", m)
	}
}
