package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/service/svcpresent"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// CompareFormat versions the JSON document of a Comparison.
const CompareFormat = "firedrill.compare/v1"

// CompareOptions says how Compare judges two runs. A zero Alpha,
// Confidence, MinBlock or MinBlocks means its default
// (DefaultCompareOptions); zero Warmup and WarmupFraction leave out only
// the first interval.
//
// Why blocks: a run's per-interval values are not independent draws — a
// checkpoint, autovacuum or a busy neighbour on the host lasts several
// seconds, so neighbouring intervals resemble each other (they are
// autocorrelated). The Mann–Whitney U test assumes independent values; fed
// 50 correlated one-second values it believes it has far more evidence
// than it has, and calls two runs of the same code different. Compare
// therefore aggregates consecutive intervals into blocks (the batch-means
// method of simulation output analysis): throughput is the block's
// transactions over its time, latency percentiles come from the block's
// merged histograms, and the test runs over block values. The block length
// is chosen from the lag-1 autocorrelation ρ of the per-interval values
// (pooled over both runs, the most autocorrelated metric): an AR(1)
// series of n values carries about n·(1−ρ)/(1+ρ) independent ones, so a
// block spans (1+ρ)/(1−ρ) intervals, half as long again (blockLengthFactor)
// and at least MinBlock seconds.
//
// Why drift: two runs of the same code also differ because the machine
// around them does (other processes, the page cache, a checkpoint that
// falls in one run only), and no test over one pair of runs can tell that
// from a change in the code. What the runs can show is how much each one
// differs from itself: the second half of its blocks against the first. A
// significant difference no larger than that drift, or whose interval
// reaches no change (or below MinChange), is reported as "within noise",
// not as "B is … % faster".
type CompareOptions struct {
	// Alpha is the significance level of the U test (default 0.05).
	Alpha float64 `json:"alpha"`
	// Confidence is the level of the medians' confidence intervals
	// (default 0.95).
	Confidence float64 `json:"confidence"`
	// Warmup is how much of each workload's start is left out, in seconds:
	// the larger of Warmup and WarmupFraction of the workload's measured
	// time, and always at least the first interval (connections opening,
	// caches and plans warming). DefaultCompareOptions: WarmupFraction
	// 0.10 (5 s of a 50 s run), Warmup 0.
	Warmup         float64 `json:"warmup_s"`
	WarmupFraction float64 `json:"warmup_fraction"`
	// Block is the block length in seconds; 0 chooses it from the data
	// (see above), at least MinBlock (default 3 s) and short enough to
	// leave MinBlocks blocks per run where the run is long enough.
	Block     float64 `json:"block_s"`
	MinBlock  float64 `json:"min_block_s"`
	MinBlocks int     `json:"min_blocks"` // default 8
	// MinChange is the smallest relative change credited as a difference
	// (0.1 is 10 %); a significant change below it is "within noise".
	// Default 0. On a shared machine, set it from runs of the same code
	// compared with each other: what they disagree by is noise.
	MinChange float64 `json:"min_change"`
	// Kinds say what compare weighs for each kind of target beyond the
	// percentiles (present.Kind.Compare: the worst latency and the
	// server's counters) and what the compare page overlays as its load;
	// the zero value knows no kind.
	Kinds present.Kinds `json:"-"`
}

// DefaultCompareOptions are the options Compare uses.
var DefaultCompareOptions = CompareOptions{
	Alpha: 0.05, Confidence: 0.95, WarmupFraction: 0.10, MinBlock: 3, MinBlocks: 8,
}

// withDefaults fills the zero fields of o from DefaultCompareOptions.
func (o CompareOptions) withDefaults() CompareOptions {
	d := DefaultCompareOptions
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = d.Alpha
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = d.Confidence
	}
	if o.MinBlock <= 0 {
		o.MinBlock = d.MinBlock
	}
	if o.MinBlocks <= 0 {
		o.MinBlocks = d.MinBlocks
	}
	return o
}

// Comparison is what Compare found between run A (the baseline) and run B.
type Comparison struct {
	Format  string         `json:"format"` // CompareFormat
	A       RunRef         `json:"a"`
	B       RunRef         `json:"b"`
	Options CompareOptions `json:"options"`
	// Workloads are the workloads both runs have, in A's order.
	Workloads []WorkloadComparison `json:"workloads"`
	// OnlyInA and OnlyInB name workloads that ran in one run only.
	OnlyInA []string `json:"only_in_a,omitempty"`
	OnlyInB []string `json:"only_in_b,omitempty"`
	// Findings are the rules that reported in either run, by rule id.
	Findings []FindingChange `json:"findings"`
	// Settings are the server settings whose values differ.
	Settings []SettingChange `json:"settings"`
	// Notes are differences of the setup a reader must know to trust the
	// verdicts (server version, host, run status).
	Notes []string `json:"notes,omitempty"`
	// Counters are the server's key series over each whole run, for the
	// kinds that declare them (present.Kind.Compare: Redis's fsync stalls,
	// latency events …); absent for PostgreSQL.
	Counters []CounterChange `json:"counters,omitempty"`
}

// RunRef identifies one compared run.
type RunRef struct {
	// Name is how tables, headings and legends call the run: its
	// directory's name, or its scenario's when both directories are
	// named alike ("A"/"B" when those are alike too).
	Name     string `json:"name"`
	Dir      string `json:"dir"`
	Scenario string `json:"scenario"`
	Started  string `json:"started"` // RFC 3339
	Status   string `json:"status"`
}

// WorkloadComparison compares one workload of both runs.
type WorkloadComparison struct {
	Name string `json:"name"`
	// WarmupA and WarmupB are the seconds left out at the workload's start.
	WarmupA float64 `json:"warmup_a_s"`
	WarmupB float64 `json:"warmup_b_s"`
	// Block is the mean length of the blocks the test ran over (seconds;
	// each block is k or k+1 consecutive intervals), with the number of
	// blocks of each run and the lag-1 autocorrelation of the per-interval
	// values that chose k.
	Block           float64            `json:"block_s"`
	BlocksA         int                `json:"blocks_a"`
	BlocksB         int                `json:"blocks_b"`
	Autocorrelation float64            `json:"autocorrelation"`
	Metrics         []MetricComparison `json:"metrics"`
	// Stalls is the worst latency of each run, for the kinds whose
	// comparison weighs it (present.Kind.Compare); absent for PostgreSQL.
	Stalls *StallComparison `json:"stalls,omitempty"`
	// Changes lists what differs in the workload's definition (scripts,
	// clients, rate, session settings): the reason B differs, if any.
	Changes []string `json:"changes,omitempty"`
	// Scripts are the workload's scripts whose commands differ, one per
	// script file.
	Scripts []ScriptDiff `json:"scripts,omitempty"`
	Notes   []string     `json:"notes,omitempty"`
}

