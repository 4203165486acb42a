// Package capacity searches for the highest load a system sustains
// within its service-level objectives, and says what binds there: the
// search over steps (each a run of the scenario at one level), the
// judgement of a step, the Universal Scalability Law fitted to the
// steps, and the page that draws them. It names no kind of database:
// each step is a run through the runner, judged on its client metrics,
// the host's and firedrill's own samples, and the diagnosis's findings.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/firedrill/firedrill/diagnose"
)

// What a search varies.
const (
	VaryRate    = "rate"    // the open model: the arrival rate, tx/s
	VaryClients = "clients" // the closed model: the number of clients
)

// Defaults of Config.
const (
	DefaultTolerance = 0.02
	DefaultConfirm   = 2
	DefaultMaxSteps  = 24
	// DefaultKeptUp is the share of the offered rate the generator must
	// issue for a step to count: below it the step measured a backlog.
	DefaultKeptUp = 0.99
)

// Config is how a search goes.
type Config struct {
	Vary      string  // VaryRate or VaryClients
	Start     float64 // the first level
	Tolerance float64 // the interval at which bisection stops, relative to its low end
	Confirm   int     // runs that re-run the best passing level
	MaxSteps  int     // all runs, confirmations included
	SLOs      []SLO
	KeptUp    float64 // DefaultKeptUp when 0
}

// Bind is one thing a step's diagnosis or signals say binds it.
type Bind struct {
	Rule     string `json:"rule"` // a finding's rule, or "client" for firedrill's own CPU
	Severity string `json:"severity,omitempty"`
	Headline string `json:"headline"`
	Remedy   string `json:"remedy,omitempty"`
}

// ClientRule is Bind.Rule when firedrill itself is what binds.
const ClientRule = "client"

// Step is one run of the search.
type Step struct {
	N       int     `json:"step"`  // from 1, in the order run
	Level   float64 `json:"level"` // the rate or the clients asked for
	Confirm int     `json:"confirm,omitempty"`
	Dir     string  `json:"run_dir,omitempty"`
	Measure Measure `json:"measure"`
	// Findings are the step's diagnosis; Binds the top of it.
	Findings []diagnose.Finding `json:"-"`
	Binds    []Bind             `json:"binds,omitempty"`
	Pass     bool               `json:"pass"`
	// Why lists what failed (each SLO with its measure, the generator
	// falling behind); the met SLOs are in Met.
	Why []string `json:"why,omitempty"`
	Met []string `json:"met,omitempty"`
	// ClientLimited says firedrill itself, not the system, set the pace.
	ClientLimited bool `json:"client_limited,omitempty"`
	// HostLimited says the host's CPU, shared, bound the step with
	// neither the server nor firedrill at its own limit.
	HostLimited bool   `json:"host_limited,omitempty"`
	Err         string `json:"error,omitempty"` // the run ended badly
}

// RunStep runs the scenario at one level and returns what it measured
// (Measure, Findings, Dir); the search judges it. confirm is 0 for a
// search step, k for the k-th confirming run.
type RunStep func(ctx context.Context, level float64, confirm int) (Step, error)

