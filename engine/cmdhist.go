package engine

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/firedrill/firedrill/timeline"
)

// Per-command latency histograms (pgbench -r, and every scenario run) are
// kept once per script command for the whole run, shared by every client
// and recorded with atomic adds, as pgbench keeps its per-command stats in
// the command itself. A script of 100,000 commands must not cost 100,000
// full HDR histograms per shard and per interval (~570 kB a command, which
// exhausted memory), so a command's histogram is log-linear: 32 buckets per
// power of two, a power of two's buckets (128 bytes) taken from the run's
// arena when a latency first lands in it. A command costs 160 bytes plus
// 128 per power of two its latencies reach: about 1 kB for a query whose
// latencies span 30 µs to 2 ms.
const (
	cmdSubBits = 5
	cmdSub     = 1 << cmdSubBits // buckets per power of two
	// cmdOctaves covers 0 µs to timeline.HistHighest (< 2^32 µs): one
	// linear run of cmdSub values, then one per power of two from
	// 2^cmdSubBits to 2^31.
	cmdOctaves = 32 - cmdSubBits + 1
	// cmdSlab is how many octaves' buckets the arena allocates at once.
	cmdSlab = 512
)

// cmdHistogram is one script command's latency distribution in
// microseconds, for the whole run. Percentiles are exact below 64 µs and
// otherwise the upper bound of a bucket 1/32 of a power of two wide: never
// below the true value and at most 3.2 % above it (HDR's 3 significant
// digits, used for transactions, are 0.1 %). Record may be called from any
// number of goroutines at once and never allocates once a latency's power
// of two has been seen; the read methods must not run concurrently with
// Record.
type cmdHistogram struct {
	arena *cmdArena
	max   atomic.Int64
	// octaves[o] is the arena index of octave o's buckets + 1; 0 = none.
	octaves [cmdOctaves]atomic.Uint32
}

type cmdBuckets [cmdSub]atomic.Uint32

// cmdArena holds the buckets of a run's command histograms, in slabs of
// cmdSlab octaves: a 4-byte index per octave instead of a pointer, and no
// allocation per octave.
type cmdArena struct {
	mu    sync.Mutex
	used  uint32                                // octaves handed out; guarded by mu
	slabs []atomic.Pointer[[cmdSlab]cmdBuckets] // sized for every octave of every command
	// wraps counts, per bucket (octave index × cmdSub + bucket), how many
	// times a 32-bit counter wrapped around (4 billion values in one
	// bucket of one command: hours at full speed); guarded by mu.
	wraps   map[uint64]uint64
	wrapped atomic.Bool
}

// newCmdArena makes an arena for n histograms.
func newCmdArena(n int) *cmdArena {
	return &cmdArena{slabs: make([]atomic.Pointer[[cmdSlab]cmdBuckets], (n*cmdOctaves+cmdSlab-1)/cmdSlab)}
}

// buckets returns the octave buckets at index idx (as stored, 1-based).
func (a *cmdArena) buckets(idx uint32) *cmdBuckets {
	i := idx - 1
	return &a.slabs[i/cmdSlab].Load()[i%cmdSlab]
}

// cmdBucket returns the octave and bucket of a latency in [0, 2^32).
func cmdBucket(us int64) (octave, sub int) {
	if us < cmdSub {
		return 0, int(us)
	}
	e := bits.Len64(uint64(us)) - 1 // us in [2^e, 2^(e+1)), e >= cmdSubBits
	return e - cmdSubBits + 1, int(us>>(e-cmdSubBits)) - cmdSub
}

// cmdBucketHigh is the highest latency that falls in a bucket.
func cmdBucketHigh(octave, sub int) int64 {
	if octave == 0 {
		return int64(sub)
	}
	shift := octave - 1
	return int64(cmdSub+sub+1)<<shift - 1
}

// Record adds one latency in microseconds (clamped to 0 … 1 h).
func (h *cmdHistogram) Record(us int64) {
	if us < 0 {
		us = 0
	} else if us > timeline.HistHighest {
		us = timeline.HistHighest
	}
	o, s := cmdBucket(us)
	idx := h.octaves[o].Load()
	if idx == 0 {
		idx = h.newOctave(o)
	}
	if h.arena.buckets(idx)[s].Add(1) == 0 {
		h.wrappedAround(idx, s)
	}
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			break
		}
	}
}

// newOctave takes an octave's buckets from the arena the first time a
// latency lands in it.
func (h *cmdHistogram) newOctave(o int) uint32 {
	a := h.arena
	a.mu.Lock()
	defer a.mu.Unlock()
	if idx := h.octaves[o].Load(); idx != 0 {
		return idx // another client was first
	}
	i := a.used
	a.used++
	if a.slabs[i/cmdSlab].Load() == nil {
		a.slabs[i/cmdSlab].Store(new([cmdSlab]cmdBuckets))
	}
	h.octaves[o].Store(i + 1)
	return i + 1
}

