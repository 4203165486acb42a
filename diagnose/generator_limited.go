package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// generatorLimited finds runs whose pace was set by firedrill itself: its
// own CPU at the cores it may use, its goroutines waiting for a thread,
// or an arrival rate its clients could not keep — while the database's
// sessions sat waiting for the client, or while the workload's own
// clients were all busy (too few for the rate). Then the numbers describe
// the client, not the database. The judgement is neutral; each kind says
// how busy its server was (GeneratorServer) and registers the rule with
// GeneratorLimited.
type generatorLimited struct{ srv GeneratorServer }

var _ Rule = generatorLimited{}

// GeneratorServer is a kind's view of its server for generator-limited:
// how many of the workloads' sessions were active in the database at a
// moment. A zero GeneratorServer knows nothing of the server: the rule
// then judges by the client alone (its CPU at its cap, its clients all
// busy behind their rate).
type GeneratorServer struct {
	// Sources are the sampled sources At reads.
	Sources []string
	// At tells what the server's sampled sessions were doing near t.
	At func(run *timeline.Run, t float64) ServerSessions
	// References are the kind's pages on what the rule reads of it, before
	// the Go runtime's metrics page every finding cites.
	References []string
}

// ServerSessions is what a kind's samples say of the database's sessions
// at one moment.
type ServerSessions struct {
	// Active and Conns are the workloads' sessions active in the database
	// and all of them; Conns 0 when the kind cannot tell its workloads'
	// sessions apart.
	Active, Conns float64
	// Sessions is the server's active sessions (all of them), -1 unknown.
	Sessions float64
	// ActiveSeries and SessionsSeries name the series, for the evidence.
	ActiveSeries, SessionsSeries string
}

// GeneratorLimited is the generator-limited rule with a kind's view of
// its server: one line in each kind's Rules.
func GeneratorLimited(srv GeneratorServer) Rule { return generatorLimited{srv: srv} }

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

// Too few clients for a rate is told by client metrics alone, so the rule
// always runs; firedrill's own samples, the host's and the kind's server
// view add the generator's side.
func (r generatorLimited) Inputs() Inputs {
	return Inputs{Also: append([]string{hostmetric.Self, hostmetric.Host}, r.srv.Sources...)}
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
	AtCap           bool    // firedrill's CPU at its cap
	Direct          bool    // AtCap, or a workload behind its rate
	ClientSaturated bool    // Direct, or its goroutines waiting long for a thread
	ServerKnown     bool    // the kind's samples tell the server's side at this moment
	ServerIdle      bool    // most of the workloads' connections not active on the server
}

// limited says whether the tick counts toward a stretch: the client
// saturated while the server waited, or, where the server's side is
// unknown, firedrill's CPU at its cap.
func (t genTick) limited() bool {
	return t.ClientSaturated && t.ServerIdle || !t.ServerKnown && t.AtCap
}

func (r generatorLimited) Check(run *timeline.Run) []Finding {
	ticks := genTicks(run, r.srv)
	if len(ticks) == 0 {
		return r.tooFewClients(run, nil)
	}
	span := workloadSpan(run)
	best := genStretch{}
	for _, st := range genStretches(ticks, Tick(run)) {
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
		return r.tooFewClients(run, nil)
	}
	f := r.finding(run, ticks, best.from, best.to)
	return append([]Finding{f}, r.tooFewClients(run, &f)...)
}

