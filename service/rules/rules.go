// Package servicerules holds the diagnosis rules of the service tier
// (docs/services.md): they read the series of the source "service", the
// run's scenario (how each service was set up) and the workloads' client
// metrics, and name no kind of database. One file per rule, listed in
// Rules, which the registry of kinds adds to every kind's rules.
//
// The service's series belong to no target: in a run of several targets
// the rules run once on the whole run (diagnose.RunWide), not on each
// target's view.
package servicerules

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// Rules lists the service tier's rules, one line each: adding one is a
// file here and a line below. Their order breaks ties between findings.
func Rules() []diagnose.Rule {
	return []diagnose.Rule{
		oldestStarve{},
		saturation{},
		retryStorm{},
		throttleLag{},
		breakerFlapping{},
		hotTarget{},
	}
}

// inputs are what every rule here reads: the service's series.
var inputs = diagnose.Inputs{AnyOf: []string{svcmetric.Source}}

// wide marks the rules as reading what belongs to the whole run.
type wide struct{}

// RunWide says the rule reads the service's series, which have no target.
func (wide) RunWide() {}

// config is what a rule needs to know of one service as the run's
// scenario.yaml set it up (zero where the scenario left the default or
// could not be read).
type config struct {
	Name            string
	Instances       int
	MaxThreads      int
	AcceptCount     int
	LIFO            bool
	Timeout         float64 // seconds; 0: callers never give up
	CancelOnTimeout bool
	Cores           float64
	CPUPerRequest   float64 // seconds
	PoolSize        int
	Retry           bool
	RetryBudget     float64
	Breaker         bool
	Bulkhead        int // max concurrent calls; 0: none
	ThrottleRate    float64
	ThrottleRemote  bool
	ThrottleLag     float64 // seconds
	// Workloads are the run's workloads through the service, with the
	// target each loads ("" in a run of one).
	Workloads []timeline.WorkloadInfo
}

// svc is one service of the run: its setup and its series.
type svc struct {
	config
	run *timeline.Run
}

// series is one of the service's series (suffix: an instance's number
// or a target's name, or "").
func (s svc) series(metric, suffix string) []timeline.Point {
	return s.run.Series(svcmetric.Source, svcmetric.Key(s.Name, metric, suffix))
}

// at is the service's series as value by sample time, to line several up.
func (s svc) at(metric, suffix string) map[float64]float64 {
	out := map[float64]float64{}
	for _, p := range s.series(metric, suffix) {
		out[p.T] = p.V
	}
	return out
}

// ticks are the times of the service's samples that carry rates (every
// sample but the first).
func (s svc) ticks() []float64 {
	var out []float64
	for _, p := range s.series(svcmetric.Arrivals, "") {
		out = append(out, p.T)
	}
	return out
}

// perInstance sums a metric's series over the service's instances
// (<service>.instance.<n>.<metric>), by sample time.
func (s svc) perInstance(metric string) map[float64]float64 {
	prefix, suffix := s.Name+".instance.", "."+metric
	out := map[float64]float64{}
	for _, k := range s.run.Keys(svcmetric.Source) {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		n, ok := strings.CutSuffix(rest, suffix)
		if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		for _, p := range s.run.Series(svcmetric.Source, k) {
			out[p.T] += p.V
		}
	}
	return out
}

// suffixes lists the targets that have a series of metric (breaker
// state, bulkhead rejections).
func (s svc) suffixes(metric string) []string {
	prefix := s.Name + "." + metric + "."
	var out []string
	for _, k := range s.run.Keys(svcmetric.Source) {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}

// workloadOf is the first workload through the service that loads
// target (any, when target is "db" or unknown), to name in a finding.
func (s svc) workloadOf(target string) string {
	for _, w := range s.Workloads {
		if w.Target == target {
			return w.Name
		}
	}
	if len(s.Workloads) > 0 {
		return s.Workloads[0].Name
	}
	return ""
}

// findingTarget is the target to name in a finding about target's part
// of the service: "" in a run of one (whose series call it "db").
func (s svc) findingTarget(target string) string {
	if len(s.run.Manifest.Targets) == 0 {
		return ""
	}
	return target
}

// services lists the run's services: those of its scenario.yaml that
// have series, else every service the series name.
func services(run *timeline.Run) []svc {
	cfgs := readConfigs(run)
	named := map[string]bool{}
	for _, k := range run.Keys(svcmetric.Source) {
		if name, ok := strings.CutSuffix(k, "."+svcmetric.Arrivals); ok {
			named[name] = true
		}
	}
	var out []svc
	for _, c := range cfgs {
		if named[c.Name] {
			out = append(out, svc{config: c, run: run})
			delete(named, c.Name)
		}
	}
	var rest []string
	for name := range named {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, svc{config: config{Name: name}, run: run})
	}
	return out
}

// scenarioServices is the part of scenario.yaml the rules read.
type scenarioServices struct {
	Services []struct {
		Name            string  `yaml:"name"`
		Instances       int     `yaml:"instances"`
		MaxThreads      int     `yaml:"max_threads"`
		AcceptCount     int     `yaml:"accept_count"`
		Queue           string  `yaml:"queue"`
		Timeout         string  `yaml:"timeout"`
		CancelOnTimeout bool    `yaml:"cancel_on_timeout"`
		Cores           float64 `yaml:"cores"`
		CPUPerRequest   string  `yaml:"cpu_per_request"`
		Pool            *struct {
			Size int `yaml:"size"`
		} `yaml:"pool"`
		Retry *struct {
			Budget float64 `yaml:"budget"`
		} `yaml:"retry"`
		Breaker  *struct{} `yaml:"breaker"`
		Bulkhead *struct {
			MaxConcurrentCalls int `yaml:"max_concurrent_calls"`
		} `yaml:"bulkhead"`
		Throttle *struct {
			Rate float64 `yaml:"rate"`
			Mode string  `yaml:"mode"`
			Lag  string  `yaml:"lag"`
		} `yaml:"throttle"`
	} `yaml:"services"`
	Workloads []struct {
		Name    string `yaml:"name"`
		Service string `yaml:"service"`
	} `yaml:"workloads"`
}

