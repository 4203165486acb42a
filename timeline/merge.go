package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Merge combines the run directories of a split run's shards
// (firedrill run --shard i/N, every i once) into the new run directory
// out, which then reads as one run: the workloads' intervals of a tick
// are added up (counts, failures and errors by code summed, latency
// histograms merged exactly, percentiles taken from the merged
// histogram), the summary likewise, and shard 0's samples, marks,
// settings and samplers are kept (the other shards record client metrics
// only). It refuses directories of different runs or scenarios, a
// missing or repeated shard, and a shard still running.
func Merge(dirs []string, out string) (*Run, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: give the run directories of every shard")
	}
	shards, err := openShards(dirs)
	if err != nil {
		return nil, err
	}
	lead := shards[0]
	scenarioText, err := sameScenario(shards)
	if err != nil {
		return nil, err
	}
	if err := makeMergeDir(out); err != nil {
		return nil, err
	}

	man := lead.Manifest
	man.Process = nil // no process writes the merge; it is never "running"
	man.Shard = &ShardInfo{Index: 0, Count: lead.Manifest.Shard.Count, StartAt: lead.Manifest.Shard.StartAt, Run: lead.Manifest.Shard.Run,
		Began: lead.Manifest.Shard.StartAt}
	man.Workloads = append([]WorkloadInfo(nil), lead.Manifest.Workloads...)
	for i := range man.Workloads {
		man.Workloads[i].Clients, man.Workloads[i].Rate, man.Workloads[i].Pool = 0, 0, 0
	}
	var errs []string
	for _, s := range shards {
		abs, err := filepath.Abs(s.Dir)
		if err != nil {
			abs = s.Dir
		}
		man.Shard.Merged = append(man.Shard.Merged, abs)
		if s.Manifest.Ended.After(man.Ended) {
			man.Ended = s.Manifest.Ended
		}
		if statusRank(s.Manifest.Status) > statusRank(man.Status) {
			man.Status = s.Manifest.Status
		}
		if s.Manifest.Error != "" {
			errs = append(errs, fmt.Sprintf("shard %d: %s", s.Manifest.Shard.Index, s.Manifest.Error))
		}
		for _, w := range s.Manifest.Workloads {
			for i := range man.Workloads {
				if man.Workloads[i].Name == w.Name {
					man.Workloads[i].Clients += w.Clients
					man.Workloads[i].Rate += w.Rate
					man.Workloads[i].Pool += w.Pool
				}
			}
		}
	}
	man.Error = strings.Join(errs, "; ")

	// Every shard's timeline on --start-at's clock: a shard that began
	// late has its times moved by how late.
	for _, s := range shards {
		shiftTimeline(s)
	}
	merged := &Run{Dir: out, Manifest: man, Samples: lead.Samples, Marks: lead.Marks}
	merged.Intervals = mergeIntervals(shards, man.Interval)
	merged.Summary = mergeSummaries(shards)

	if scenarioText != nil {
		if err := WriteFile(out, ScenarioFile, scenarioText); err != nil {
			return nil, err
		}
	}
	if err := copyScripts(lead.Dir, out); err != nil {
		return nil, err
	}
	w, err := Create(out)
	if err != nil {
		return nil, err
	}
	for i := range merged.Intervals {
		w.Add(Record{Interval: &merged.Intervals[i]})
	}
	for i := range merged.Samples {
		w.Add(Record{Sample: &merged.Samples[i]})
	}
	for i := range merged.Marks {
		w.Add(Record{Mark: &merged.Marks[i]})
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if merged.Summary != nil {
		if err := WriteSummary(out, merged.Summary); err != nil {
			return nil, err
		}
	}
	if err := WriteJSON(out, ManifestFile, &merged.Manifest); err != nil {
		return nil, err
	}
	return Open(out)
}

// shiftTimeline moves a shard's times (seconds since its load began) by
// how long after --start-at it began, so that they count from --start-at.
func shiftTimeline(r *Run) {
	sh := r.Manifest.Shard
	if sh.Began.IsZero() || sh.StartAt.IsZero() {
		return
	}
	late := sh.Began.Sub(sh.StartAt).Seconds()
	if late <= 0 {
		return
	}
	for i := range r.Intervals {
		r.Intervals[i].Start += late
		r.Intervals[i].End += late
	}
	for i := range r.Samples {
		r.Samples[i].T += late
	}
	for i := range r.Marks {
		r.Marks[i].T += late
	}
}

