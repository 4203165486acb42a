package runner

import "testing"

// TestIntervalsAddUpToTheSummary: a workload's intervals on the timeline
// count every transaction its summary does, those that end after the
// last tick (in flight at the end) included, and the last interval is
// not a sliver: it runs from the last tick the engine reported to the
// workload's end. One workload runs the whole run, one stops between two
// ticks.
func TestIntervalsAddUpToTheSummary(t *testing.T) {
	t.Parallel()
	sc := loadScenarioText(t, `name: tail
duration: 3s
sample_interval: 500ms
workloads:
  - name: whole
    clients: 2
    scripts:
      - inline: |
          SELECT pg_sleep(0.02);
  - name: part
    clients: 2
    start: 1s
    stop: 2300ms
    scripts:
      - inline: |
          SELECT pg_sleep(0.02);
`)
	run := runLoaded(t, sc)
	ends := map[string]float64{"whole": 3, "part": 2.3}
	for _, ws := range run.Summary.Workloads {
		ivs := run.WorkloadIntervals(ws.Name)
		if len(ivs) == 0 {
			t.Fatalf("%s: no intervals", ws.Name)
		}
		var n, failed int64
		for _, iv := range ivs {
			n += iv.Count
			failed += iv.Failed
		}
		if n != ws.Count || failed != ws.Failed || n == 0 {
			t.Errorf("%s: intervals count %d transactions (%d failed), the summary %d (%d failed)", ws.Name, n, failed, ws.Count, ws.Failed)
		}
		last := ivs[len(ivs)-1]
		if last.End < ends[ws.Name] {
			t.Errorf("%s: last interval ends at %.3f s, before the workload's end at %.1f s", ws.Name, last.End, ends[ws.Name])
		}
		if span := last.End - last.Start; span < 0.2 {
			t.Errorf("%s: last interval [%.3f, %.3f] is a sliver; it should run from the last tick reported", ws.Name, last.Start, last.End)
		}
	}
}
