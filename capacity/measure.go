package capacity

import (
	"math"
	"slices"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Measure is what one step measured of the varied workload in its steady
// part (after the warm-up), and of the machine that drove it.
type Measure struct {
	Seconds float64 `json:"seconds"` // the measured window's length
	// Count and Failed are the transactions that succeeded and failed.
	Count  int64 `json:"count"`
	Failed int64 `json:"failed"`
	// Offered is the arrival rate the shape asked for (open model), per
	// second; 0 on the closed model.
	Offered float64 `json:"offered_tps"`
	// Achieved is the rate of successful transactions, Issued that of
	// all transactions run (failed ones too): what the generator kept up.
	Achieved float64             `json:"achieved_tps"`
	Issued   float64             `json:"issued_tps"`
	Clients  int                 `json:"clients"` // clients the shape wanted at the end
	P50      int64               `json:"p50_us"`
	P99      int64               `json:"p99_us"`
	P999     int64               `json:"p999_us"`
	MaxUS    int64               `json:"max_us"`
	Latency  *timeline.Histogram `json:"-"`
	// ClientCPU is firedrill's own CPU, in cores (its mean over the
	// window), and ClientCPUCap the cores it may use; 0 when unsampled.
	ClientCPU    float64 `json:"client_cpu"`
	ClientCPUCap float64 `json:"client_cpu_cap"`
	// ClientSchedP99 is the median over the window of the 99th
	// percentile of the time firedrill's runnable goroutines waited for
	// a thread, ms: high when firedrill is starved of CPU, by itself or
	// by the rest of the host. 0 when unsampled or none waited.
	ClientSchedP99 float64 `json:"client_sched_p99_ms"`
	// HostBusy is the host's busy CPU, in % of all its CPUs (mean); -1
	// when unsampled.
	HostBusy float64 `json:"host_busy_pct"`
	// PoolWaitP99 is the 99th percentile of the wait for a pooled
	// connection, µs; 0 without a pool.
	PoolWaitP99 int64 `json:"pool_wait_p99_us"`
	// HostCPUs are the host's CPUs; 0 when unsampled.
	HostCPUs float64 `json:"host_cpus"`
	// ServerCPU is the server's own CPU, in cores (mean over the window),
	// from the series its kind registers; -1 when the kind samples none.
	// ServerCPUCap is the most it can use: the kind's (1 for a server
	// whose work runs on one thread), else the host's CPUs.
	ServerCPU    float64 `json:"server_cpu"`
	ServerCPUCap float64 `json:"server_cpu_cap"`
	// ServerCPUUnknown says why the server's CPU is not known, when its
	// kind's sampler of it noted why (a given server on another machine:
	// "server CPU unknown (remote server)"); firedrill does not guess it.
	ServerCPUUnknown string `json:"server_cpu_unknown,omitempty"`
	// Services are the scenario's services in the window (ReadServices):
	// their threads, queue, pool and CPU, and what of each binds.
	Services []ServiceLoad `json:"services,omitempty"`
	// from and to bound the measured window, run seconds.
	from, to float64
}

// serverSaturated is the share of the cores it can use at which the
// server's CPU is what binds.
const serverSaturated = 0.85

// ServerBound says the server's own CPU was at the cores it can use.
func (m Measure) ServerBound() bool {
	return m.ServerCPU >= 0 && m.ServerCPUCap > 0 && m.ServerCPU >= serverSaturated*m.ServerCPUCap
}

// ReadServerCPU reads the server's CPU over the measured window from the
// series source:key (in cores) that the target's kind registers, and
// the most cores it can use (maxCores, 0: the host's). Without the
// series in the run, ServerCPU stays -1, and ServerCPUUnknown is what
// the run noted for its source.
func (m *Measure) ReadServerCPU(run *timeline.Run, source, key string, maxCores float64) {
	pts := run.Series(source, key)
	if len(pts) == 0 || m.to <= m.from {
		for _, s := range run.Manifest.Samplers {
			if s.Name == source && s.Notes != "" {
				m.ServerCPUUnknown = s.Notes
			}
		}
		return
	}
	n := 0
	for _, p := range pts {
		if p.T > m.from && p.T <= m.to+1e-6 {
			n++
		}
	}
	if n == 0 {
		return
	}
	m.ServerCPU = mean(pts, m.from, m.to)
	m.ServerCPUCap = maxCores
	if maxCores <= 0 || m.HostCPUs > 0 && m.HostCPUs < maxCores {
		m.ServerCPUCap = m.HostCPUs
	}
}

// clientSaturated is the share of its cores at which firedrill itself is
// the limit, and clientStarvedMS the scheduler latency (p99) at which its
// goroutines cannot keep a schedule (as diagnose's generator-limited
// rule judges them).
const (
	clientSaturated = 0.85
	clientStarvedMS = 20
)

// Quantile returns the latency quantile q (0..1), µs.
func (m Measure) Quantile(q float64) int64 {
	if m.Latency == nil {
		return 0
	}
	return m.Latency.Quantile(100 * q)
}

// FailedRatio is the share of transactions that failed.
func (m Measure) FailedRatio() float64 {
	if m.Count+m.Failed == 0 {
		return 0
	}
	return float64(m.Failed) / float64(m.Count+m.Failed)
}

// KeptUp is Issued over Offered: 1 when the generator ran every
// transaction asked for (and on the closed model, which asks no rate).
func (m Measure) KeptUp() float64 {
	if m.Offered <= 0 {
		return 1
	}
	return m.Issued / m.Offered
}

// Behind says the generator issued less than share of the offered rate,
// beyond the noise of Poisson arrivals: the arrivals of a window of n
// expected vary by √n, so a deficit must also exceed 2.5 √n to count (at
// 100/s for 25 s, 2,500 expected: 5 %, shrinking with rate and length).
func (m Measure) Behind(share float64) bool {
	if m.Offered <= 0 || m.Seconds <= 0 {
		return false
	}
	expected := m.Offered * m.Seconds
	deficit := expected - m.Issued*m.Seconds
	return deficit > (1-share)*expected && deficit > 2.5*math.Sqrt(expected)
}

// ClientBound says the generator, not the system, set the pace:
// firedrill's own CPU was at its limit in the window, or, when it fell
// behind its schedule (behind), its goroutines waited for a thread long
// enough to miss it (starved by itself or by the rest of the host).
func (m Measure) ClientBound(behind bool) bool {
	return m.ClientCPUCap > 0 && m.ClientCPU >= clientSaturated*m.ClientCPUCap || behind && m.ClientSchedP99 >= clientStarvedMS
}

// MeasureRun reads a step's run: the workload's intervals from warmup
// seconds after its first one, and the samples of the same window.
func MeasureRun(run *timeline.Run, workload string, warmup float64) Measure {
	m := Measure{Latency: timeline.NewHistogram(), HostBusy: -1, ServerCPU: -1}
	ivs := run.WorkloadIntervals(workload)
	if len(ivs) == 0 {
		return m
	}
	from := ivs[0].Start + warmup
	to := from
	var offered float64
	pool := timeline.NewHistogram()
	pooled := false
	for _, iv := range ivs {
		if (iv.Start+iv.End)/2 < from { // ticks need not fall on whole seconds
			continue
		}
		d := iv.End - iv.Start
		if d <= 0 {
			continue
		}
		m.Seconds += d
		to = iv.End
		m.Count += iv.Count
		m.Failed += iv.Failed
		offered += iv.Rate * d
		m.Clients = iv.Clients
		if iv.Latency != nil {
			m.Latency.Merge(iv.Latency)
		}
		if iv.PoolWait != nil {
			pool.Merge(iv.PoolWait)
			pooled = true
		}
	}
	if m.Seconds == 0 {
		return m
	}
	m.from, m.to = from, to
	m.Offered = offered / m.Seconds
	m.Achieved = float64(m.Count) / m.Seconds
	m.Issued = float64(m.Count+m.Failed) / m.Seconds
	if m.Count > 0 {
		p := m.Latency.Percentiles()
		m.P50, m.P99, m.P999, m.MaxUS = p.P50, p.P99, p.P999, p.Max
	}
	if pooled {
		m.PoolWaitP99 = pool.Quantile(99)
	}
	m.ClientCPU = mean(run.Series(hostmetric.Self, hostmetric.SelfCPU), from, to)
	m.ClientCPUCap = mean(run.Series(hostmetric.Self, hostmetric.SelfCPUs), from, to)
	m.HostCPUs = mean(run.Series(hostmetric.Host, hostmetric.CPUs), from, to)
	if host := m.HostCPUs; host > 0 && (m.ClientCPUCap == 0 || host < m.ClientCPUCap) {
		m.ClientCPUCap = host
	}
	m.ClientSchedP99 = median(run.Series(hostmetric.Self, hostmetric.SelfSchedP99), from, to)
	// A host 0 % idle is 100 % busy: a window without a point is unsampled.
	if idle := run.Series(hostmetric.Host, hostmetric.CPUIdle); slices.ContainsFunc(idle, func(p timeline.Point) bool { return p.T > from && p.T <= to+1e-6 }) {
		if v := mean(idle, from, to); !math.IsNaN(v) {
			m.HostBusy = 100 - v
		}
	}
	return m
}

// median is the median of the points with from < T <= to, 0 without any.
func median(pts []timeline.Point, from, to float64) float64 {
	var vs []float64
	for _, p := range pts {
		if p.T > from && p.T <= to+1e-6 {
			vs = append(vs, p.V)
		}
	}
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// mean is the mean of the points with from < T <= to, 0 without any.
func mean(pts []timeline.Point, from, to float64) float64 {
	var sum float64
	n := 0
	for _, p := range pts {
		if p.T > from && p.T <= to+1e-6 {
			sum += p.V
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