// genTicks reads, per firedrill sample, the client's and the server's state.
func genTicks(run *timeline.Run, srv GeneratorServer) []genTick {
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
		if h := SampleNear(run, hostmetric.Host, s.T, 0.6*Tick(run)); h != nil {
			if v, ok := h.Values["cpus"]; ok && v > 0 {
				cores = v
			}
			if v, ok := h.Values["cpu.idle"]; ok {
				t.HostIdle = v
			}
		}
		t.Cap = cores
		for _, limit := range []float64{gomax * b2f(okMax), s.Values[hostmetric.SelfAffinity], s.Values[hostmetric.SelfQuota]} {
			if limit > 0 && (t.Cap <= 0 || limit < t.Cap) {
				t.Cap = limit
			}
		}
		for _, b := range behind {
			if b.from <= s.T && s.T <= b.to+Tick(run) {
				t.Behind = append(t.Behind, b.workload)
			}
		}
		t.AtCap = okCPU && t.Cap > 0 && cpu >= genCPUShare*t.Cap
		t.Direct = t.AtCap || len(t.Behind) > 0
		t.ClientSaturated = t.Direct || t.SchedP99 >= genSchedP99MS
		// The server's side at the same moment, as the kind tells it.
		if srv.At != nil {
			a := srv.At(run, s.T)
			t.AAS, t.Active, t.Conns = a.Sessions, a.Active, a.Conns
		}
		switch {
		case t.Conns > 0:
			t.ServerKnown, t.ServerIdle = true, t.Active <= genActiveShare*t.Conns
		case t.AAS >= 0 && cores > 0:
			t.ServerKnown, t.ServerIdle = true, t.AAS <= genActiveShare*cores
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
		if t.limited() {
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
		return RunEnd(run)
	}
	first, last := math.Inf(1), 0.0
	for _, iv := range run.Intervals {
		first, last = math.Min(first, iv.Start), math.Max(last, iv.End)
	}
	return last - first
}

func (r generatorLimited) finding(run *timeline.Run, ticks []genTick, from, to float64) Finding {
	f := Finding{Rule: r.ID(), Severity: Warning, Start: from, End: to}
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
	all := func(pts []timeline.Point) Stats { return Over(pts, from-1, to+1) }
	cpuSt, capMed, schedSt := all(cpu), Median(caps, from-1, to+1), all(sched)
	var client []string
	cpuMed := Median(cpu, from-1, to+1)
	cores := "cores"
	if capMed == 1 {
		cores = "core"
	}
	cpuText := fmt.Sprintf("firedrill used %.2f of the %s %s it may use", cpuMed, HumanNum(capMed), cores)
	if limit := cpuLimit(run, from, to); limit != "" {
		cpuText += " (" + limit + ")"
	}
	f.Evidence = append(f.Evidence, Evidence{Series: "firedrill:cpu", T: cpuSt.MaxT, Value: Median(cpu, from-1, to+1),
		Text: fmt.Sprintf("firedrill's CPU: median %.2f cores, max %.2f, of %.0f it may use (GOMAXPROCS and host CPUs)", Median(cpu, from-1, to+1), cpuSt.Max, capMed)})
	schedMed := Median(sched, from-1, to+1)
	if schedSt.N > 0 {
		if schedMed >= genSchedP99MS {
			cpuText += fmt.Sprintf(", its goroutines waiting %.0f ms (p99) for a thread", schedMed)
		}
		f.Evidence = append(f.Evidence, Evidence{Series: "firedrill:sched_latency_p99_ms", T: schedSt.MaxT, Value: schedMed,
			Text: fmt.Sprintf("Go scheduler latency p99: median %.1f ms per tick, worst %.0f ms", schedMed, schedSt.Max)})
	}
	var behindNames []string
	for w := range behind {
		behindNames = append(behindNames, w)
	}
	sort.Strings(behindNames)
	for _, w := range behindNames {
		lag := Stats{}
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
			rateText(done), rateText(target), SecondsText(lag.Max/1e6)))
		f.Evidence = append(f.Evidence,
			Evidence{Series: "workload:" + w + ".lag_mean_us", T: lag.MaxT, Value: lag.Max,
				Text: fmt.Sprintf("%s: mean schedule lag %s → %s over the window", w, SecondsText(lag.First/1e6), SecondsText(lag.Last/1e6))},
			Evidence{Series: "workload:" + w + ".tps", T: to, Value: done,
				Text: fmt.Sprintf("%s: %s tx/s done (failed included) against a rate of %s", w, rateText(done), rateText(target))})
	}
	if len(behindNames) == 1 {
		f.Workload = behindNames[0]
	} else if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	client = append(client, cpuText)
	var server string
	if len(conns) > 0 {
		a, c := Median(active, from-1, to+1), Median(conns, from-1, to+1)
		server = fmt.Sprintf("only %.0f of the workloads' %.0f connections were active in the database", a, c)
		f.Evidence = append(f.Evidence, Evidence{Series: r.srv.at(run, to).ActiveSeries, T: to, Value: a,
			Text: fmt.Sprintf("median %.0f of %.0f workload connections active in the database; the rest wait for the client", a, c)})
	}
	if st := all(aas); st.N > 0 {
		m := Median(aas, from-1, to+1)
		if server == "" {
			server = fmt.Sprintf("the database had %.1f active sessions", m)
		}
		f.Evidence = append(f.Evidence, Evidence{Series: r.srv.at(run, to).SessionsSeries, T: st.MaxT, Value: m,
			Text: fmt.Sprintf("database active sessions: median %.1f, max %.0f, on %d CPUs", m, st.Max, run.Manifest.Host.CPUs)})
	}
	parts := append(client, server)
	if st := all(idle); st.N > 0 {
		m := Median(idle, from-1, to+1)
		f.Evidence = append(f.Evidence, Evidence{Series: "host:cpu.idle", T: st.MinT, Value: m,
			Text: fmt.Sprintf("host CPU idle: median %.0f %%", m)})
		if m < genHostIdlePct && cpuMed < genCPUShare*capMed {
			parts = append(parts, fmt.Sprintf("the host had %.0f %% CPU idle: other processes on the machine competed with firedrill", m))
		}
	}
	f.Headline = fmt.Sprintf("The load generator was the bottleneck for %s — these numbers describe the client, not the database: %s",
		SecondsText(to-from), strings.Join(parts, "; "))
	f.Mechanism = "firedrill times transactions from when they were due, so time a transaction spends waiting inside the " +
		"generator — for a free CPU, for the Go scheduler, behind an arrival schedule it cannot keep — counts as latency and " +
		"caps throughput. When the database's sessions are meanwhile idle, waiting for the client's next statement, the " +
		"server had capacity left: the bottleneck is the generator and its machine."
	f.Remedy = "Give the generator room: run firedrill on another machine than the database (or pin them to separate cores), " +
		"raise GOMAXPROCS if it was lowered, and close other CPU-heavy processes; or ask for less (fewer clients, a lower " +
		"rate, or more clients to carry a rate when scripts \\sleep) and keep client-side script work (long \\set chains, \\sleep 0 loops) small. Beyond one machine, split the run " +
		"into shards (--shard i/N) on several machines and merge them."
	f.References = append(slices.Clone(r.srv.References), "https://pkg.go.dev/runtime/metrics")
	return f
}

