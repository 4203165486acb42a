// Package promexport serves a run's live metrics in Prometheus's
// exposition format (firedrill run --metrics-addr): the client metrics
// of every workload and every sampled series, with the run's labels.
//
// It reads only what the runner hands its callbacks once per tick (the
// intervals just closed and the samples just read, runner.Options.OnTick)
// and the event marks (OnMark): nothing is added to the engine's path of
// a transaction. A scrape builds its answer from that state; nothing
// else of the run waits for it.
//
// It lives under internal/ beside the CLI rather than in report/
// because it is live: report reads run directories, this reads a run
// while it happens, and nothing outside firedrill's commands uses it.
package promexport

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// Labels are the labels of every series of one run.
type Labels struct {
	Scenario string // the scenario's name
	RunID    string // the run directory's name
	Backend  string // the kind of database: postgres, mariadb, redis
	Shard    string // "i/N" when the run is one shard of several; "" otherwise
}

func (l Labels) prometheus() prometheus.Labels {
	p := prometheus.Labels{"scenario": l.Scenario, "run_id": l.RunID, "backend": l.Backend}
	if l.Shard != "" {
		p["shard"] = l.Shard
	}
	return p
}

// LatencyBuckets are the upper bounds (seconds) of the classic histogram
// buckets of transaction latency and pool wait: from 100 µs (a cached
// point select on a local server) to a minute (a transaction stuck
// behind a lock), about three per decade.
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// latencyBoundsUS are LatencyBuckets in µs, the unit of the intervals'
// histograms.
var latencyBoundsUS = func() []int64 {
	us := make([]int64, len(LatencyBuckets))
	for i, b := range LatencyBuckets {
		us[i] = int64(b * 1e6)
	}
	return us
}()

// Exporter holds what a run measured so far, as the runner's callbacks
// deliver it, and is a prometheus.Collector of it. Before Start and
// between runs it serves nothing.
type Exporter struct {
	version string
	mu      sync.Mutex
	names   *namer
	run     *runState // nil before Start
}

var _ prometheus.Collector = (*Exporter)(nil)

// New returns an exporter; version is firedrill's, for firedrill_run_info,
// and kinds are the key tables its sampled series are named from (the
// host's are always known).
func New(version string, kinds ...Names) *Exporter {
	return &Exporter{version: version, names: newNamer(kinds)}
}

// runState is one run's metrics so far.
type runState struct {
	labels    prometheus.Labels
	started   time.Time
	duration  float64 // planned, seconds
	elapsed   float64 // the last tick's time since the start
	finished  bool
	workloads map[string]*workloadState
	sources   map[sourceKey]*sourceState
	events    map[eventKey]bool // running or not
	// findings is the live diagnosis's last pass (or the final one):
	// how many findings of each rule, severity and target stand.
	findings map[findingKey]int
	// several is set once a sample or mark names a target: the run has
	// several, and the series of sources and events carry a target label.
	several bool
	descs   map[string]*prometheus.Desc
}

// workloadState accumulates one workload's intervals.
type workloadState struct {
	count, failed, skipped, late, retried, retries int64
	errors                                         map[errorKey]int64
	latency                                        histogram
	poolWait                                       *histogram // nil without a pool
	last                                           timeline.Interval
}

// errorKey is a failed try's code and kind: "refused", "unavailable" and
// "lost" for the connection's failures, "transaction" for the others.
type errorKey struct{ code, kind string }

// histogram is a classic Prometheus histogram filled from HDR intervals.
type histogram struct {
	counts []uint64 // per bucket of LatencyBuckets, not cumulative; the last is +Inf
	count  uint64
	sum    float64 // seconds, from the HDR ranges' midpoints (within 0.1 %)
}

// add rebuckets one interval's HDR histogram (µs).
func (h *histogram) add(hist *timeline.Histogram) {
	if hist == nil {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, len(latencyBoundsUS)+1)
	}
	h.sum += hist.Rebucket(latencyBoundsUS, h.counts) / 1e6
	h.count += uint64(hist.Count())
}

// cumulative returns the buckets as Prometheus wants them: upper bound →
// values at or below it.
func (h *histogram) cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(LatencyBuckets))
	var c uint64
	for i, b := range LatencyBuckets {
		if h.counts != nil {
			c += h.counts[i]
		}
		m[b] = c
	}
	return m
}

// sourceState is a sampler's latest reading.
// sourceKey is a sampled source of one target ("" for the host's, and
// every source of a run of one system).
type sourceKey struct{ target, source string }