// MetricComparison is one metric of a workload in both runs.
type MetricComparison struct {
	Metric string `json:"metric"` // "tps", "p50", "p95", "p99"
	Unit   string `json:"unit"`   // "tx/s", "ms"
	// HigherIsBetter is true for throughput, false for latency.
	HigherIsBetter bool `json:"higher_is_better"`
	// A and B are the medians of the block values with their confidence
	// intervals.
	A Estimate `json:"a"`
	B Estimate `json:"b"`
	// P is the U test's p-value. Significant is P < Alpha with a change
	// larger than Drift and an interval [ChangeLo, ChangeHi] without 0;
	// WithinNoise is P < Alpha otherwise.
	P           float64 `json:"p"`
	Significant bool    `json:"significant"`
	WithinNoise bool    `json:"within_noise"`
	// Drift is how much each run differed from itself: the larger, over A
	// and B, of |median of the second half's blocks / median of the first
	// half's − 1|. It is an A/A comparison inside each run — the same code
	// on the same server minutes apart — and a difference between the runs
	// no larger than it is not credited to what changed between them.
	Drift float64 `json:"drift"`
	// Change is B's median relative to A's (B/A − 1: +0.2 is 20 % more);
	// ChangeLo and ChangeHi bound it, from both medians' confidence
	// intervals, and ChangePM is the larger distance from Change to a
	// bound (the "±" of the verdict).
	Change   float64 `json:"change"`
	ChangeLo float64 `json:"change_lo"`
	ChangeHi float64 `json:"change_hi"`
	ChangePM float64 `json:"change_pm"`
	// Verdict is the plain sentence: "no significant difference, p = 0.41"
	// or "B is 31 % ± 4 % faster, p = 0.002".
	Verdict string `json:"verdict"`
	// Outcome is the verdict in a word or two, for a table (Outcome*).
	Outcome string `json:"outcome"`
	// CVA and CVB are the coefficients of variation (standard deviation
	// ÷ mean) of each run's block values; Unstable is set when one
	// exceeds UnstableCV: the blocks disagree so much that a median's
	// interval, and so the size of a change, means nothing (a p99 swung by
	// a few second-long deadlock waits). The test still gives a direction.
	CVA      float64  `json:"cv_a"`
	CVB      float64  `json:"cv_b"`
	Unstable bool     `json:"unstable,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Estimate is a median and its confidence interval; an interval too wide
// to bound (too few values) has infinite ends, written null in JSON.
type Estimate struct {
	Center, Lo, Hi float64
}

// MarshalJSON writes the estimate with null for an unbounded end.
func (e Estimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Center float64  `json:"median"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
	}{e.Center, finiteOrNil(e.Lo), finiteOrNil(e.Hi)})
}

// MarshalJSON writes the comparison with null for an unbounded or
// undefined change.
func (m MetricComparison) MarshalJSON() ([]byte, error) {
	type plain MetricComparison
	return json.Marshal(struct {
		plain
		Change   *float64 `json:"change"`
		ChangeLo *float64 `json:"change_lo"`
		ChangeHi *float64 `json:"change_hi"`
		ChangePM *float64 `json:"change_pm"`
	}{plain(m), finiteOrNil(m.Change), finiteOrNil(m.ChangeLo), finiteOrNil(m.ChangeHi), finiteOrNil(m.ChangePM)})
}