// Result is what a search found.
type Result struct {
	Vary  string  `json:"vary"`
	Steps []*Step `json:"steps"`
	// Best is the highest level that passed, confirmed (when Confirmed
	// equals Config.Confirm); 0 when none passed.
	Best float64 `json:"best_level"`
	// Sustainable is the mean achieved rate at Best over its runs, and
	// Spread their range relative to it.
	Sustainable float64 `json:"sustainable_tps"`
	Spread      float64 `json:"spread"`
	Confirmed   int     `json:"confirmed"`
	// Failed is the lowest level that failed; 0 when none did.
	Failed float64 `json:"failed_level"`
	// Stopped says why the search ended.
	Stopped     string `json:"stopped"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// interrupted is Step.Err of a step cut short by the search's end.
const interrupted = "interrupted"

// ErrInterrupted is what Search returns when its context ended: the
// result holds the steps run so far.
var ErrInterrupted = errors.New("capacity search interrupted")

// Judge decides whether a step passes: every SLO met, the generator
// kept up with the offered rate, and the run ended well.
func Judge(cfg Config, s *Step) {
	s.Pass, s.Why, s.Met = true, nil, nil
	m := s.Measure
	if s.Err != "" {
		s.Pass = false
		s.Why = append(s.Why, "run: "+s.Err)
	}
	if m.Count+m.Failed == 0 {
		s.Pass = false
		s.Why = append(s.Why, "no transaction ran in the measured window")
	}
	for _, o := range cfg.SLOs {
		ok, got := o.Met(m)
		if ok {
			s.Met = append(s.Met, got)
			continue
		}
		s.Pass = false
		s.Why = append(s.Why, fmt.Sprintf("%s (SLO %s)", got, o.Text))
	}
	keptUp := cfg.KeptUp
	if keptUp == 0 {
		keptUp = DefaultKeptUp
	}
	behind := m.Behind(keptUp)
	if behind {
		s.Pass = false
		s.Why = append(s.Why, fmt.Sprintf("behind: issued %s of %s offered (%.1f %%)", Rate(m.Issued), Rate(m.Offered), 100*m.KeptUp()))
	}
	generator := slices.IndexFunc(s.Findings, func(f diagnose.Finding) bool {
		return f.Rule == generatorRule && diagnose.SeverityRank(f.Severity) <= diagnose.SeverityRank(diagnose.Warning)
	})
	// The diagnosis's generator-limited finding reads the host: on a
	// machine the server shares, a server at its CPU empties the host
	// too. When the server's CPU is sampled and saturated while
	// firedrill's own is not, the server sets the pace, not the client.
	serverBound := m.ServerBound() && !m.ClientBound(behind)
	// With the server's CPU sampled, the finding's verdict (read from the
	// host's idle CPU) holds only when firedrill used at least as much
	// of the host as the server did.
	generatorHolds := generator >= 0 && !serverBound && (m.ServerCPU < 0 || m.ClientCPU >= m.ServerCPU)
	s.ClientLimited = !s.Pass && (m.ClientBound(behind) || generatorHolds)
	// The host binds only when the diagnosis named nothing else: a pool
	// or a lock that binds on a busy host is still what binds.
	named := slices.ContainsFunc(s.Binds, func(b Bind) bool { return b.Rule != generatorRule })
	hostBound := !s.Pass && !s.ClientLimited && !serverBound && !named && m.ServerCPU >= 0 && m.HostBusy >= hostSaturatedPct && m.HostCPUs > 0
	s.HostLimited = hostBound
	switch {
	case hostBound:
		s.Binds = slices.DeleteFunc(s.Binds, func(b Bind) bool { return b.Rule == generatorRule })
		s.Binds = append([]Bind{hostBind(m)}, s.Binds...)
	case !s.Pass && serverBound:
		s.Binds = slices.DeleteFunc(s.Binds, func(b Bind) bool { return b.Rule == generatorRule })
		b := serverBind(m)
		if len(s.Binds) > 0 && s.Binds[0].Severity == diagnose.Critical {
			s.Binds = slices.Insert(s.Binds, 1, b)
		} else {
			s.Binds = append([]Bind{b}, s.Binds...)
		}
	case !s.ClientLimited:
	case m.ClientBound(behind):
		s.Binds = append([]Bind{clientBind(m)}, s.Binds...)
	default: // the diagnosis said it: its finding first, in its words
		f := s.Findings[generator]
		s.Binds = slices.DeleteFunc(s.Binds, func(b Bind) bool { return b.Rule == generatorRule })
		s.Binds = append([]Bind{{Rule: f.Rule, Severity: f.Severity, Headline: f.Headline, Remedy: f.Remedy}}, s.Binds...)
	}
}

// generatorRule is the diagnosis's finding that the load generator set
// the pace, where a kind has it.
const generatorRule = "generator-limited"

// ServerRule is Bind.Rule when the server's own CPU is what binds.
const ServerRule = "server-cpu"

// serverBind is the Bind of a failing step at which the server's CPU
// was at the cores it can use.
func serverBind(m Measure) Bind {
	h := fmt.Sprintf("the server's CPU at %.2f of the %s it can use, firedrill's at %.1f of %.0f: the server, not the client, is the limit",
		m.ServerCPU, cores(m.ServerCPUCap), m.ClientCPU, m.ClientCPUCap)
	return Bind{Rule: ServerRule, Severity: diagnose.Critical, Headline: h,
		Remedy: "give the server more CPU (cores of its own, not shared with the load generator), or make each transaction cheaper for it (the report's top statements); a server whose commands run on one thread scales out by shards or replicas, not by cores"}
}

// HostRule is Bind.Rule when the host's CPU, which the server and
// firedrill share, is what binds with neither at its own limit.
const HostRule = "host-cpu"

// hostSaturatedPct is the host's busy CPU (%) at which it binds.
const hostSaturatedPct = 95

// hostBind is the Bind of a failing step on a host with no CPU left,
// where neither the server nor firedrill reached the cores it can use:
// it names the larger of the two.
func hostBind(m Measure) Bind {
	others := max(0, m.HostBusy/100*m.HostCPUs-m.ServerCPU-m.ClientCPU)
	larger := "the server's CPU: it used more of the host than firedrill"
	switch {
	case others > m.ServerCPU+m.ClientCPU:
		larger = "the other processes on the machine: they used more of it than the server and firedrill together"
	case m.ClientCPU > m.ServerCPU:
		larger = "the client: firedrill used more of the host than the server"
	}
	h := fmt.Sprintf("the host's CPU %.0f %% busy of %.0f cores, shared: the server used %.2f, firedrill %.2f, other processes %.2f; what binds is %s",
		m.HostBusy, m.HostCPUs, m.ServerCPU, m.ClientCPU, others, larger)
	return Bind{Rule: HostRule, Severity: diagnose.Warning, Headline: h,
		Remedy: "run firedrill and the server on separate cores or machines (and nothing else beside them) to measure the server alone; the capacity found here is the shared machine's"}
}

// cores says n cores in words.
func cores(n float64) string {
	if n == 1 {
		return "1 core"
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + " cores"
}

// clientBind is the Bind of a step that firedrill's own CPU limited.
func clientBind(m Measure) Bind {
	h := "firedrill's own CPU was saturated: the client, not the system, is the limit"
	switch {
	case m.ClientCPUCap > 0 && m.ClientCPU >= clientSaturated*m.ClientCPUCap:
		h = fmt.Sprintf("firedrill's own CPU at %.1f of %.0f cores: the client, not the system, is the limit", m.ClientCPU, m.ClientCPUCap)
	case m.ClientSchedP99 > 0:
		h = fmt.Sprintf("firedrill starved of CPU: its goroutines waited %.0f ms (p99) for a thread, at %.1f of %.0f cores", m.ClientSchedP99, m.ClientCPU, m.ClientCPUCap)
		if m.HostBusy >= 0 {
			h += fmt.Sprintf(", the host %.0f %% busy", m.HostBusy)
		}
		h += ": the client, not the system, is the limit"
	}
	return Bind{Rule: ClientRule, Severity: diagnose.Critical, Headline: h,
		Remedy: "give firedrill more cores (GOMAXPROCS, a machine of its own) or split the load into shards over several machines (--shard i/N, docs/sharding.md)"}
}

// TopBinds are the findings of a step worth naming as what binds: those
// of warning severity or worse, the gravest first, at most n.
func TopBinds(findings []diagnose.Finding, n int) []Bind {
	fs := slices.Clone(findings)
	sort.SliceStable(fs, func(i, j int) bool {
		return diagnose.SeverityRank(fs[i].Severity) < diagnose.SeverityRank(fs[j].Severity)
	})
	var out []Bind
	for _, f := range fs {
		if diagnose.SeverityRank(f.Severity) > diagnose.SeverityRank(diagnose.Warning) || len(out) == n {
			break
		}
		out = append(out, Bind{Rule: f.Rule, Severity: f.Severity, Headline: f.Headline, Remedy: f.Remedy})
	}
	return out
}

// Search runs steps until the highest passing level is known within the
// tolerance and confirmed: exponential growth from Start until a step
// fails, then bisection, then Confirm re-runs of the best passing level
// (a re-run that fails makes that level the failing end and the search
// goes on below it). progress is told each step with the interval
// known after it.
func Search(ctx context.Context, cfg Config, run RunStep, progress func(s *Step, lo, hi float64)) (*Result, error) {
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Start <= 0 {
		return nil, fmt.Errorf("capacity: the starting %s must be above 0", cfg.Vary)
	}
	res := &Result{Vary: cfg.Vary}
	passed := map[float64]bool{} // level → passed every run at it
	lo, hi := 0.0, math.Inf(1)
	bounds := func() {
		lo, hi = 0, math.Inf(1)
		for l, ok := range passed {
			if !ok {
				hi = min(hi, l)
			}
		}
		for l, ok := range passed {
			if ok && l < hi {
				lo = max(lo, l)
			}
		}
	}
	rerun := map[float64]bool{} // levels re-run once because the client was the limit
	var do func(level float64, confirm int) (*Step, error)
	do = func(level float64, confirm int) (*Step, error) {
		s, err := run(ctx, level, confirm)
		if err != nil && ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		if err != nil {
			return nil, err
		}
		if ctx.Err() != nil { // the step was cut short: its measures are not the level's
			if s.Dir != "" {
				s.Level, s.N, s.Confirm = level, len(res.Steps)+1, confirm
				s.Err, s.Pass = interrupted, false
				res.Steps = append(res.Steps, &s)
			}
			return nil, ErrInterrupted
		}
		s.Level, s.N, s.Confirm = level, len(res.Steps)+1, confirm
		Judge(cfg, &s)
		res.Steps = append(res.Steps, &s)
		if !s.Pass && (s.ClientLimited || s.HostLimited) && !rerun[level] && len(res.Steps) < cfg.MaxSteps {
			// The generator, or a host whose CPU others took, not the
			// system, failed this step: it says nothing of the level
			// yet. Once more; a second time is an answer.
			rerun[level] = true
			if s.ClientLimited {
				s.Why = append(s.Why, "re-run: the client was the limit")
			} else {
				s.Why = append(s.Why, "re-run: the host's CPU was taken")
			}
			if progress != nil {
				progress(&s, lo, hi)
			}
			return do(level, confirm)
		}
		if prev, seen := passed[level]; !seen || prev {
			passed[level] = s.Pass
		}
		bounds()
		if progress != nil {
			progress(&s, lo, hi)
		}
		return &s, nil
	}
	finish := func(err error) (*Result, error) {
		res.Best, res.Failed = lo, 0
		if !math.IsInf(hi, 1) {
			res.Failed = hi
		}
		res.summarize()
		if errors.Is(err, ErrInterrupted) {
			res.Interrupted, res.Stopped = true, "interrupted"
			return res, err
		}
		return res, err
	}
	level, runLevel := cfg.Start, true
	for {
		if runLevel {
			if len(res.Steps) >= cfg.MaxSteps {
				res.Stopped = fmt.Sprintf("the limit of %d steps", cfg.MaxSteps)
				return finish(nil)
			}
			if _, err := do(level, 0); err != nil {
				return finish(err)
			}
		}
		next, done := nextLevel(cfg, lo, hi)
		if !done {
			level, runLevel = next, true
			continue
		}
		if lo == 0 {
			res.Stopped = fmt.Sprintf("nothing passed: even %s failed", Level(cfg.Vary, hi))
			return finish(nil)
		}
		// Converged: confirm the best passing level. A confirming run
		// that fails makes it the failing end, and the bounds move down.
		confirmed := true
		for k := 1; k <= cfg.Confirm; k++ {
			if len(res.Steps) >= cfg.MaxSteps {
				res.Stopped = fmt.Sprintf("the limit of %d steps, %d of %d confirming runs done", cfg.MaxSteps, k-1, cfg.Confirm)
				return finish(nil)
			}
			s, err := do(lo, k)
			if err != nil {
				return finish(err)
			}
			if !s.Pass {
				confirmed = false
				break
			}
		}
		if confirmed {
			res.Stopped = fmt.Sprintf("converged within %s", roundPct(cfg.Tolerance))
			return finish(nil)
		}
		runLevel = false
	}
}

// nextLevel is the level to run after a step, given the highest passing
// level lo (0: none yet) and the lowest failing hi (+Inf: none yet);
// done when the interval is within the tolerance (or, without a pass,
// nothing lower is worth running).
func nextLevel(cfg Config, lo, hi float64) (float64, bool) {
	integral := cfg.Vary == VaryClients
	switch {
	case math.IsInf(hi, 1):
		next := 2 * lo
		if integral {
			next = math.Max(math.Ceil(2*lo), lo+1)
		}
		return next, false
	case lo == 0:
		// Nothing passed yet: step down fast, to 1/64 of the start.
		next := roundLevel(hi/4, integral)
		if next < 1 && integral || next < cfg.Start/64 {
			return 0, true
		}
		return next, false
	}
	if hi-lo <= cfg.Tolerance*lo || integral && hi-lo <= 1 {
		return lo, true
	}
	mid := roundLevel((lo+hi)/2, integral)
	if mid <= lo || mid >= hi {
		return lo, true
	}
	return mid, false
}

// roundLevel rounds a level to what is worth asking: whole clients, and
// rates of 10/s and more to whole transactions per second.
func roundLevel(x float64, integral bool) float64 {
	switch {
	case integral:
		return math.Floor(x)
	case x >= 10:
		return math.Round(x)
	}
	return x
}

// summarize fills the sustainable rate and its spread from the runs at
// Best.
func (r *Result) summarize() {
	var xs []float64
	r.Confirmed = 0
	for _, s := range r.Steps {
		if s.Level == r.Best && s.Pass && r.Best > 0 {
			xs = append(xs, s.Measure.Achieved)
			if s.Confirm > 0 {
				r.Confirmed++
			}
		}
	}
	if len(xs) == 0 {
		return
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	r.Sustainable = sum / float64(len(xs))
	if r.Sustainable > 0 {
		r.Spread = (slices.Max(xs) - slices.Min(xs)) / r.Sustainable
	}
}

// BestStep is the first passing run at Best, nil without one.
func (r *Result) BestStep() *Step {
	for _, s := range r.Steps {
		if r.Best > 0 && s.Level == r.Best && s.Pass {
			return s
		}
	}
	return nil
}

// FailStep is the first failing run at Failed (the first failing step
// above Best), nil without one.
func (r *Result) FailStep() *Step {
	for _, s := range r.Steps {
		if r.Failed > 0 && s.Level == r.Failed && !s.Pass {
			return s
		}
	}
	return nil
}

// BindStep is the failing step that says what binds: the lowest failing
// level above Best whose diagnosis named something, else FailStep.
func (r *Result) BindStep() *Step {
	var best *Step
	for _, s := range r.Steps {
		if !s.Pass && s.Level > r.Best && len(s.Binds) > 0 && (best == nil || s.Level < best.Level) {
			best = s
		}
	}
	if best == nil {
		return r.FailStep()
	}
	return best
}

// Points are the steps as USL points: the closed model's clients, or on
// the open model the concurrency of its passing steps by Little's law
// (achieved rate × mean latency), against the achieved rate.
func (r *Result) Points() []Point {
	var pts []Point
	for _, s := range r.Steps {
		m := s.Measure
		if m.Count == 0 || s.Err != "" {
			continue
		}
		n := s.Level
		if r.Vary == VaryRate {
			// Little's law holds in a steady state: a failing step's
			// backlog is no concurrency the system ran at.
			if !s.Pass {
				continue
			}
			n = m.Achieved * meanUS(m) / 1e6
		}
		pts = append(pts, Point{N: n, X: m.Achieved})
	}
	return pts
}

// meanUS is the mean latency of the step's histogram, µs.
func meanUS(m Measure) float64 {
	if m.Latency == nil || m.Count == 0 {
		return 0
	}
	return hdr.Import(m.Latency.Snapshot()).Mean()
}

// Knee is the achieved rate of the last step, in level order, before
// latency (p99) first climbs past twice the lowest level's: where the
// system stops absorbing load for free. 0 when it never does.
func (r *Result) Knee() float64 {
	steps := slices.Clone(r.Steps)
	steps = slices.DeleteFunc(steps, func(s *Step) bool { return s.Measure.Count == 0 || s.Err != "" })
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Level < steps[j].Level })
	if len(steps) < 2 {
		return 0
	}
	base := steps[0].Measure.P99
	for i := 1; i < len(steps); i++ {
		if steps[i].Measure.P99 > 2*base {
			return steps[i-1].Measure.Achieved
		}
	}
	return 0
}

// Rate formats a rate per second with thousands separators: "4,180 tx/s".
func Rate(x float64) string {
	if x < 100 {
		return fmt.Sprintf("%.3g tx/s", x)
	}
	return thousands(math.Round(x)) + " tx/s"
}

// Level formats a level of the search: a rate, or a number of clients.
func Level(vary string, level float64) string {
	if vary == VaryClients {
		if level == 1 {
			return "1 client"
		}
		return thousands(level) + " clients"
	}
	return Rate(level)
}

// thousands formats a whole number with commas.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