// eventKey is an event of one target, and its kind.
type eventKey struct{ target, event, kind string }

type sourceState struct {
	values   map[string]float64 // the last successful sample's
	up       bool
	errors   int64
	duration float64 // seconds the last read took
}

// Start begins a new run: what the previous one left is dropped.
// duration is the run's planned length.
func (e *Exporter) Start(l Labels, duration time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.run = &runState{
		labels: l.prometheus(), started: time.Now(), duration: duration.Seconds(),
		workloads: map[string]*workloadState{}, sources: map[sourceKey]*sourceState{},
		events: map[eventKey]bool{}, descs: map[string]*prometheus.Desc{},
		findings: map[findingKey]int{},
	}
}

// findingKey is what firedrill_finding's labels say of a finding.
type findingKey struct{ rule, severity, target string }

// Findings takes a diagnosis of the run so far (the live one's passes,
// then the final one): it replaces the previous one, so a finding that
// resolved leaves firedrill_finding.
func (e *Exporter) Findings(fs []diagnose.Finding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run == nil {
		return
	}
	e.run.findings = map[findingKey]int{}
	for _, f := range fs {
		e.run.findings[findingKey{f.Rule, f.Severity, f.Target}]++
		e.run.several = e.run.several || f.Target != ""
	}
}

// Finish says the run is over; its last values stay until the next Start.
func (e *Exporter) Finish() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != nil {
		e.run.finished = true
	}
}

// Tick takes one tick's intervals and samples (runner.Options.OnTick).
// Its work is per interval and per sample, never per transaction: an
// interval's latency histogram is rebucketed once.
func (e *Exporter) Tick(t float64, ivs []timeline.Interval, samples []timeline.Sample) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.run
	if r == nil {
		return
	}
	r.elapsed = max(r.elapsed, t)
	for i := range ivs {
		iv := &ivs[i]
		w := r.workloads[iv.Workload]
		if w == nil {
			w = &workloadState{errors: map[errorKey]int64{}}
			r.workloads[iv.Workload] = w
		}
		w.count += iv.Count
		w.failed += iv.Failed
		w.skipped += iv.Skipped
		w.late += iv.Late
		w.retried += iv.Retried
		w.retries += iv.Retries
		for code, n := range iv.Errors {
			other := n
			for kind, m := range map[string]map[string]int64{"refused": iv.Refused, "unavailable": iv.Unavailable, "lost": iv.Lost} {
				if c := m[code]; c > 0 {
					w.errors[errorKey{code, kind}] += c
					other -= c
				}
			}
			if other > 0 {
				w.errors[errorKey{code, "transaction"}] += other
			}
		}
		w.latency.add(iv.Latency)
		if iv.PoolWait != nil {
			if w.poolWait == nil {
				w.poolWait = &histogram{}
			}
			w.poolWait.add(iv.PoolWait)
		}
		if iv.End >= w.last.End {
			w.last = *iv
			w.last.Latency, w.last.PoolWait, w.last.Errors = nil, nil, nil // only the gauges are read
			w.last.Refused, w.last.Unavailable, w.last.Lost = nil, nil, nil
		}
	}
	for i := range samples {
		s := &samples[i]
		key := sourceKey{s.Target, s.Source}
		src := r.sources[key]
		if src == nil {
			src = &sourceState{}
			r.sources[key] = src
		}
		r.several = r.several || s.Target != ""
		src.duration = s.Duration / 1000
		src.up = s.Error == ""
		if s.Error != "" {
			src.errors++
			continue // the previous values stay; firedrill_sampler_up says they are old
		}
		src.values = s.Values
	}
}

// Mark takes an event's mark (runner.Options.OnMark).
func (e *Exporter) Mark(m timeline.Mark) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run == nil {
		return
	}
	e.run.events[eventKey{m.Target, m.Event, m.Kind}] = m.Phase == timeline.PhaseStart
	e.run.several = e.run.several || m.Target != ""
}

// Describe sends nothing: the series depend on what the run samples, so
// the exporter is an unchecked collector.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series of the run so far. It builds them under
// the lock and sends them after, so that the runner's tick never waits
// for a scrape's reader.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	for _, m := range e.collect() {
		ch <- m
	}
}