// openShards reads the shards' directories and checks that they are the
// shards of one split run, each once: returned in shard order.
func openShards(dirs []string) ([]*Run, error) {
	var shards []*Run
	for _, dir := range dirs {
		r, err := Open(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		sh := r.Manifest.Shard
		if sh == nil || sh.Count < 1 || sh.Run == "" {
			return nil, fmt.Errorf("merge: %s is not a shard of a split run (its %s has no \"shard\" with a run): merge takes the run directories of 'firedrill run --shard i/N --start-at T'", dir, ManifestFile)
		}
		if len(sh.Merged) > 0 {
			return nil, fmt.Errorf("merge: %s is already a merge of %d shards; give the shards' own directories", dir, len(sh.Merged))
		}
		if r.Manifest.Status == StatusRunning {
			return nil, fmt.Errorf("merge: %s (shard %d/%d) is still running; wait until it ends", dir, sh.Index, sh.Count)
		}
		shards = append(shards, r)
	}
	first := shards[0].Manifest.Shard
	byIndex := make([]*Run, first.Count)
	for _, r := range shards {
		sh := r.Manifest.Shard
		if sh.Run != first.Run || sh.Count != first.Count {
			return nil, fmt.Errorf("merge: %s is shard %d/%d of run %q, but %s is shard %d/%d of run %q: merge the shards of one run (same scenario, --start-at and N)",
				r.Dir, sh.Index, sh.Count, sh.Run, shards[0].Dir, first.Index, first.Count, first.Run)
		}
		if prev := byIndex[sh.Index]; prev != nil {
			return nil, fmt.Errorf("merge: %s and %s are both shard %d/%d", prev.Dir, r.Dir, sh.Index, sh.Count)
		}
		byIndex[sh.Index] = r
	}
	var missing []string
	for i, r := range byIndex {
		if r == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: shard %s of run %q missing: give the run directory of every shard (%d in all)",
			strings.Join(missing, ", "), first.Run, first.Count)
	}
	return byIndex, nil
}

// sameScenario checks the shards ran the same scenario, byte for byte,
// and returns its text (nil when the runs kept none).
func sameScenario(shards []*Run) ([]byte, error) {
	read := func(r *Run) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(r.Dir, ScenarioFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	want, err := read(shards[0])
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	for _, r := range shards[1:] {
		got, err := read(r)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if r.Manifest.Name != shards[0].Manifest.Name || !bytes.Equal(got, want) {
			return nil, fmt.Errorf("merge: %s and %s ran different scenarios (their %s differ): every shard must run the same file",
				shards[0].Dir, r.Dir, ScenarioFile)
		}
	}
	return want, nil
}

// makeMergeDir creates out, which must not exist or be empty.
func makeMergeDir(out string) error {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("merge: %s exists and is not empty; choose another --out or remove it", out)
	}
	if err := os.MkdirAll(filepath.Join(out, ScriptsDir), DirMode); err != nil {
		return fmt.Errorf("merge: create %s: %w", out, err)
	}
	return os.Chmod(out, DirMode)
}

// copyScripts copies the scripts as run (shard 0's; every shard ran the
// same scenario).
func copyScripts(from, to string) error {
	entries, err := os.ReadDir(filepath.Join(from, ScriptsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, ScriptsDir, e.Name()))
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		if err := WriteFile(filepath.Join(to, ScriptsDir), e.Name(), b); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	return nil
}

// statusRank orders statuses by how badly a run ended: the merge of
// shards ends as its worst shard.
func statusRank(status string) int {
	switch status {
	case StatusCompleted:
		return 0
	case StatusDegraded:
		return 1
	case StatusInterrupted:
		return 2
	case StatusFailed:
		return 3
	case StatusKilled:
		return 4
	}
	return 5
}

// mergeIntervals adds up the shards' intervals of each workload and tick.
// The shards' clocks started at the same --start-at, so an interval's end
// names its tick (rounded to the sample interval) in every shard. A
// decoded histogram is large (see Histogram): each tick's are merged,
// encoded and let go before the next, so that an hour of ticks of N
// shards does not hold them all at once.
func mergeIntervals(shards []*Run, tick float64) []Interval {
	type key struct {
		workload string
		tick     int64
	}
	tickOf := func(t float64) int64 {
		if tick <= 0 {
			return int64(math.Round(t * 1000))
		}
		return int64(math.Round(t / tick))
	}
	groups := map[key][]*Interval{}
	var order []key
	for _, s := range shards {
		for i := range s.Intervals {
			iv := &s.Intervals[i]
			k := key{iv.Workload, tickOf(iv.End)}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], iv)
		}
	}
	out := make([]Interval, 0, len(order))
	acc := NewHistogram() // reused: a new one allocates its whole range
	for _, k := range order {
		group := groups[k]
		m := *group[0]
		m.Errors, m.Refused, m.Unavailable, m.Lost = addCounts(nil, m.Errors), addCounts(nil, m.Refused), addCounts(nil, m.Unavailable), addCounts(nil, m.Lost)
		for _, iv := range group[1:] {
			addInterval(&m, iv)
		}
		m.Latency, m.LatencyPct = mergedHist(acc, group, func(iv *Interval) *Histogram { return iv.Latency })
		m.PoolWait, m.PoolWaitPct = mergedHist(acc, group, func(iv *Interval) *Histogram { return iv.PoolWait })
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].End < out[j].End })
	return out
}

