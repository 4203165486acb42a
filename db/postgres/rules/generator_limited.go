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

// generatorLimited finds runs whose pace was set by firedrill itself: its
// own CPU at the cores it may use, its goroutines waiting for a thread,
// or an arrival rate it could not keep — while the database's sessions sat
// waiting for the client. Then the numbers describe the client, not the
// database.
type generatorLimited struct{}

var _ diagnose.Rule = generatorLimited{}

// Thresholds of generator-limited.
const (
	// genCPUShare of the cores firedrill may use (GOMAXPROCS, at most the
	// host's CPUs) counts as at its limit. The database shares the host, so
	// a closed-model run naturally leaves firedrill far below it.
	genCPUShare = 0.85
	// genSchedP99MS is a Go scheduler latency p99 at which client timings
	// are distorted: goroutines wait that long for a thread.
	genSchedP99MS = 20
	// genLagMS is the schedule lag (mean) at which an open-model workload
	// is behind, with genRateShare of its rate achieved.
	genLagMS     = 50
	genRateShare = 0.9
	// genPoolShare and genSleepShare: a lagging rate is not the
	// generator's fault when its clients spend this share of their time
	// waiting for a pooled connection, or sleeping as their script says.
	genPoolShare  = 0.25
	genSleepShare = 0.5
	// genActiveShare: the database is not the limit when at most this share
	// of the workload's connections are active on the server.
	genActiveShare = 0.5
	// genHostIdlePct: below this the host has no CPU to spare, and
	// genBusyShare of its busy CPU must then be firedrill's own for
	// scheduler latency to count.
	genHostIdlePct = 20
	genBusyShare   = 0.5
	// genMinS and genMinShare: the condition must hold this long, and this
	// share of the time the workloads ran.
	genMinS     = 5
	genMinShare = 0.2
)

func (generatorLimited) ID() string { return "generator-limited" }

// Inputs names the sources the rule reads.
func (generatorLimited) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{hostmetric.Self}, Also: []string{hostmetric.Host, pgmetric.Activity}}
}

// genTick is what one tick says about the client and the server.
type genTick struct {
	T               float64
	CPU, Cap        float64 // firedrill's cores used, cores it may use
	SchedP99        float64 // ms, -1 unknown
	AAS             float64 // -1 unknown
	HostIdle        float64 // %, -1 unknown
	Behind          []string
	Active, Conns   float64 // the workloads' connections: active, all
	Direct          bool    // firedrill's CPU at its cap, or a workload behind its rate
	ClientSaturated bool    // Direct, or its goroutines waiting long for a thread
	ServerIdle      bool    // most of the workloads' connections not active on the server
}

func (r generatorLimited) Check(run *timeline.Run) []diagnose.Finding {
	ticks := genTicks(run)
	if len(ticks) == 0 {
		return nil
	}
	span := workloadSpan(run)
	best := genStretch{}
	for _, st := range genStretches(ticks, diagnose.Tick(run)) {
		// Scheduler latency alone is noisy on a shared machine (other
		// processes preempt firedrill's threads for seconds): it must last
		// longer than the direct signs, CPU at its cap or a missed rate.
		need := math.Max(genMinS, genMinShare*span)
		if 2*st.direct < st.n {
			need = math.Max(3*genMinS, 1.5*genMinShare*span)
		}
		if st.to-st.from >= need && st.to-st.from > best.to-best.from {
			best = st
		}
	}
	if best.n == 0 {
		return nil
	}
	return []diagnose.Finding{r.finding(run, ticks, best.from, best.to)}
}