// at is the server's activity near t, Sessions -1 when the kind tells none.
func (srv GeneratorServer) at(run *timeline.Run, t float64) ServerSessions {
	if srv.At == nil {
		return ServerSessions{Sessions: -1}
	}
	return srv.At(run, t)
}

// SecondsText writes a duration for people: "42 s", "3.5 min", "2.1 h".
func SecondsText(s float64) string {
	switch {
	case s < 0:
		return "?"
	case s < 10:
		return fmt.Sprintf("%.1f s", s)
	case s < 120:
		return fmt.Sprintf("%.0f s", s)
	case s < 7200:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.1f h", s/3600)
}

// rateText writes a per-second figure: "12.9k", "340", "2.5".
func rateText(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 100:
		return HumanNum(math.Round(v))
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// cpuLimit says which bound held the CPUs firedrill may use over
// [from, to]: the host's online CPUs, its affinity mask, its cgroup's
// quota or GOMAXPROCS, the smallest; "" when nothing was recorded.
func cpuLimit(run *timeline.Run, from, to float64) string {
	med := func(source, key string) float64 { return Median(run.Series(source, key), from-1, to+1) }
	host := med(hostmetric.Host, hostmetric.CPUs)
	if host <= 0 {
		host = med(hostmetric.Self, hostmetric.SelfOnline)
	}
	if host <= 0 {
		host = float64(run.Manifest.Host.CPUs)
	}
	gomax := med(hostmetric.Self, hostmetric.SelfCPUs)
	affinity, quota := med(hostmetric.Self, hostmetric.SelfAffinity), med(hostmetric.Self, hostmetric.SelfQuota)
	hostText := fmt.Sprintf("the host's %s CPUs", HumanNum(host))
	// The smallest bound; on a tie the one that sets the others: the host,
	// then the affinity mask and the quota (Go derives GOMAXPROCS from
	// them), GOMAXPROCS last.
	type bound struct {
		v    float64
		text string
	}
	bounds := []bound{
		{host, hostText},
		{affinity, fmt.Sprintf("its CPU affinity: %s of %s", HumanNum(affinity), hostText)},
		{quota, fmt.Sprintf("its cgroup's CPU quota of %s cores, on %s", HumanNum(quota), hostText)},
		{gomax, fmt.Sprintf("GOMAXPROCS %s, below %s", HumanNum(gomax), hostText)},
	}
	best := bound{}
	for _, b := range bounds {
		if b.v > 0 && (best.v <= 0 || b.v < best.v-1e-9) {
			best = b
		}
	}
	if best.v <= 0 {
		return ""
	}
	if best.text == hostText && gomax > 0 {
		return fmt.Sprintf("%s (GOMAXPROCS %s)", hostText, HumanNum(gomax))
	}
	return best.text
}