func finiteOrNil(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// FindingChange is one rule's findings in both runs.
type FindingChange struct {
	Rule string `json:"rule"`
	// Change is "appeared" (in B only), "vanished" (in A only) or
	// "persists".
	Change string `json:"change"`
	// The most severe finding's severity in each run ("" where none) and
	// how many findings the rule made.
	SeverityA string `json:"severity_a,omitempty"`
	SeverityB string `json:"severity_b,omitempty"`
	CountA    int    `json:"count_a"`
	CountB    int    `json:"count_b"`
	Headline  string `json:"headline"` // of the most severe finding, B's first
}

// The changes of a finding.
const (
	FindingAppeared = "appeared"
	FindingVanished = "vanished"
	FindingPersists = "persists"
)

// SettingChange is one server setting that differs; a side without it is
// "" (not reported by that server).
type SettingChange struct {
	Name string `json:"name"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// Compare compares run B against run A (the baseline) with the default
// options: per workload, throughput and latency with a verdict each, the
// findings that appear or vanish, and the settings that differ.
func Compare(a, b *timeline.Run, fa, fb []diagnose.Finding) *Comparison {
	return CompareWith(a, b, fa, fb, DefaultCompareOptions)
}

// CompareWith is Compare with options.
func CompareWith(a, b *timeline.Run, fa, fb []diagnose.Finding, opts CompareOptions) *Comparison {
	opts = opts.withDefaults()
	c := &Comparison{
		Format: CompareFormat, A: runRef(a), B: runRef(b), Options: opts,
		Workloads: []WorkloadComparison{}, Findings: compareFindings(fa, fb), Settings: compareSettings(a, b, opts.Kinds),
	}
	kc, hasKind := kindOf(a, b, opts.Kinds)
	if hasKind {
		c.Counters = compareCounters(a, b, kc.Counters)
	}
	// In runs of several targets (CompareTargets: the same in both) each
	// target is compared on its views: its kind's counters and stall
	// threshold, its settings, its findings.
	names := a.Manifest.TargetNames()
	if len(names) > 0 {
		c.Counters, c.Settings, c.Findings = nil, []SettingChange{}, nil
		var fa2, fb2 []diagnose.Finding
		for _, name := range names {
			va, vb := a.ForTarget(name), b.ForTarget(name)
			if tc, ok := kindOf(va, vb, opts.Kinds); ok {
				for _, cc := range compareCounters(va, vb, tc.Counters) {
					cc.Target, cc.Label = name, name+": "+cc.Label
					c.Counters = append(c.Counters, cc)
				}
			}
			for _, sc := range compareSettings(va, vb, opts.Kinds) {
				sc.Name = name + ": " + sc.Name
				c.Settings = append(c.Settings, sc)
			}
		}
		// A rule's findings are paired within their target: "<target>/<rule>".
		for _, f := range fa {
			fa2 = append(fa2, targetRule(f))
		}
		for _, f := range fb {
			fb2 = append(fb2, targetRule(f))
		}
		c.Findings = compareFindings(fa2, fb2)
	}
	c.Counters = append(c.Counters, compareCounters(a, b, serviceCounters(a, b))...)
	inB := map[string]timeline.WorkloadInfo{}
	for _, w := range b.Manifest.Workloads {
		inB[w.Name] = w
	}
	inA := map[string]bool{}
	for _, wa := range a.Manifest.Workloads {
		inA[wa.Name] = true
		wb, ok := inB[wa.Name]
		if !ok {
			c.OnlyInA = append(c.OnlyInA, wa.Name)
			continue
		}
		va, vb, wkc, wHasKind := a, b, kc, hasKind
		if wa.Target != "" {
			va, vb = a.ForTarget(wa.Target), b.ForTarget(wa.Target)
			wkc, wHasKind = kindOf(va, vb, opts.Kinds)
		}
		wc := compareWorkload(va, vb, wa.Name, opts, wkc, wHasKind)
		wc.Changes = workloadChanges(wa, wb)
		wc.Scripts = diffScripts(wa.Scripts, wb.Scripts)
		c.Workloads = append(c.Workloads, wc)
	}
	for _, w := range b.Manifest.Workloads {
		if !inA[w.Name] {
			c.OnlyInB = append(c.OnlyInB, w.Name)
		}
	}
	c.Notes = compareNotes(a, b)
	c.A.Name, c.B.Name = runNames(a, b)
	return c
}

// targetRule names a finding of a run of several targets' rule after its
// target, so that compare pairs findings within one target.
func targetRule(f diagnose.Finding) diagnose.Finding {
	if f.Target != "" {
		f.Rule = f.Target + "/" + f.Rule
	}
	return f
}

// CompareTargets refuses to compare runs whose systems differ: compare
// weighs target against target, so both runs must have the same targets
// (names, in any order) of the same kinds; two runs of one system each
// always compare.
func CompareTargets(a, b *timeline.Run) error {
	describe := func(r *timeline.Run) string {
		var parts []string
		for _, nt := range r.Manifest.Targets {
			parts = append(parts, nt.Name+" ("+nt.Target.Kind+")")
		}
		if len(parts) == 0 {
			return "one system (" + cmp.Or(r.Manifest.Target.Kind, "of the default kind") + ")"
		}
		return "targets " + strings.Join(parts, ", ")
	}
	an, bn := a.Manifest.Targets, b.Manifest.Targets
	if len(an) == 0 && len(bn) == 0 {
		return nil
	}
	same := len(an) == len(bn)
	for _, nt := range an {
		other, ok := b.Manifest.NamedTarget(nt.Name)
		same = same && ok && other.Target.Kind == nt.Target.Kind
	}
	if same {
		return nil
	}
	return fmt.Errorf("cannot compare %s with %s: run A has %s, run B has %s; compare weighs each target against the target of the same name and kind, so compare runs of the same scenario's targets",
		a.Dir, b.Dir, describe(a), describe(b))
}

// kindOf is what Compare weighs beyond the percentiles for the runs'
// kind; none when the runs are of different kinds or their kind declares
// nothing more.
func kindOf(a, b *timeline.Run, kinds present.Kinds) (present.Compare, bool) {
	if a.Manifest.Target.Kind != b.Manifest.Target.Kind {
		return present.Compare{}, false
	}
	p, ok := kinds.Of(a.Manifest.Target)
	if !ok || p.Compare == nil {
		return present.Compare{}, false
	}
	return *p.Compare, true
}

func runRef(r *timeline.Run) RunRef {
	ref := RunRef{Dir: r.Dir, Scenario: r.Manifest.Name, Status: r.Manifest.Status}
	if !r.Manifest.Started.IsZero() {
		ref.Started = r.Manifest.Started.Format(time.RFC3339)
	}
	return ref
}

// compareMetric is one metric Compare tests: how to read it off a block.
type compareMetric struct {
	name           string
	unit           string
	higherIsBetter bool
	quantile       float64 // 0 for throughput
	// stallMS, when set, makes the metric the count of a block's
	// intervals whose slowest transaction took longer (stallsMetric).
	stallMS float64
}

// compareMetrics are the metrics compared per workload.
var compareMetrics = []compareMetric{
	{name: "tps", unit: "tx/s", higherIsBetter: true},
	{name: "p50", unit: "ms", quantile: 50},
	{name: "p95", unit: "ms", quantile: 95},
	{name: "p99", unit: "ms", quantile: 99},
}

// compareBlock is consecutive intervals of one workload taken together.
type compareBlock struct {
	count int64
	span  float64
	lat   *timeline.Histogram
	maxMS []float64 // each interval's slowest transaction; NaN where none finished
}

func (b *compareBlock) value(m compareMetric) (float64, bool) {
	if m.stallMS > 0 {
		n := 0
		for _, v := range b.maxMS {
			if v > m.stallMS {
				n++
			}
		}
		return float64(n), len(b.maxMS) > 0
	}
	if m.quantile == 0 {
		if b.span <= 0 {
			return 0, false
		}
		return float64(b.count) / b.span, true
	}
	if b.lat == nil || b.lat.Count() == 0 {
		return 0, false
	}
	if m.quantile == 100 {
		return float64(b.lat.Max()) / 1000, true
	}
	return float64(b.lat.Quantile(m.quantile)) / 1000, true
}

// measuredIntervals returns a workload's intervals after the warm-up,
// without the last one if it was cut short, and the seconds left out.
func measuredIntervals(run *timeline.Run, workload string, opts CompareOptions) ([]timeline.Interval, float64) {
	ivs := run.WorkloadIntervals(workload)
	if len(ivs) == 0 {
		return nil, 0
	}
	tick := run.Manifest.Interval
	if tick <= 0 {
		tick = ivs[0].End - ivs[0].Start
	}
	// A last interval much shorter than a tick is the workload stopping.
	if n := len(ivs); n > 1 && ivs[n-1].End-ivs[n-1].Start < tick/2 {
		ivs = ivs[:n-1]
	}
	start, end := ivs[0].Start, ivs[len(ivs)-1].End
	warmup := max(opts.Warmup, opts.WarmupFraction*(end-start))
	skip := 1 // the first interval always: connections opening
	for skip < len(ivs) && ivs[skip].Start < start+warmup-tick/2 {
		skip++
	}
	if skip >= len(ivs) {
		return nil, end - start
	}
	return ivs[skip:], ivs[skip].Start - start
}

// intervalValues reads metric m off each interval (one-interval blocks).
func intervalValues(ivs []timeline.Interval, m compareMetric) []float64 {
	out := make([]float64, 0, len(ivs))
	for i := range ivs {
		b := compareBlock{count: ivs[i].Count, span: ivs[i].End - ivs[i].Start, lat: ivs[i].Latency}
		if v, ok := b.value(m); ok {
			out = append(out, v)
		}
	}
	return out
}

// lag1Autocorrelation is the pooled lag-1 autocorrelation of several
// series, each about its own mean (so a difference between the runs does
// not count as correlation).
func lag1Autocorrelation(series ...[]float64) float64 {
	var num, den float64
	for _, xs := range series {
		if len(xs) < 3 {
			continue
		}
		mean := 0.0
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for i, x := range xs {
			den += (x - mean) * (x - mean)
			if i > 0 {
				num += (x - mean) * (xs[i-1] - mean)
			}
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// blockLengthFactor lengthens blocks beyond (1+ρ)/(1−ρ) intervals: that
// length gives block values the right variance, but neighbouring blocks
// still correlate. On simulated runs of one AR(1) process (ρ 0.5–0.7, 60
// s; TestCompareBlocksKeepSameHonest) the U test's false alarms fell from
// about 12 % to 8 % with 1.5, and the verdict's guards (drift, interval)
// keep "B is … faster/slower" under 2 %.
const blockLengthFactor = 1.5

// blockIntervals chooses how many intervals make a block:
// blockLengthFactor·(1+ρ)/(1−ρ) for the most autocorrelated metric, at
// least MinBlock seconds, at most what leaves MinBlocks blocks in the
// shorter run. capped reports that the autocorrelation asked for longer
// blocks than the runs allow.
func blockIntervals(ivsA, ivsB []timeline.Interval, tick float64, opts CompareOptions) (k int, rho float64, capped bool) {
	if opts.Block > 0 {
		return max(1, int(math.Round(opts.Block/tick))), 0, false
	}
	rho = math.Inf(-1)
	for _, m := range compareMetrics {
		rho = max(rho, lag1Autocorrelation(intervalValues(ivsA, m), intervalValues(ivsB, m)))
	}
	want := 1.0
	if rho > 0 {
		want = blockLengthFactor * (1 + rho) / (1 - rho)
	}
	if rho >= 0.95 {
		want = math.Inf(1)
	}
	want = math.Max(want, opts.MinBlock/tick)
	k = int(math.Ceil(want - 1e-9))
	limit := max(1, min(len(ivsA), len(ivsB))/opts.MinBlocks)
	if k > limit {
		capped = want > math.Max(opts.MinBlock/tick, float64(limit))+1e-9
		k = limit
	}
	return max(k, 1), rho, capped
}

// makeBlocks splits intervals into n = len/k blocks of k or k+1
// consecutive intervals, so that no interval is left over.
func makeBlocks(ivs []timeline.Interval, k int) []compareBlock {
	n := len(ivs) / k
	blocks := make([]compareBlock, n)
	for i := range n {
		b := &blocks[i]
		for j := i * len(ivs) / n; j < (i+1)*len(ivs)/n; j++ {
			iv := &ivs[j]
			b.count += iv.Count
			b.span += iv.End - iv.Start
			b.maxMS = append(b.maxMS, intervalMaxMS(iv))
			if iv.Latency != nil {
				if b.lat == nil {
					b.lat = timeline.NewHistogram()
				}
				b.lat.Merge(iv.Latency)
			}
		}
	}
	return blocks
}

// meanBlockSpan is the blocks' mean length in seconds, to a tenth.
func meanBlockSpan(blocks []compareBlock) float64 {
	if len(blocks) == 0 {
		return 0
	}
	sum := 0.0
	for _, b := range blocks {
		sum += b.span
	}
	return math.Round(10*sum/float64(len(blocks))) / 10
}

func compareWorkload(a, b *timeline.Run, name string, opts CompareOptions, kc present.Compare, hasKind bool) WorkloadComparison {
	wc := WorkloadComparison{Name: name, Metrics: []MetricComparison{}}
	ivsA, warmA := measuredIntervals(a, name, opts)
	ivsB, warmB := measuredIntervals(b, name, opts)
	wc.WarmupA, wc.WarmupB = warmA, warmB
	if len(ivsA) == 0 || len(ivsB) == 0 {
		wc.Notes = append(wc.Notes, fmt.Sprintf("nothing to compare: %d intervals in A and %d in B after the warm-up", len(ivsA), len(ivsB)))
		return wc
	}
	tick := a.Manifest.Interval
	if tick <= 0 {
		tick = ivsA[0].End - ivsA[0].Start
	}
	if tb := b.Manifest.Interval; tb > 0 && math.Abs(tb-tick) > 1e-9 {
		wc.Notes = append(wc.Notes, fmt.Sprintf("the runs sampled at different intervals (%g s and %g s): blocks hold the same number of intervals, not the same time", tick, tb))
	}
	k, rho, capped := blockIntervals(ivsA, ivsB, tick, opts)
	wc.Autocorrelation = rho
	if math.IsInf(rho, 0) {
		wc.Autocorrelation = 0
	}
	blocksA, blocksB := makeBlocks(ivsA, k), makeBlocks(ivsB, k)
	wc.BlocksA, wc.BlocksB = len(blocksA), len(blocksB)
	wc.Block = meanBlockSpan(append(slices.Clone(blocksA), blocksB...))
	if capped {
		wc.Notes = append(wc.Notes, fmt.Sprintf(
			"per-interval values are strongly autocorrelated (ρ = %.2f): blocks of %g s may still be correlated, so p-values may be too small; run longer for a firmer verdict",
			rho, wc.Block))
	}
	metrics := compareMetrics
	if hasKind {
		metrics = append(slices.Clip(metrics), maxMetric)
		wc.Stalls = stalls(ivsA, ivsB, kc.StallMS)
		if kc.StallMS > 0 {
			metrics = append(metrics, stallsMetric(kc.StallMS))
		}
	}
	for _, m := range metrics {
		valuesA, valuesB := blockValues(blocksA, m), blockValues(blocksB, m)
		mc := compareValues(m, valuesA, valuesB, opts)
		mc.Drift = max(selfDrift(valuesA), selfDrift(valuesB))
		if !judgeUnstable(&mc, m, valuesA, valuesB) {
			judgeDrift(&mc, m, opts.MinChange)
		}
		mc.Outcome = outcomeOf(mc, m)
		wc.Metrics = append(wc.Metrics, mc)
	}
	return wc
}

func blockValues(blocks []compareBlock, m compareMetric) []float64 {
	var out []float64
	for i := range blocks {
		if v, ok := blocks[i].value(m); ok {
			out = append(out, v)
		}
	}
	return out
}

// compareValues runs benchstat's analysis (medians with confidence
// intervals, Mann–Whitney U test) over the block values of both runs and
// words the verdict.
func compareValues(m compareMetric, valuesA, valuesB []float64, opts CompareOptions) MetricComparison {
	mc := MetricComparison{Metric: m.name, Unit: m.unit, HigherIsBetter: m.higherIsBetter, P: 1}
	if len(valuesA) == 0 || len(valuesB) == 0 {
		mc.A, mc.B = Estimate{Lo: math.Inf(-1), Hi: math.Inf(1)}, Estimate{Lo: math.Inf(-1), Hi: math.Inf(1)}
		mc.Change, mc.ChangeLo, mc.ChangeHi, mc.ChangePM = math.NaN(), math.Inf(-1), math.Inf(1), math.Inf(1)
		mc.Verdict = fmt.Sprintf("not measured (%d values in A, %d in B)", len(valuesA), len(valuesB))
		return mc
	}
	thresholds := &benchmath.Thresholds{CompareAlpha: opts.Alpha}
	sa := benchmath.NewSample(slices.Clone(valuesA), thresholds)
	sb := benchmath.NewSample(slices.Clone(valuesB), thresholds)
	sumA := benchmath.AssumeNothing.Summary(sa, opts.Confidence)
	sumB := benchmath.AssumeNothing.Summary(sb, opts.Confidence)
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	mc.A = Estimate{sumA.Center, sumA.Lo, sumA.Hi}
	mc.B = Estimate{sumB.Center, sumB.Lo, sumB.Hi}
	mc.P = cmp.P
	for _, ws := range [][]error{sumA.Warnings, sumB.Warnings, cmp.Warnings} {
		for _, w := range ws {
			mc.Warnings = append(mc.Warnings, w.Error())
		}
	}
	mc.Change, mc.ChangeLo, mc.ChangeHi = relativeChange(mc.A, mc.B)
	mc.ChangePM = math.Max(mc.ChangeHi-mc.Change, mc.Change-mc.ChangeLo)
	tooFew := minUTestBlocks(opts.Alpha)
	switch {
	case cmp.P < opts.Alpha:
		mc.Significant = true
		mc.Verdict = changeVerdict(mc, m)
	case excludesNoChange(mc):
		// The U test ranks blocks and loses power with few of them or
		// with ties; medians whose intervals leave no room for no change
		// have changed all the same. A verdict must agree with the
		// interval printed beside it.
		mc.Significant = true
		mc.Verdict = changeVerdict(mc, m) + ": the medians' intervals exclude no change"
	case len(valuesA) < tooFew && len(valuesB) < tooFew:
		mc.Verdict = fmt.Sprintf("too few blocks to tell (%d in A, %d in B; need %d), %s", len(valuesA), len(valuesB), tooFew, formatP(cmp.P))
	default:
		mc.Verdict = "no significant difference, " + formatP(cmp.P)
	}
	return mc
}

// excludesNoChange says whether the change's interval is bounded and
// lies wholly above or below no change (1×).
func excludesNoChange(mc MetricComparison) bool {
	if math.IsNaN(mc.Change) || math.IsInf(mc.ChangeLo, 0) || math.IsInf(mc.ChangeHi, 0) {
		return false
	}
	return mc.ChangeLo > 0 || mc.ChangeHi < 0
}

// selfDrift compares a run with itself: the median of the second half of
// its (time-ordered) block values relative to the first half's, as the
// larger of second/first and first/second, minus 1 (a halving and a
// doubling both drift 1). 0 with fewer than four blocks.
func selfDrift(values []float64) float64 {
	if len(values) < 4 {
		return 0
	}
	half := len(values) / 2
	first, second := median(values[:half]), median(values[len(values)-half:])
	if first <= 0 || second <= 0 {
		return 0
	}
	return ratioSize(second/first - 1)
}

// ratioSize is how far a relative change is from none as a ratio, minus
// 1: +0.25 and −0.2 (×1.25 and ÷1.25) are both 0.25, and −0.9999 is
// 9999, not 1 — so that a fall to a ten-thousandth is never "no larger"
// than a run that drifts by half.
func ratioSize(change float64) float64 {
	r := 1 + change
	if r <= 0 {
		return math.Inf(1)
	}
	return max(r, 1/r) - 1
}

func median(values []float64) float64 {
	s := slices.Clone(values)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// judgeDrift turns a significant difference that the runs' own noise
// could make into "within noise": one no larger than the runs' drift (the
// same code differed as much from itself within a run), one whose
// interval reaches no change at all, or one below minChange.
func judgeDrift(mc *MetricComparison, m compareMetric, minChange float64) {
	if !mc.Significant || math.IsNaN(mc.Change) {
		return
	}
	size := math.Abs(mc.Change)
	var but string
	switch {
	case math.IsInf(mc.ChangePM, 0):
		return // too few blocks for an interval; the test alone decides
	case size < minChange:
		but = fmt.Sprintf("that is below the %s %% taken as noise", formatPercent(minChange))
	case ratioSize(mc.Change) <= mc.Drift:
		but = fmt.Sprintf("the runs drifted up to %s between their own halves", driftText(mc.Drift))
	case mc.ChangeLo <= 0 && mc.ChangeHi >= 0:
		but = fmt.Sprintf("the confidence intervals allow no change (%s)", changeRange(*mc))
	default:
		return
	}
	mc.Significant, mc.WithinNoise = false, true
	word := "slower"
	if (mc.Change > 0) == m.higherIsBetter {
		word = "faster"
	}
	mc.Verdict = fmt.Sprintf("within noise: B is %s %% %s (%s), but %s", formatPercent(size), word, formatP(mc.P), but)
}

// minUTestBlocks is the fewest values per side with which the U test can
// reach alpha at all.
func minUTestBlocks(alpha float64) int {
	// The smallest p-value of the two-sided U test with n values each is
	// 2/C(2n, n).
	for n := 2; n < 50; n++ {
		if 2/binomial(2*n, n) < alpha {
			return n
		}
	}
	return 50
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// relativeChange is B's center relative to A's, B/A − 1, with bounds:
// the ratio is highest with B high and A low, so its upper bound adds B's
// upper and A's lower relative half-widths in quadrature (independent
// estimates), and the lower bound the other two. Medians' intervals are
// often lopsided, so the bounds are too.
func relativeChange(a, b Estimate) (change, lo, hi float64) {
	if a.Center <= 0 || b.Center < 0 {
		return math.NaN(), math.Inf(-1), math.Inf(1)
	}
	ratio := b.Center / a.Center
	rel := func(d, center float64) float64 {
		if center == 0 {
			return math.Inf(1)
		}
		return d / center
	}
	aDown, aUp := rel(a.Center-a.Lo, a.Center), rel(a.Hi-a.Center, a.Center)
	bDown, bUp := rel(b.Center-b.Lo, b.Center), rel(b.Hi-b.Center, b.Center)
	up := ratio * math.Hypot(bUp, aDown)
	down := ratio * math.Hypot(bDown, aUp)
	return ratio - 1, math.Max(ratio-down, 0) - 1, ratio + up - 1
}

// changeRange writes the interval of a change as signed percentages:
// "−12 % to +3 %".
func changeRange(mc MetricComparison) string {
	end := func(v float64) string {
		switch {
		case math.IsInf(v, 0):
			return "∞"
		case v < 0:
			return "−" + formatPercent(-v) + " %"
		}
		return "+" + formatPercent(v) + " %"
	}
	return end(mc.ChangeLo) + " to " + end(mc.ChangeHi)
}

// changeVerdict words a significant change: better is "faster" (more
// throughput, less latency), the size is the metric's own relative change.
func changeVerdict(mc MetricComparison, m compareMetric) string {
	if math.IsNaN(mc.Change) {
		return "B differs from A (A's median is 0), " + formatP(mc.P)
	}
	better := (mc.Change > 0) == m.higherIsBetter
	word := "slower"
	if better {
		word = "faster"
	}
	if mc.Change == 0 {
		return "B differs in distribution, not in median, " + formatP(mc.P)
	}
	size := formatPercent(math.Abs(mc.Change))
	switch up, down := mc.ChangeHi-mc.Change, mc.Change-mc.ChangeLo; {
	case math.IsInf(mc.ChangePM, 0):
		return fmt.Sprintf("B is %s %% ± ? %s, %s", size, word, formatP(mc.P))
	case math.Max(up, down) > 2*math.Min(up, down) || mc.ChangePM >= math.Abs(mc.Change):
		// Too lopsided for one ±, or a ± that would seem to reach no
		// change when the interval does not: give the interval.
		return fmt.Sprintf("B is %s %% %s (%s), %s", size, word, changeRange(mc), formatP(mc.P))
	}
	return fmt.Sprintf("B is %s %% ± %s %% %s, %s", size, formatPercent(mc.ChangePM), word, formatP(mc.P))
}

// formatPercent writes a fraction as a percentage with two significant
// digits or whole percent: 0.31 → "31", 0.042 → "4.2".
func formatPercent(f float64) string {
	p := 100 * f
	switch {
	case p >= 9.95:
		return fmt.Sprintf("%.0f", p)
	case p >= 0.995:
		return fmt.Sprintf("%.1f", p)
	default:
		return fmt.Sprintf("%.2f", p)
	}
}

// formatP writes a p-value as people read it: "p = 0.41", "p = 0.004",
// "p < 0.001".
func formatP(p float64) string {
	switch {
	case p < 0.001:
		return "p < 0.001"
	case p < 0.01:
		return fmt.Sprintf("p = %.3f", p)
	default:
		return fmt.Sprintf("p = %.2f", p)
	}
}

// workloadChanges lists what differs in two runs' definitions of a workload.
func workloadChanges(a, b timeline.WorkloadInfo) []string {
	var out []string
	if a.Clients != b.Clients {
		out = append(out, fmt.Sprintf("clients %d → %d", a.Clients, b.Clients))
	}
	if a.Rate != b.Rate {
		out = append(out, fmt.Sprintf("rate %g → %g tx/s", a.Rate, b.Rate))
	}
	if a.Pool != b.Pool {
		out = append(out, fmt.Sprintf("pool %d → %d", a.Pool, b.Pool))
	}
	if a.Mode != b.Mode {
		out = append(out, fmt.Sprintf("mode %s → %s", a.Mode, b.Mode))
	}
	for _, s := range diffSettings(a.Settings, b.Settings) {
		out = append(out, fmt.Sprintf("session setting %s: %s → %s", s.Name, orNone(s.A), orNone(s.B)))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(not set)"
	}
	return s
}

// multisetMinus returns the items of xs not matched by one in ys, in order.
func multisetMinus(xs, ys []string) []string {
	left := map[string]int{}
	for _, y := range ys {
		left[y]++
	}
	var out []string
	for _, x := range xs {
		if left[x] > 0 {
			left[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

func diffSettings(a, b map[string]string) []SettingChange {
	var out []SettingChange
	for name, va := range a {
		if vb, ok := b[name]; !ok || va != vb {
			out = append(out, SettingChange{Name: name, A: va, B: vb})
		}
	}
	for name, vb := range b {
		if _, ok := a[name]; !ok {
			out = append(out, SettingChange{Name: name, B: vb})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// compareSettings lists the server settings that differ. Between two
// embedded runs of one kind, the kind's instance settings (where the
// server lives, present.Kind.InstanceSettings) are left out: a different
// target is a note of its own.
func compareSettings(a, b *timeline.Run, kinds present.Kinds) []SettingChange {
	var instance []string
	if a.Manifest.Target.Embedded && b.Manifest.Target.Embedded && a.Manifest.Target.Kind == b.Manifest.Target.Kind {
		if p, ok := kinds.Of(a.Manifest.Target); ok {
			instance = p.InstanceSettings
		}
	}
	out := []SettingChange{}
	for _, s := range diffSettings(a.Manifest.Settings, b.Manifest.Settings) {
		if slices.Contains(instance, s.Name) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// compareFindings pairs the runs' findings by rule id.
func compareFindings(fa, fb []diagnose.Finding) []FindingChange {
	byRule := map[string]*FindingChange{}
	var order []string
	add := func(fs []diagnose.Finding, inB bool) {
		sorted := slices.Clone(fs)
		SortFindings(sorted) // most severe first: the first of a rule is its worst
		for _, f := range sorted {
			fc := byRule[f.Rule]
			if fc == nil {
				fc = &FindingChange{Rule: f.Rule}
				byRule[f.Rule] = fc
				order = append(order, f.Rule)
			}
			if inB {
				if fc.CountB == 0 {
					fc.SeverityB = f.Severity
					fc.Headline = f.Headline
				}
				fc.CountB++
			} else {
				if fc.CountA == 0 {
					fc.SeverityA = f.Severity
					if fc.Headline == "" {
						fc.Headline = f.Headline
					}
				}
				fc.CountA++
			}
		}
	}
	add(fb, true)
	add(fa, false)
	out := make([]FindingChange, 0, len(order))
	for _, rule := range order {
		fc := byRule[rule]
		switch {
		case fc.CountA == 0:
			fc.Change = FindingAppeared
		case fc.CountB == 0:
			fc.Change = FindingVanished
		default:
			fc.Change = FindingPersists
		}
		out = append(out, *fc)
	}
	rank := map[string]int{FindingAppeared: 0, FindingVanished: 1, FindingPersists: 2}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank[out[i].Change], rank[out[j].Change]; ri != rj {
			return ri < rj
		}
		return diagnose.SeverityRank(worseSeverity(out[i])) < diagnose.SeverityRank(worseSeverity(out[j]))
	})
	return out
}

func worseSeverity(fc FindingChange) string {
	if fc.SeverityA == "" {
		return fc.SeverityB
	}
	if fc.SeverityB == "" || diagnose.SeverityRank(fc.SeverityA) < diagnose.SeverityRank(fc.SeverityB) {
		return fc.SeverityA
	}
	return fc.SeverityB
}

// compareNotes says what differs around the runs that could explain a
// difference as well as the code: the server, the host, how a run ended.
func compareNotes(a, b *timeline.Run) []string {
	var notes []string
	ma, mb := &a.Manifest, &b.Manifest
	if pa, pb := ma.Target.ProductName(), mb.Target.ProductName(); pa != pb {
		notes = append(notes, fmt.Sprintf("server differs: %s %s → %s %s", pa, ma.Target.ServerVersion, pb, mb.Target.ServerVersion))
	} else if ma.Target.ServerVersion != mb.Target.ServerVersion {
		notes = append(notes, fmt.Sprintf("server version differs: %s → %s", ma.Target.ServerVersion, mb.Target.ServerVersion))
	}
	if ma.Target.Embedded != mb.Target.Embedded || (!ma.Target.Embedded && ma.Target.Address != mb.Target.Address) {
		notes = append(notes, fmt.Sprintf("target differs: %s → %s", targetText(ma.Target), targetText(mb.Target)))
	}
	if ma.Host.Hostname != mb.Host.Hostname || ma.Host.CPUs != mb.Host.CPUs {
		notes = append(notes, fmt.Sprintf("host differs: %s (%d CPUs) → %s (%d CPUs)", ma.Host.Hostname, ma.Host.CPUs, mb.Host.Hostname, mb.Host.CPUs))
	}
	for _, side := range []struct {
		name string
		m    *timeline.Manifest
	}{{"A", ma}, {"B", mb}} {
		if side.m.Status != timeline.StatusCompleted {
			notes = append(notes, fmt.Sprintf("run %s did not complete (%s)", side.name, side.m.Status))
		}
	}
	// Other processes on the host move results as much as code does.
	busyA, okA := hostMedian(a, "cpu.idle")
	busyB, okB := hostMedian(b, "cpu.idle")
	if okA && okB && math.Abs(busyA-busyB) >= 15 {
		notes = append(notes, fmt.Sprintf("the host's CPUs were idle %.0f %% of the time in A and %.0f %% in B: a difference may be the machine's, not the code's", busyA, busyB))
	}
	// A saturated host shows in its run queue, not in its idle time.
	queueA, okA := hostMedian(a, "procs_running")
	queueB, okB := hostMedian(b, "procs_running")
	cpus := float64(max(ma.Host.CPUs, 1))
	if okA && okB && math.Abs(queueA-queueB) >= cpus && max(queueA, queueB) >= 1.5*min(queueA, queueB) {
		notes = append(notes, fmt.Sprintf("the host's run queue differed: a median of %.0f runnable threads in A and %.0f in B, on %.0f CPUs: a difference may be the machine's, not the code's", queueA, queueB, cpus))
	}
	return notes
}

func targetText(t timeline.Target) string {
	if t.Embedded {
		return "embedded"
	}
	return t.Address
}

// hostMedian is the median of one of the host sampler's series.
func hostMedian(r *timeline.Run, key string) (float64, bool) {
	pts := r.Series(hostmetric.Host, key)
	if len(pts) == 0 {
		return 0, false
	}
	vs := make([]float64, len(pts))
	for i, p := range pts {
		vs[i] = p.V
	}
	return median(vs), true
}

// WriteCompare prints a comparison for a terminal, without colour: per
// workload a verdict table (each run's median with its confidence
// interval, the change with its interval, the verdict), what changed in
// the workload's definition and scripts, then the findings that appeared
// or vanished and the settings that differ.
func WriteCompare(w io.Writer, c *Comparison) error { return WriteCompareColor(w, c, false) }

// scriptLinesShown bounds the terminal's lines of one script's diff; the
// HTML page and the JSON hold them all.
const scriptLinesShown = 8

// WriteCompareColor is WriteCompare with the verdicts coloured for a
// terminal when color is set: green where B is better, red where worse,
// yellow where unstable or within noise.
func WriteCompareColor(w io.Writer, c *Comparison, color bool) error {
	ew := &stickyErrWriter{w: w}
	nameA, nameB := c.A.Name, c.B.Name
	if nameA == "" || nameB == "" {
		nameA, nameB = "A", "B"
	}
	fmt.Fprintf(ew, "A: %s — %s (%s, %s)\n", clikit.Paint(color, clikit.Bold, nameA), c.A.Dir, c.A.Scenario, c.A.Status)
	fmt.Fprintf(ew, "B: %s — %s (%s, %s)\n", clikit.Paint(color, clikit.Bold, nameB), c.B.Dir, c.B.Scenario, c.B.Status)
	for _, n := range c.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	fmt.Fprintf(ew, "\nMedians of block values with %.0f %% confidence intervals; Mann–Whitney U test, α = %g.\n",
		100*c.Options.Confidence, c.Options.Alpha)
	fmt.Fprintf(ew, "A metric whose blocks vary by more than %.0f %% of their mean (CV) is unstable: its direction is tested, its size is not given.\n", 100*UnstableCV)
	for _, wc := range c.Workloads {
		fmt.Fprintf(ew, "\nworkload %s", wc.Name)
		if wc.BlocksA > 0 {
			fmt.Fprintf(ew, ": %d + %d blocks of %g s after a %.0f s / %.0f s warm-up (lag-1 autocorrelation %.2f)",
				wc.BlocksA, wc.BlocksB, wc.Block, wc.WarmupA, wc.WarmupB, wc.Autocorrelation)
		}
		fmt.Fprintln(ew)
		if len(wc.Metrics) > 0 {
			tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "  metric\t%s\t%s\tchange\tverdict (%s vs %s)\n", nameA, nameB, nameB, nameA)
			for _, m := range wc.Metrics {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", m.Metric, EstimateText(m.A, m.Unit, m.CVA), EstimateText(m.B, m.Unit, m.CVB),
					ChangeText(m), clikit.Paint(color, outcomeColor(m.Outcome), VerdictText(m)))
			}
			tw.Flush()
		}
		if st := wc.Stalls; st != nil {
			fmt.Fprintf(ew, "  slowest transaction: %s in A, %s in B; intervals with one over %s: %d of %d in A, %d of %d in B\n",
				formatNumber(st.MaxA)+" ms", formatNumber(st.MaxB)+" ms", fmt.Sprintf("%g ms", st.ThresholdMS),
				st.IntervalsA, st.TotalA, st.IntervalsB, st.TotalB)
		}
		for _, ch := range wc.Changes {
			fmt.Fprintf(ew, "  changed: %s\n", ch)
		}
		for _, sd := range wc.Scripts {
			fmt.Fprintf(ew, "  script %s: %d command(s) removed, %d added\n", sd.Title(), len(sd.Removed), len(sd.Added))
			lines := make([]string, 0, len(sd.Removed)+len(sd.Added))
			for _, r := range sd.Removed {
				lines = append(lines, clikit.Paint(color, clikit.Red, "− "+r))
			}
			for _, a := range sd.Added {
				lines = append(lines, clikit.Paint(color, clikit.Green, "+ "+a))
			}
			for i, l := range lines {
				if i == scriptLinesShown && len(lines) > scriptLinesShown+1 {
					fmt.Fprintf(ew, "    … %d more (--html and --json show them all)\n", len(lines)-i)
					break
				}
				fmt.Fprintf(ew, "    %s\n", l)
			}
		}
		for _, n := range wc.Notes {
			fmt.Fprintf(ew, "  note: %s\n", n)
		}
		for _, m := range wc.Metrics {
			for _, warn := range m.Warnings {
				fmt.Fprintf(ew, "  %s: %s\n", m.Metric, warn)
			}
		}
	}
	for _, name := range c.OnlyInA {
		fmt.Fprintf(ew, "\nworkload %s ran only in A\n", name)
	}
	for _, name := range c.OnlyInB {
		fmt.Fprintf(ew, "\nworkload %s ran only in B\n", name)
	}
	if len(c.Counters) > 0 {
		fmt.Fprintln(ew, "\nserver counters over each whole run (those that moved):")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		moved := 0
		for _, cc := range c.Counters {
			if zeroOrAbsent(cc.A) && zeroOrAbsent(cc.B) {
				continue
			}
			moved++
			fmt.Fprintf(tw, "  %s\t%s\t→ %s\n", cc.Label, formatCounter(cc.A, cc.Unit), formatCounter(cc.B, cc.Unit))
		}
		if moved == 0 {
			fmt.Fprintln(tw, "  none")
		}
		tw.Flush()
	}
	fmt.Fprintln(ew, "\nfindings:")
	if len(c.Findings) == 0 {
		fmt.Fprintln(ew, "  none in either run")
	}
	for _, f := range c.Findings {
		switch {
		case f.Change == FindingAppeared:
			fmt.Fprintf(ew, "  %s [%s] %s ×%d — %s\n", clikit.Paint(color, clikit.Red, "appeared in B:"), strings.ToUpper(f.SeverityB), f.Rule, f.CountB, f.Headline)
		case f.Change == FindingVanished:
			fmt.Fprintf(ew, "  %s [%s] %s ×%d — %s\n", clikit.Paint(color, clikit.Green, "vanished in B:"), strings.ToUpper(f.SeverityA), f.Rule, f.CountA, f.Headline)
		case f.SeverityA == f.SeverityB:
			fmt.Fprintf(ew, "  in both:       [%s] %s ×%d → ×%d — %s\n", strings.ToUpper(f.SeverityB), f.Rule, f.CountA, f.CountB, f.Headline)
		default:
			fmt.Fprintf(ew, "  in both:       %s [%s] ×%d → [%s] ×%d — %s\n", f.Rule, strings.ToUpper(f.SeverityA), f.CountA, strings.ToUpper(f.SeverityB), f.CountB, f.Headline)
		}
	}
	fmt.Fprintln(ew, "\nserver settings that differ:")
	if len(c.Settings) == 0 {
		fmt.Fprintln(ew, "  none")
	} else {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, s := range c.Settings {
			fmt.Fprintf(tw, "  %s\t%s\t→ %s\n", s.Name, orNone(s.A), orNone(s.B))
		}
		tw.Flush()
	}
	return ew.err
}

// outcomeColor is the terminal colour of an outcome.
func outcomeColor(outcome string) string {
	switch outcome {
	case OutcomeFaster:
		return clikit.Green
	case OutcomeSlower:
		return clikit.Red
	case OutcomeUnstable, OutcomeNoise, OutcomeDiffers:
		return clikit.Yellow
	}
	return clikit.Dim
}

// formatEstimate writes a median with its interval as "402 tx/s ± 3 %"
// ("± ∞" when too few values bound it).
func formatEstimate(e Estimate, unit string) string {
	if math.IsInf(e.Lo, 0) && math.IsInf(e.Hi, 0) && e.Center == 0 {
		return "-"
	}
	s := benchmath.Summary{Center: e.Center, Lo: e.Lo, Hi: e.Hi}
	return fmt.Sprintf("%s %s ± %s", formatNumber(e.Center), unit, s.PctRangeString())
}

// formatNumber writes a value with three or four significant digits.
func formatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// stickyErrWriter keeps the first write error so a printer can check once.
type stickyErrWriter struct {
	w   io.Writer
	err error
}

func (e *stickyErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// WriteCompareJSON writes the comparison as indented JSON (CompareFormat).
func WriteCompareJSON(w io.Writer, c *Comparison) error {
	return writeIndentedJSON(w, "comparison", c)
}

// serviceCounters are the counters of the services either run had
// (scenario services:), from the source "service".
func serviceCounters(a, b *timeline.Run) []present.Counter {
	var keys []string
	for _, r := range []*timeline.Run{a, b} {
		keys = append(keys, r.Keys(svcmetric.Source)...)
	}
	var out []present.Counter
	for _, name := range svcpresent.Names(keys) {
		out = append(out, svcpresent.Counters(name)...)
	}
	return out
}