// mergedHist merges the histograms of a tick's intervals in acc (emptied
// first) and returns the result encoded, with its percentiles; nil when
// none has one.
func mergedHist(acc *Histogram, group []*Interval, of func(*Interval) *Histogram) (*Histogram, Percentiles) {
	acc.Reset()
	found := false
	for _, iv := range group {
		if h := of(iv); h != nil {
			acc.h.Merge(h.decoded())
			found = true
		}
	}
	if !found {
		return nil, Percentiles{}
	}
	b, err := acc.h.Encode(hdrEncoding)
	if err != nil { // cannot happen for a histogram in memory; keep a copy then
		return acc.Clone(), acc.Percentiles()
	}
	return &Histogram{enc: b}, acc.Percentiles() // decoded again only if a reader needs more than the percentiles
}

// addInterval adds iv, of another shard, into m (all but the histograms).
func addInterval(m, iv *Interval) {
	m.Start, m.End = min(m.Start, iv.Start), max(m.End, iv.End)
	m.Clients += iv.Clients
	m.Rate += iv.Rate
	if w := float64(m.Count + m.Failed + iv.Count + iv.Failed); w > 0 {
		m.LagMeanUS = (m.LagMeanUS*float64(m.Count+m.Failed) + iv.LagMeanUS*float64(iv.Count+iv.Failed)) / w
	}
	m.LagMaxUS = max(m.LagMaxUS, iv.LagMaxUS)
	m.OldestUS = max(m.OldestUS, iv.OldestUS)
	m.Count += iv.Count
	m.Failed += iv.Failed
	m.Skipped += iv.Skipped
	m.Late += iv.Late
	m.Retried += iv.Retried
	m.Retries += iv.Retries
	m.Errors = addCounts(m.Errors, iv.Errors)
	m.Refused = addCounts(m.Refused, iv.Refused)
	m.Unavailable = addCounts(m.Unavailable, iv.Unavailable)
	m.Lost = addCounts(m.Lost, iv.Lost)
	m.Unconnected += iv.Unconnected
	m.Fallbacks += iv.Fallbacks
	m.FallbackFailed += iv.FallbackFailed
}