// genTicks reads, per firedrill sample, the client's and the server's state.
func genTicks(run *timeline.Run) []genTick {
	hostCPUs := float64(run.Manifest.Host.CPUs)
	behind := genBehind(run)
	var out []genTick
	for _, s := range run.SourceSamples(hostmetric.Self) {
		if s.Error != "" {
			continue
		}
		cpu, okCPU := s.Values["cpu"]
		gomax, okMax := s.Values["cpus"]
		t := genTick{T: s.T, CPU: cpu, SchedP99: -1, AAS: -1, HostIdle: -1}
		if v, ok := s.Values["sched_latency_p99_ms"]; ok {
			t.SchedP99 = v
		}
		cores := hostCPUs
		if h := diagnose.SampleNear(run, hostmetric.Host, s.T, 0.6*diagnose.Tick(run)); h != nil {
			if v, ok := h.Values["cpus"]; ok && v > 0 {
				cores = v
			}
			if v, ok := h.Values["cpu.idle"]; ok {
				t.HostIdle = v
			}
		}
		if okMax && gomax > 0 {
			t.Cap = gomax
			if cores > 0 {
				t.Cap = math.Min(gomax, cores)
			}
		} else {
			t.Cap = cores
		}
		for _, b := range behind {
			if b.from <= s.T && s.T <= b.to+diagnose.Tick(run) {
				t.Behind = append(t.Behind, b.workload)
			}
		}
		t.Direct = okCPU && t.Cap > 0 && cpu >= genCPUShare*t.Cap || len(t.Behind) > 0
		t.ClientSaturated = t.Direct || t.SchedP99 >= genSchedP99MS
		// The server's side at the same moment.
		if a := diagnose.SampleNear(run, pgmetric.Activity, s.T, 0.6*diagnose.Tick(run)); a != nil {
			if v, ok := a.Values["aas"]; ok {
				t.AAS = v
			}
			for _, w := range run.Manifest.Workloads {
				conns, ok := a.Values["app."+diagnose.WorkloadApp(w.Name)+".sessions"]
				if !ok {
					continue
				}
				t.Conns += conns
				t.Active += a.Values["app."+diagnose.WorkloadApp(w.Name)+".active"] // absent: none active
			}
		}
		switch {
		case t.Conns > 0:
			t.ServerIdle = t.Active <= genActiveShare*t.Conns
		case t.AAS >= 0 && cores > 0:
			t.ServerIdle = t.AAS <= genActiveShare*cores
		}
		// Scheduler latency says firedrill's threads waited, not why. When
		// the host's CPUs are all busy and firedrill is not the one keeping
		// them busy, other processes starved both it and the server: that
		// alone does not make the generator the bottleneck.
		if !t.Direct && t.HostIdle >= 0 && t.HostIdle < genHostIdlePct && cores > 0 {
			busy := cores * (100 - t.HostIdle) / 100
			t.ClientSaturated = t.ClientSaturated && t.CPU >= genBusyShare*busy
		}
		out = append(out, t)
	}
	return out
}

// genBehindSpan is a stretch where an open-model workload missed its rate
// with its schedule lag high.
type genBehindSpan struct {
	workload string
	from, to float64
}

// genBehind finds the intervals where an arrival-rate workload could not
// start its transactions on time — lag high, the rate not achieved — for
// want of the generator: not because its clients were all waiting for a
// pooled connection (the application's pool is the limit) or sleeping as
// their script says (\sleep: too few clients for the rate).
func genBehind(run *timeline.Run) []genBehindSpan {
	var out []genBehindSpan
	sleepS := map[string]float64{}
	served := map[string]bool{}
	for _, w := range run.Manifest.Workloads {
		sleepS[w.Name] = scriptSleepS(run, w.Name)
		served[w.Name] = w.Service != ""
	}
	for _, iv := range run.Intervals {
		// A workload through a service (docs/services.md) counts its
		// requests' time in the service's queue and CPU as schedule lag:
		// that is the service falling behind, which its own rules read,
		// not the generator.
		if iv.Rate <= 0 || iv.End <= iv.Start || served[iv.Workload] {
			continue
		}
		done := float64(iv.Count+iv.Failed) / (iv.End - iv.Start)
		if iv.LagMeanUS/1000 < genLagMS || done >= genRateShare*iv.Rate {
			continue
		}
		if clients := float64(iv.Clients); clients > 0 {
			// Little's law: the clients' share of time spent waiting for
			// the pool, and sleeping.
			poolBusy := done * float64(iv.PoolWaitPct.P50) / 1e6 / clients
			sleepBusy := done * sleepS[iv.Workload] / clients
			if poolBusy >= genPoolShare || sleepBusy >= genSleepShare {
				continue
			}
		}
		out = append(out, genBehindSpan{workload: iv.Workload, from: iv.Start, to: iv.End})
	}
	return out
}

// scriptSleepS is the longest time one transaction of the workload's
// scripts spends in \sleep, from the commands' mean latencies.
func scriptSleepS(run *timeline.Run, workload string) float64 {
	if run.Summary == nil {
		return 0
	}
	longest := 0.0
	for _, w := range run.Summary.Workloads {
		if w.Name != workload {
			continue
		}
		for _, sc := range w.Scripts {
			sum := 0.0
			for _, c := range sc.Commands {
				if f := strings.Fields(c.Text); len(f) > 0 && strings.EqualFold(f[0], `\sleep`) {
					sum += c.MeanUS / 1e6
				}
			}
			longest = math.Max(longest, sum)
		}
	}
	return longest
}