// readConfigs reads the services of the run's scenario.yaml, with
// Tomcat's and Resilience4j's defaults where it left them out; none when
// it cannot be read (the rules then have only the series).
func readConfigs(run *timeline.Run) []config {
	if run.Dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(run.Dir, timeline.ScenarioFile))
	if err != nil {
		return nil
	}
	var sc scenarioServices
	if yaml.Unmarshal(b, &sc) != nil {
		return nil
	}
	var out []config
	for _, s := range sc.Services {
		c := config{Name: s.Name, Instances: s.Instances, MaxThreads: s.MaxThreads, AcceptCount: s.AcceptCount,
			LIFO: s.Queue == "lifo", Timeout: seconds(s.Timeout), CancelOnTimeout: s.CancelOnTimeout,
			Cores: s.Cores, CPUPerRequest: seconds(s.CPUPerRequest), Breaker: s.Breaker != nil}
		if c.Instances == 0 {
			c.Instances = 1
		}
		if c.MaxThreads == 0 {
			c.MaxThreads = 200
		}
		if c.AcceptCount == 0 {
			c.AcceptCount = 100
		}
		if s.Pool != nil {
			c.PoolSize = s.Pool.Size
		}
		if s.Retry != nil {
			c.Retry, c.RetryBudget = true, s.Retry.Budget
		}
		if s.Bulkhead != nil {
			c.Bulkhead = s.Bulkhead.MaxConcurrentCalls
			if c.Bulkhead == 0 {
				c.Bulkhead = 25
			}
		}
		if t := s.Throttle; t != nil {
			c.ThrottleRate, c.ThrottleRemote, c.ThrottleLag = t.Rate, t.Mode == "remote", seconds(t.Lag)
		}
		c.Workloads = workloadsOf(run, s.Name, sc)
		out = append(out, c)
	}
	return out
}

// workloadsOf lists the run's workloads through the service: as the
// manifest says (WorkloadInfo.Service), or, in a run that did not say,
// as its scenario does.
func workloadsOf(run *timeline.Run, name string, sc scenarioServices) []timeline.WorkloadInfo {
	var out []timeline.WorkloadInfo
	said := false
	for _, w := range run.Manifest.Workloads {
		said = said || w.Service != ""
		if w.Service == name {
			out = append(out, w)
		}
	}
	if said {
		return out
	}
	for _, w := range sc.Workloads {
		if w.Service != name {
			continue
		}
		for _, wi := range run.Manifest.Workloads {
			if wi.Name == w.Name {
				out = append(out, wi)
			}
		}
	}
	return out
}

// seconds reads a scenario duration ("30s", "500ms"); 0 if it is none.
func seconds(d string) float64 {
	v, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return 0
	}
	return v.Seconds()
}

// stretch is a run of consecutive ticks [from, to] (sample times), and
// how many ticks it holds.
type stretch struct {
	from, to float64
	ticks    int
}

// span is the stretch's length in seconds, counting its first tick's
// interval.
func (st stretch) span(tick float64) float64 { return st.to - st.from + tick }

// longest is the longest run of consecutive ticks for which hit holds
// (the earliest of equal ones); ok false when none does.
func longest(ticks []float64, hit func(i int) bool) (best stretch, ok bool) {
	var cur stretch
	for i, t := range ticks {
		if !hit(i) {
			cur = stretch{}
			continue
		}
		if cur.ticks == 0 {
			cur.from = t
		}
		cur.to = t
		cur.ticks++
		if cur.ticks > best.ticks {
			best, ok = cur, true
		}
	}
	return best, ok
}

// mean is the mean of m's values at the ticks within [from, to].
func mean(m map[float64]float64, ticks []float64, from, to float64) float64 {
	sum, n := 0.0, 0
	for _, t := range ticks {
		if t >= from && t <= to {
			sum += m[t]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// median is the median of m's values at the ticks within [from, to].
func median(m map[float64]float64, ticks []float64, from, to float64) float64 {
	var pts []timeline.Point
	for _, t := range ticks {
		if t >= from && t <= to {
			pts = append(pts, timeline.Point{T: t, V: m[t]})
		}
	}
	return diagnose.Median(pts, math.Inf(-1), math.Inf(1))
}

// peak is the largest of m's values at the ticks within [from, to], and when.
func peak(m map[float64]float64, ticks []float64, from, to float64) (v, at float64) {
	v = math.Inf(-1)
	for _, t := range ticks {
		if t >= from && t <= to && m[t] > v {
			v, at = m[t], t
		}
	}
	if math.IsInf(v, -1) {
		return 0, 0
	}
	return v, at
}

// total adds up a rate series over the ticks within [from, to]: each
// value covers the tick before its sample.
func total(m map[float64]float64, ticks []float64, from, to, tick float64) float64 {
	sum := 0.0
	for _, t := range ticks {
		if t >= from && t <= to {
			sum += m[t] * tick
		}
	}
	return sum
}

// humanS writes seconds for people ("42 s", "850 ms").
func humanS(s float64) string { return diagnose.HumanMS(s * 1000) }