// addCounts adds b's counts into a (made when needed); nil stays nil, as
// absent maps mean "not recorded" to readers (Interval.ConnectionFailures).
func addCounts(a, b map[string]int64) map[string]int64 {
	if b == nil {
		return a
	}
	if a == nil {
		a = make(map[string]int64, len(b))
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

func cloneHist(h *Histogram) *Histogram {
	if h == nil {
		return nil
	}
	return h.Clone()
}

// mergeHist adds b into a (a clone of b when a is nil).
func mergeHist(a, b *Histogram) *Histogram {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b.Clone()
	}
	a.Merge(b)
	return a
}

// mergeSummaries adds up the shards' summaries; nil when a shard has none
// (it never finished), as for a run that never finished.
func mergeSummaries(shards []*Run) *Summary {
	sum := &Summary{}
	index := map[string]int{}
	for _, s := range shards {
		if s.Summary == nil {
			return nil
		}
		sum.Duration = max(sum.Duration, s.Summary.Duration)
		for _, ws := range s.Summary.Workloads {
			i, ok := index[ws.Name]
			if !ok {
				index[ws.Name] = len(sum.Workloads)
				sum.Workloads = append(sum.Workloads, cloneWorkloadSummary(ws))
				continue
			}
			addWorkloadSummary(&sum.Workloads[i], ws)
		}
	}
	// Workloads in the order the lead shard planned them.
	order := map[string]int{}
	for i, w := range shards[0].Manifest.Workloads {
		order[w.Name] = i
	}
	sort.SliceStable(sum.Workloads, func(i, j int) bool { return order[sum.Workloads[i].Name] < order[sum.Workloads[j].Name] })
	for i := range sum.Workloads {
		ws := &sum.Workloads[i]
		if ws.Duration > 0 {
			ws.TPS = float64(ws.Count) / ws.Duration
		}
		if ws.Latency != nil {
			ws.LatencyPct = ws.Latency.Percentiles()
		}
		if ws.PoolWait != nil {
			ws.PoolPct = ws.PoolWait.Percentiles()
		}
		for j := range ws.Scripts {
			if ws.Scripts[j].Latency != nil {
				ws.Scripts[j].LatencyPct = ws.Scripts[j].Latency.Percentiles()
			}
		}
		sort.SliceStable(ws.Errors, func(a, b int) bool { return ws.Errors[a].Count > ws.Errors[b].Count })
	}
	return sum
}

// cloneWorkloadSummary copies ws deeply enough for adding into.
func cloneWorkloadSummary(ws WorkloadSummary) WorkloadSummary {
	c := ws
	c.Latency, c.PoolWait = cloneHist(ws.Latency), cloneHist(ws.PoolWait)
	c.Scripts = make([]ScriptSummary, len(ws.Scripts))
	for i, s := range ws.Scripts {
		c.Scripts[i] = s
		c.Scripts[i].Latency = cloneHist(s.Latency)
		c.Scripts[i].Commands = append([]CommandSummary(nil), s.Commands...)
	}
	c.Errors = append([]ErrorSummary(nil), ws.Errors...)
	c.Extra = addCounts(nil, ws.Extra)
	return c
}

// addWorkloadSummary adds ws, of another shard, into m.
func addWorkloadSummary(m *WorkloadSummary, ws WorkloadSummary) {
	m.Duration = max(m.Duration, ws.Duration)
	m.Count += ws.Count
	m.Failed += ws.Failed
	m.Skipped += ws.Skipped
	m.Late += ws.Late
	m.Retried += ws.Retried
	m.Retries += ws.Retries
	m.Latency = mergeHist(m.Latency, ws.Latency)
	m.PoolWait = mergeHist(m.PoolWait, ws.PoolWait)
	m.Aborted += ws.Aborted
	m.Extra = addCounts(m.Extra, ws.Extra)
	m.Backoff += ws.Backoff
	m.RefusedClients += ws.RefusedClients
	m.ReconnectWait += ws.ReconnectWait
	for _, s := range ws.Scripts {
		found := false
		for i := range m.Scripts {
			if m.Scripts[i].Name == s.Name {
				addScriptSummary(&m.Scripts[i], s)
				found = true
				break
			}
		}
		if !found {
			c := s
			c.Latency = cloneHist(s.Latency)
			c.Commands = append([]CommandSummary(nil), s.Commands...)
			m.Scripts = append(m.Scripts, c)
		}
	}
	for _, e := range ws.Errors {
		found := false
		for i := range m.Errors {
			me := &m.Errors[i]
			if me.Code != e.Code {
				continue
			}
			found = true
			if e.First < me.First { // the first message and place are the earliest shard's
				me.Message, me.Detail, me.Script, me.Line, me.First = e.Message, e.Detail, e.Script, e.Line, e.First
			}
			me.Last = max(me.Last, e.Last)
			me.Count += e.Count
			break
		}
		if !found {
			m.Errors = append(m.Errors, e)
		}
	}
}

// addScriptSummary adds s into m. The summary keeps no histogram per
// command, so a command's merged percentiles are the shards' weighted by
// their counts (its max exact): close, not exact, unlike the script's
// and the workload's.
func addScriptSummary(m *ScriptSummary, s ScriptSummary) {
	m.Count += s.Count
	m.Failed += s.Failed
	m.Latency = mergeHist(m.Latency, s.Latency)
	for i := range m.Commands {
		if i >= len(s.Commands) {
			break
		}
		mc, c := &m.Commands[i], s.Commands[i]
		if n := mc.Count + c.Count; n > 0 {
			wm, wc := float64(mc.Count)/float64(n), float64(c.Count)/float64(n)
			mc.MeanUS = mc.MeanUS*wm + c.MeanUS*wc
			weighted := func(a, b int64) int64 { return int64(math.Round(float64(a)*wm + float64(b)*wc)) }
			p, q := mc.LatencyPct, c.LatencyPct
			mc.LatencyPct = Percentiles{P50: weighted(p.P50, q.P50), P90: weighted(p.P90, q.P90), P95: weighted(p.P95, q.P95),
				P99: weighted(p.P99, q.P99), P999: weighted(p.P999, q.P999), Max: max(p.Max, q.Max)}
		}
		mc.Count += c.Count
		mc.Failures += c.Failures
		mc.Retries += c.Retries
	}
}

// decoded is the histogram's counts without keeping them decoded in h
// (for a reader that merges many histograms once each, as merge does).
func (h *Histogram) decoded() *hdr.Histogram {
	if h.h != nil {
		return h.h
	}
	if d, err := hdr.Decode(h.enc); err == nil {
		return d
	}
	return hdr.New(HistLowest, HistHighest, HistDigits)
}

// hdrEncoding is the encoding of histograms in run directories (as
// Histogram.MarshalJSON writes them).
const hdrEncoding = hdr.V2CompressedEncodingCookieBase