// genStretch is a stretch of ticks where the client was saturated while
// the server waited.
type genStretch struct {
	from, to float64
	n        int // ticks in it
	direct   int // of those, with firedrill's CPU at its cap or a workload behind its rate
}

// genStretches finds the stretches of ticks where the client was
// saturated while the server waited, one missing or contrary tick
// forgiven (samples are noisy on a shared machine).
func genStretches(ticks []genTick, tick float64) []genStretch {
	var out []genStretch
	var cur *genStretch
	misses := 0
	for i, t := range ticks {
		gap := i > 0 && t.T-ticks[i-1].T > 3*tick
		if cur != nil && gap {
			out, cur = append(out, *cur), nil
		}
		if t.ClientSaturated && t.ServerIdle {
			if cur == nil {
				cur = &genStretch{from: math.Max(0, t.T-tick)}
			}
			cur.to, misses = t.T, 0
			cur.n++
			if t.Direct {
				cur.direct++
			}
			continue
		}
		if cur != nil {
			if misses++; misses > 1 {
				out, cur = append(out, *cur), nil
			}
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// workloadSpan is how long the run's workloads ran, from the first
// interval to the last.
func workloadSpan(run *timeline.Run) float64 {
	if len(run.Intervals) == 0 {
		return diagnose.RunEnd(run)
	}
	first, last := math.Inf(1), 0.0
	for _, iv := range run.Intervals {
		first, last = math.Min(first, iv.Start), math.Max(last, iv.End)
	}
	return last - first
}

func (r generatorLimited) finding(run *timeline.Run, ticks []genTick, from, to float64) diagnose.Finding {
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Warning, Start: from, End: to}
	var cpu, sched, aas, idle, active, conns, caps []timeline.Point
	behind := map[string]bool{}
	for _, t := range ticks {
		if t.T < from || t.T > to {
			continue
		}
		cpu = append(cpu, timeline.Point{T: t.T, V: t.CPU})
		caps = append(caps, timeline.Point{T: t.T, V: t.Cap})
		if t.SchedP99 >= 0 {
			sched = append(sched, timeline.Point{T: t.T, V: t.SchedP99})
		}
		if t.AAS >= 0 {
			aas = append(aas, timeline.Point{T: t.T, V: t.AAS})
		}
		if t.HostIdle >= 0 {
			idle = append(idle, timeline.Point{T: t.T, V: t.HostIdle})
		}
		if t.Conns > 0 {
			active = append(active, timeline.Point{T: t.T, V: t.Active})
			conns = append(conns, timeline.Point{T: t.T, V: t.Conns})
		}
		for _, w := range t.Behind {
			behind[w] = true
		}
	}
	all := func(pts []timeline.Point) diagnose.Stats { return diagnose.Over(pts, from-1, to+1) }
	cpuSt, capMed, schedSt := all(cpu), diagnose.Median(caps, from-1, to+1), all(sched)
	var client []string
	cpuMed := diagnose.Median(cpu, from-1, to+1)
	gomax := diagnose.Median(run.Series(hostmetric.Self, hostmetric.SelfCPUs), from-1, to+1)
	cores := "cores"
	if capMed == 1 {
		cores = "core"
	}
	cpuText := fmt.Sprintf("firedrill used %.2f of the %.0f %s it may use", cpuMed, capMed, cores)
	if gomax > 0 {
		cpuText += fmt.Sprintf(" (GOMAXPROCS %.0f)", gomax)
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "firedrill:cpu", T: cpuSt.MaxT, Value: diagnose.Median(cpu, from-1, to+1),
		Text: fmt.Sprintf("firedrill's CPU: median %.2f cores, max %.2f, of %.0f it may use (GOMAXPROCS and host CPUs)", diagnose.Median(cpu, from-1, to+1), cpuSt.Max, capMed)})
	schedMed := diagnose.Median(sched, from-1, to+1)
	if schedSt.N > 0 {
		if schedMed >= genSchedP99MS {
			cpuText += fmt.Sprintf(", its goroutines waiting %.0f ms (p99) for a thread", schedMed)
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "firedrill:sched_latency_p99_ms", T: schedSt.MaxT, Value: schedMed,
			Text: fmt.Sprintf("Go scheduler latency p99: median %.1f ms per tick, worst %.0f ms", schedMed, schedSt.Max)})
	}
	var behindNames []string
	for w := range behind {
		behindNames = append(behindNames, w)
	}
	sort.Strings(behindNames)
	for _, w := range behindNames {
		lag := diagnose.Stats{}
		var target, done float64
		var n int
		for _, iv := range run.WorkloadIntervals(w) {
			if iv.End < from || iv.Start > to || iv.End <= iv.Start {
				continue
			}
			if lag.N == 0 || iv.LagMeanUS > lag.Max {
				lag.Max, lag.MaxT = iv.LagMeanUS, iv.End
			}
			if lag.N == 0 {
				lag.First = iv.LagMeanUS
			}
			lag.N++
			lag.Last = iv.LagMeanUS
			target += iv.Rate
			done += float64(iv.Count+iv.Failed) / (iv.End - iv.Start)
			n++
		}
		if n == 0 {
			continue
		}
		target, done = target/float64(n), done/float64(n)
		client = append(client, fmt.Sprintf("%s reached %s of its %s tx/s with schedule lag up to %s", w,
			formatRate(done), formatRate(target), formatSeconds(lag.Max/1e6)))
		f.Evidence = append(f.Evidence,
			diagnose.Evidence{Series: "workload:" + w + ".lag_mean_us", T: lag.MaxT, Value: lag.Max,
				Text: fmt.Sprintf("%s: mean schedule lag %s → %s over the window", w, formatSeconds(lag.First/1e6), formatSeconds(lag.Last/1e6))},
			diagnose.Evidence{Series: "workload:" + w + ".tps", T: to, Value: done,
				Text: fmt.Sprintf("%s: %s tx/s done (failed included) against a rate of %s", w, formatRate(done), formatRate(target))})
	}
	if len(behindNames) == 1 {
		f.Workload = behindNames[0]
	} else if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	client = append(client, cpuText)
	var server string
	if len(conns) > 0 {
		a, c := diagnose.Median(active, from-1, to+1), diagnose.Median(conns, from-1, to+1)
		server = fmt.Sprintf("only %.0f of the workloads' %.0f connections were active in the database", a, c)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_activity:app.firedrill:*.active", T: to, Value: a,
			Text: fmt.Sprintf("median %.0f of %.0f workload connections active in the database; the rest wait for the client", a, c)})
	}
	if st := all(aas); st.N > 0 {
		m := diagnose.Median(aas, from-1, to+1)
		if server == "" {
			server = fmt.Sprintf("the database had %.1f active sessions", m)
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Activity, pgmetric.AAS), T: st.MaxT, Value: m,
			Text: fmt.Sprintf("database active sessions: median %.1f, max %.0f, on %d CPUs", m, st.Max, run.Manifest.Host.CPUs)})
	}
	parts := append(client, server)
	if st := all(idle); st.N > 0 {
		m := diagnose.Median(idle, from-1, to+1)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "host:cpu.idle", T: st.MinT, Value: m,
			Text: fmt.Sprintf("host CPU idle: median %.0f %%", m)})
		if m < genHostIdlePct && cpuMed < genCPUShare*capMed {
			parts = append(parts, fmt.Sprintf("the host had %.0f %% CPU idle: other processes on the machine competed with firedrill", m))
		}
	}
	f.Headline = fmt.Sprintf("The load generator was the bottleneck for %s — these numbers describe the client, not the database: %s",
		formatSeconds(to-from), strings.Join(parts, "; "))
	f.Mechanism = "firedrill times transactions from when they were due, so time a transaction spends waiting inside the " +
		"generator — for a free CPU, for the Go scheduler, behind an arrival schedule it cannot keep — counts as latency and " +
		"caps throughput. When the database's sessions are meanwhile idle, waiting for the client's next statement, the " +
		"server had capacity left: the bottleneck is the generator and its machine."
	f.Remedy = "Give the generator room: run firedrill on another machine than the database (or pin them to separate cores), " +
		"raise GOMAXPROCS if it was lowered, and close other CPU-heavy processes; or ask for less (fewer clients, a lower " +
		"rate, or more clients to carry a rate when scripts \\sleep) and keep client-side script work (long \\set chains, \\sleep 0 loops) small. Beyond one machine, split the run " +
		"into shards (--shard i/N) on several machines and merge them."
	f.References = []string{
		"https://www.postgresql.org/docs/current/pgbench.html",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
		"https://pkg.go.dev/runtime/metrics",
	}
	return f
}