func (e *Exporter) collect() []prometheus.Metric {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.run
	if r == nil {
		return nil
	}
	c := &collection{r: r, seen: map[string]string{}}
	c.gauge("run_info", "the run: 1, with firedrill's version", []string{"firedrill_version"}, 1, e.version)
	c.gauge("run_elapsed_seconds", "time since the run's load started, at the last tick", nil, r.elapsed)
	c.gauge("run_duration_seconds", "the run's planned duration", nil, r.duration)
	c.gauge("run_finished", "1 once the run has ended (the values are final), else 0", nil, boolValue(r.finished))

	wl := []string{"workload"}
	for _, name := range sortedKeys(r.workloads) {
		w := r.workloads[name]
		c.counter("transactions_total", "transactions that succeeded", wl, w.count, name)
		c.counter("transactions_failed_total", "transactions that failed (after their retries)", wl, w.failed, name)
		c.counter("transactions_skipped_total", "transactions skipped under an arrival rate: already later than the latency limit when due", wl, w.skipped, name)
		c.counter("transactions_late_total", "transactions that took longer than the latency limit", wl, w.late, name)
		c.counter("transactions_retried_total", "transactions retried at least once (serialization failures, deadlocks)", wl, w.retried, name)
		c.counter("retries_total", "retries of transactions", wl, w.retries, name)
		for _, k := range sortedErrorKeys(w.errors) {
			c.counter("errors_total", "failed tries by the database's error code (SQLSTATE, MariaDB's error number, Redis's prefix) and kind: refused, unavailable and lost are about the connection, transaction is the rest",
				[]string{"workload", "code", "kind"}, w.errors[k], name, k.code, k.kind)
		}
		c.histogram("latency_seconds", "latency of successful transactions, from the scheduled start under an arrival rate (coordinated omission corrected)", wl, &w.latency, name)
		if w.poolWait != nil {
			c.histogram("pool_wait_seconds", "time transactions waited for a pooled connection", wl, w.poolWait, name)
		}
		last := &w.last
		for _, q := range []struct {
			label string
			us    int64
		}{{"0.5", last.LatencyPct.P50}, {"0.9", last.LatencyPct.P90}, {"0.95", last.LatencyPct.P95},
			{"0.99", last.LatencyPct.P99}, {"0.999", last.LatencyPct.P999}, {"1", last.LatencyPct.Max}} {
			c.gauge("latency_interval_seconds", "latency percentiles of the last interval (one sample tick), exact from its HDR histogram; quantile 1 is the maximum",
				[]string{"workload", "quantile"}, float64(q.us)/1e6, name, q.label)
		}
		c.gauge("transactions_per_second", "successful transactions per second over the last interval", wl, last.TPS(), name)
		c.gauge("clients", "clients the workload's shape wanted at the end of the last interval", wl, float64(last.Clients), name)
		c.gauge("clients_unconnected", "clients without a session at the end of the last interval, waiting to retry one", wl, float64(last.Unconnected), name)
		if last.Rate > 0 {
			c.gauge("offered_rate_per_second", "the arrival rate the workload's shape asked for in the last interval", wl, last.Rate, name)
			c.gauge("schedule_lag_max_seconds", "longest delay between a transaction's scheduled and actual start in the last interval", wl, float64(last.LagMaxUS)/1e6, name)
			c.gauge("schedule_lag_mean_seconds", "mean delay between a transaction's scheduled and actual start in the last interval", wl, last.LagMeanUS/1e6, name)
		}
	}

	// In a run of several targets the series of a source and of an
	// event say whose they are: a target label ("" for the host's); a
	// run of one system's keep the labels they always had.
	targeted := func(labels, values []string, target string) ([]string, []string) {
		if !r.several {
			return labels, values
		}
		return append(slices.Clip(labels), "target"), append(slices.Clip(values), target)
	}
	sources := slices.SortedFunc(maps.Keys(r.sources), func(a, b sourceKey) int {
		return cmp.Or(cmp.Compare(a.source, b.source), cmp.Compare(a.target, b.target))
	})
	for _, k := range sources {
		s := r.sources[k]
		labels, values := targeted([]string{"source"}, []string{k.source}, k.target)
		c.gauge("sampler_up", "1 when the sampler's last read succeeded; 0 when it failed (its series keep the last values read)", labels, boolValue(s.up), values...)
		c.gauge("sampler_read_seconds", "how long the sampler's last read took", labels, s.duration, values...)
		c.counter("sampler_errors_total", "reads of the sampler that failed", labels, s.errors, values...)
	}
	for _, k := range sources {
		values := r.sources[k].values
		for _, key := range sortedKeys(values) {
			sn := e.names.series(k.source, key)
			labels, lvalues := sn.LabelNames, sn.LabelValues
			if k.target != "" {
				labels, lvalues = targeted(labels, lvalues, k.target)
			}
			if sn.Counter {
				c.emit(sn.Name, sn.Help, labels, prometheus.CounterValue, values[key]*sn.Scale, lvalues...)
			} else {
				c.emit(sn.Name, sn.Help, labels, prometheus.GaugeValue, values[key]*sn.Scale, lvalues...)
			}
		}
	}
	events := slices.SortedFunc(maps.Keys(r.events), func(a, b eventKey) int {
		return cmp.Or(cmp.Compare(a.event, b.event), cmp.Compare(a.kind, b.kind), cmp.Compare(a.target, b.target))
	})
	for _, k := range events {
		labels, values := targeted([]string{"event", "kind"}, []string{k.event, k.kind}, k.target)
		c.gauge("event_active", "1 while the scenario's event runs (between its start and end marks), else 0",
			labels, boolValue(r.events[k]), values...)
	}
	// Every severity is served from the start, at zero until the
	// diagnosis finds one: a clean run's dashboard shows zero findings,
	// not "no data".
	bySeverity := map[string]int{diagnose.Critical: 0, diagnose.Warning: 0, diagnose.Info: 0}
	findings := slices.SortedFunc(maps.Keys(r.findings), func(a, b findingKey) int {
		return cmp.Or(cmp.Compare(diagnose.SeverityRank(a.severity), diagnose.SeverityRank(b.severity)),
			cmp.Compare(a.rule, b.rule), cmp.Compare(a.target, b.target))
	})
	for _, k := range findings {
		labels, values := targeted([]string{"rule", "severity"}, []string{k.rule, k.severity}, k.target)
		c.gauge("finding", "findings of the rule at the severity the diagnosis of the run so far reports (the live diagnosis's last pass, the final one once the run has ended); absent once resolved",
			labels, float64(r.findings[k]), values...)
		bySeverity[k.severity] += r.findings[k]
	}
	for _, sev := range sortedKeys(bySeverity) {
		c.gauge("findings", "findings at the severity the diagnosis of the run so far reports; 0 from the start",
			[]string{"severity"}, float64(bySeverity[sev]), sev)
	}
	return c.out
}