func (h *cmdHistogram) wrappedAround(idx uint32, s int) {
	a := h.arena
	a.mu.Lock()
	if a.wraps == nil {
		a.wraps = make(map[uint64]uint64)
	}
	a.wraps[uint64(idx)*cmdSub+uint64(s)]++
	a.wrapped.Store(true)
	a.mu.Unlock()
}

// count is the number of values in bucket s of the octave at idx.
func (h *cmdHistogram) count(idx uint32, s int) uint64 {
	a := h.arena
	n := uint64(a.buckets(idx)[s].Load())
	if a.wrapped.Load() {
		a.mu.Lock()
		n += a.wraps[uint64(idx)*cmdSub+uint64(s)] << 32
		a.mu.Unlock()
	}
	return n
}

// Count is the number of recorded values.
func (h *cmdHistogram) Count() int64 {
	var n uint64
	for o := range h.octaves {
		if idx := h.octaves[o].Load(); idx != 0 {
			for s := range cmdSub {
				n += h.count(idx, s)
			}
		}
	}
	return int64(n)
}

// Max is the largest recorded value (µs, exact), 0 if empty.
func (h *cmdHistogram) Max() int64 { return h.max.Load() }

// Percentiles summarises the histogram with the standard quantiles (see
// cmdHistogram for their precision) and the exact maximum.
func (h *cmdHistogram) Percentiles() timeline.Percentiles {
	total := h.Count()
	if total == 0 {
		return timeline.Percentiles{}
	}
	var v, ranks [len(timeline.StandardQuantiles)]int64
	// The rank of quantile q is the smallest count that reaches q % of
	// the values, as HdrHistogram computes it.
	for i, q := range timeline.StandardQuantiles {
		ranks[i] = max(int64(q/100*float64(total)+0.5), 1)
	}
	next, seen := 0, int64(0)
	for o := range h.octaves {
		idx := h.octaves[o].Load()
		if idx == 0 {
			continue
		}
		for s := range cmdSub {
			seen += int64(h.count(idx, s))
			for next < len(ranks) && seen >= ranks[next] {
				v[next] = min(cmdBucketHigh(o, s), h.Max())
				next++
			}
		}
	}
	return timeline.Percentiles{P50: v[0], P90: v[1], P95: v[2], P99: v[3], P999: v[4], Max: h.Max()}
}

// commandCell is one script command's statistics for the whole run.
type commandCell struct {
	sumUS    atomic.Int64
	failures atomic.Int64
	retries  atomic.Int64
	hist     *cmdHistogram // nil without per-command reporting
}

// commandRecorder holds every script command's statistics, shared by all
// clients: its size is a few hundred bytes per command however many
// clients, shards and intervals the run has.
type commandRecorder struct {
	scripts [][]commandCell
}

// newCommandRecorder sizes a recorder for scripts of counts[i] commands.
func newCommandRecorder(counts []int, perCommand bool) *commandRecorder {
	r := &commandRecorder{scripts: make([][]commandCell, len(counts))}
	total := 0
	for _, n := range counts {
		total += n
	}
	var arena *cmdArena
	if perCommand {
		arena = newCmdArena(total)
	}
	for i, n := range counts {
		cells := make([]commandCell, n)
		if perCommand {
			hists := make([]cmdHistogram, n)
			for j := range cells {
				hists[j].arena = arena
				cells[j].hist = &hists[j]
			}
		}
		r.scripts[i] = cells
	}
	return r
}

// latency records one completed command.
func (c *commandCell) latency(us int64) {
	c.sumUS.Add(us)
	c.hist.Record(us)
}

// stats returns the statistics of script si for a Result.
func (r *commandRecorder) stats(si int) []CommandStats {
	cells := r.scripts[si]
	out := make([]CommandStats, len(cells))
	for j := range cells {
		c := &cells[j]
		out[j] = CommandStats{SumUS: c.sumUS.Load(), Failures: c.failures.Load(), Retries: c.retries.Load()}
		if c.hist != nil {
			out[j].Count = c.hist.Count()
			out[j].Latency = c.hist.Percentiles()
		}
	}
	return out
}

// ManyCommands is the number of commands in one script above which
// validate, run and pgbench -r warn before the run: every command keeps
// its own statistics for the whole run (about 1 kB with its latency
// histogram, see cmdHistogram), and reports list every command.
const ManyCommands = 10_000

// commandBytes is about what one command's statistics and parsed form
// take, measured on a 100,000-command script.
const commandBytes = 1024

// ManyCommandsWarning is the warning for a script of n commands, "" when n
// is at most ManyCommands.
func ManyCommandsWarning(n int) string {
	if n <= ManyCommands {
		return ""
	}
	return fmt.Sprintf("%d commands in one script (more than %d): per-command statistics cost memory, about %d MB for this script, and reports list every command",
		n, ManyCommands, max(n*commandBytes>>20, 1))
}