// collection is one Collect: it names the metrics and keeps a series
// from being sent twice or a name with two label sets, which would fail
// the whole scrape.
type collection struct {
	r    *runState
	out  []prometheus.Metric
	seen map[string]string // name → its label names and help; name + values → ""
}

func (c *collection) gauge(name, help string, labels []string, v float64, values ...string) {
	c.emit(Namespace+"_"+name, help, labels, prometheus.GaugeValue, v, values...)
}

func (c *collection) counter(name, help string, labels []string, v int64, values ...string) {
	c.emit(Namespace+"_"+name, help, labels, prometheus.CounterValue, float64(v), values...)
}

func (c *collection) histogram(name, help string, labels []string, h *histogram, values ...string) {
	desc, ok := c.desc(Namespace+"_"+name, help, labels, values)
	if !ok {
		return
	}
	if m, err := prometheus.NewConstHistogram(desc, h.count, h.sum, h.cumulative(), values...); err == nil {
		c.out = append(c.out, m)
	}
}

func (c *collection) emit(name, help string, labels []string, t prometheus.ValueType, v float64, values ...string) {
	desc, ok := c.desc(name, help, labels, values)
	if !ok {
		return
	}
	if m, err := prometheus.NewConstMetric(desc, t, v, values...); err == nil {
		c.out = append(c.out, m)
	}
}

// desc returns the description of a series, false if the series was
// already sent or its name was with other labels or help.
func (c *collection) desc(name, help string, labels, values []string) (*prometheus.Desc, bool) {
	sig := strings.Join(labels, ",") + "\x00" + help
	if prev, ok := c.seen[name]; ok && prev != sig {
		return nil, false
	}
	c.seen[name] = sig
	series := name + "\x00" + strings.Join(values, "\x00")
	if _, dup := c.seen[series]; dup {
		return nil, false
	}
	c.seen[series] = ""
	// Keyed by the label names too: a run's series gain a target label
	// once it proves to have several (a finding or mark naming one).
	d := c.r.descs[name+"\x00"+sig]
	if d == nil {
		d = prometheus.NewDesc(name, help, labels, c.r.labels)
		c.r.descs[name+"\x00"+sig] = d
	}
	return d, true
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedErrorKeys(m map[errorKey]int64) []errorKey {
	keys := make([]errorKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].code != keys[j].code {
			return keys[i].code < keys[j].code
		}
		return keys[i].kind < keys[j].kind
	})
	return keys
}
