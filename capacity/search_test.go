package capacity

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// queue is a system of known capacity for the search's own tests (as
// vegeta tests its pacer without a server): below capacity every
// transaction is issued and takes 2 ms; above it the backlog grows, so
// the generator falls behind and the latency climbs.
type queue struct {
	capacity float64
	runs     int
	// fail makes the n-th run (from 1) fail whatever its level.
	fail int
}

func (q *queue) step(_ context.Context, level float64, _ int) (Step, error) {
	q.runs++
	h := timeline.NewHistogram()
	lat := int64(2000)
	achieved := min(level, q.capacity)
	if level > q.capacity {
		lat = int64(2000 * level / q.capacity * 20)
	}
	if q.runs == q.fail {
		lat = 900_000
	}
	for range 100 {
		h.Record(lat)
	}
	n := int64(achieved * 10)
	return Step{Measure: Measure{Seconds: 10, Count: n, Offered: level, Achieved: achieved, Issued: achieved,
		Latency: h, P50: lat, P99: lat, P999: lat}}, nil
}

func mustSLO(t *testing.T, text string) SLO {
	t.Helper()
	o, err := ParseSLO(text)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSearchFindsKnownCapacity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		vary     string
		capacity float64
		start    float64
		lo, hi   float64 // where Best must land
	}{
		// Growth 100, 200 … 1600 fails, then bisection to 2 %.
		{"open", VaryRate, 1000, 100, 980, 1000},
		// Whole clients: exactly the capacity.
		{"closed", VaryClients, 13, 1, 13, 13},
		// The start already above capacity: it steps down first.
		{"start above", VaryRate, 300, 1000, 294, 300},
	} {
		q := &queue{capacity: c.capacity}
		cfg := Config{Vary: c.vary, Start: c.start, Confirm: 2, SLOs: []SLO{mustSLO(t, "p99<10ms")}}
		var seen int
		res, err := Search(context.Background(), cfg, q.step, func(s *Step, lo, hi float64) { seen++ })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Best < c.lo || res.Best > c.hi {
			t.Errorf("%s: best %v, want in [%v, %v] (steps %d, %s)", c.name, res.Best, c.lo, c.hi, len(res.Steps), res.Stopped)
		}
		if res.Confirmed != 2 || res.Failed <= res.Best || seen != len(res.Steps) {
			t.Errorf("%s: confirmed %d, failed %v, progress %d of %d steps", c.name, res.Confirmed, res.Failed, seen, len(res.Steps))
		}
		if len(res.Steps) > 16 {
			t.Errorf("%s: %d steps, want a search of at most 16", c.name, len(res.Steps))
		}
		if res.BestStep() == nil || res.FailStep() == nil {
			t.Errorf("%s: BestStep %v, FailStep %v", c.name, res.BestStep(), res.FailStep())
		}
	}
}

// TestSearchUnconfirmed: a confirming run that fails moves the failing
// end down, and the search confirms a lower level instead.
func TestSearchUnconfirmed(t *testing.T) {
	t.Parallel()
	plain := &queue{capacity: 1000}
	res, err := Search(context.Background(), Config{Vary: VaryRate, Start: 100, Confirm: 2, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, plain.step, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Fail the first confirming run of the same search.
	firstConfirm := 0
	for i, s := range res.Steps {
		if s.Confirm == 1 {
			firstConfirm = i + 1
			break
		}
	}
	q := &queue{capacity: 1000, fail: firstConfirm}
	res2, err := Search(context.Background(), Config{Vary: VaryRate, Start: 100, Confirm: 2, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, q.step, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Best >= res.Best || res2.Failed != res.Best || res2.Confirmed != 2 {
		t.Errorf("after a failed confirmation of %v: best %v failed %v confirmed %d; want below it, confirmed twice", res.Best, res2.Best, res2.Failed, res2.Confirmed)
	}
}

func TestSearchNothingPasses(t *testing.T) {
	t.Parallel()
	q := &queue{capacity: 1}
	res, err := Search(context.Background(), Config{Vary: VaryRate, Start: 1000, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, q.step, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best != 0 || res.Sustainable != 0 || len(res.Steps) != 4 {
		t.Errorf("best %v, %d steps (%s); want none passing after 1000, 250, 62.5, 15.6", res.Best, len(res.Steps), res.Stopped)
	}
}

// TestSearchInterrupted: the steps run before Ctrl-C are kept and the
// bounds known so far are reported.
func TestSearchInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	q := &queue{capacity: 1000}
	run := func(ctx context.Context, level float64, confirm int) (Step, error) {
		if q.runs == 3 {
			cancel()
			return Step{}, context.Canceled
		}
		return q.step(ctx, level, confirm)
	}
	res, err := Search(ctx, Config{Vary: VaryRate, Start: 100, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, run, nil)
	if !errors.Is(err, ErrInterrupted) || res == nil || !res.Interrupted {
		t.Fatalf("err %v, result %+v; want ErrInterrupted with the steps so far", err, res)
	}
	if len(res.Steps) != 3 || res.Best != 400 || res.Failed != 0 {
		t.Errorf("%d steps, best %v, failed %v; want 3 steps, best 400", len(res.Steps), res.Best, res.Failed)
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	h := timeline.NewHistogram()
	for range 1000 {
		h.Record(5000)
	}
	slow := timeline.NewHistogram()
	for range 1000 {
		slow.Record(80_000)
	}
	cfg := Config{SLOs: []SLO{mustSLO(t, "p99<50ms"), mustSLO(t, "failed<0.1%")}}
	for _, c := range []struct {
		name       string
		m          Measure
		pass, cl   bool
		whyContain string
	}{
		{"met", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 100, Latency: h}, true, false, ""},
		// 2 % failed breaks the failed SLO.
		{"failures", Measure{Seconds: 30, Count: 980, Failed: 20, Offered: 100, Issued: 100, Latency: h}, false, false, "failed 2.00 %"},
		// The generator issued 90 of 100/s with its CPU idle: the system
		// is behind, not the client.
		{"behind", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 90, Latency: h, ClientCPU: 0.2, ClientCPUCap: 2}, false, false, "behind"},
		// Behind with firedrill's CPU at 1.9 of 2 cores: the client.
		{"client", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 90, Latency: h, ClientCPU: 1.9, ClientCPUCap: 2}, false, true, "behind"},
		// 99 of 100/s over 30 s is within the Poisson noise of 3,000
		// arrivals: not behind.
		{"noise", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 98, Latency: h}, true, false, ""},
		// Behind with firedrill's goroutines waiting 40 ms for a thread
		// (a host busy with other work): the client, starved.
		{"starved", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 90, Latency: h, ClientCPU: 0.2, ClientCPUCap: 2, ClientSchedP99: 40}, false, true, "behind"},
		// Starved but keeping up, failing a latency SLO: the system's.
		{"starved, kept up", Measure{Seconds: 30, Count: 1000, Offered: 100, Issued: 100, Latency: slow, ClientSchedP99: 40}, false, false, "p99"},
		// A closed model has nothing offered to keep up with.
		{"closed", Measure{Count: 1000, Latency: h, ClientCPU: 1.9, ClientCPUCap: 2}, true, false, ""},
	} {
		s := Step{Measure: c.m}
		Judge(cfg, &s)
		if s.Pass != c.pass || s.ClientLimited != c.cl {
			t.Errorf("%s: pass %v client-limited %v (why %q), want %v %v", c.name, s.Pass, s.ClientLimited, s.Why, c.pass, c.cl)
		}
		if c.whyContain != "" && (len(s.Why) == 0 || !contains(s.Why, c.whyContain)) {
			t.Errorf("%s: why %q lacks %q", c.name, s.Why, c.whyContain)
		}
		if c.cl && (len(s.Binds) == 0 || s.Binds[0].Rule != ClientRule) {
			t.Errorf("%s: binds %+v, want the client first", c.name, s.Binds)
		}
	}
}

func contains(list []string, sub string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
}

func TestNextLevel(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		vary     string
		lo, hi   float64
		next     float64
		done     bool
		question string
	}{
		{VaryRate, 100, inf, 200, false, "growth doubles"},
		{VaryRate, 800, 1600, 1200, false, "bisection halves"},
		{VaryRate, 1000, 1019, 1000, true, "within 2 %"},
		{VaryClients, 4, 5, 4, true, "adjacent clients"},
		{VaryClients, 4, 7, 5, false, "whole clients"},
		{VaryClients, 0, 1, 0, true, "one client failed"},
	} {
		next, done := nextLevel(Config{Vary: c.vary, Start: 1, Tolerance: 0.02}, c.lo, c.hi)
		if next != c.next || done != c.done {
			t.Errorf("%s: nextLevel(%v, %v) = %v, %v; want %v, %v", c.question, c.lo, c.hi, next, done, c.next, c.done)
		}
	}
}

// TestJudgeGeneratorFinding: a kind's generator-limited finding marks a
// failing step as the client's, and binds in its own words, first.
func TestJudgeGeneratorFinding(t *testing.T) {
	t.Parallel()
	h := timeline.NewHistogram()
	h.Record(900_000)
	findings := []diagnose.Finding{
		{Rule: "lock-contention", Severity: diagnose.Warning, Headline: "rows"},
		{Rule: "generator-limited", Severity: diagnose.Warning, Headline: "the host had 0 % CPU idle", Remedy: "shards"},
	}
	s := Step{Measure: Measure{Seconds: 10, Count: 1, Latency: h}, Findings: findings, Binds: TopBinds(findings, 3)}
	Judge(Config{SLOs: []SLO{mustSLO(t, "p99<50ms")}}, &s)
	if s.Pass || !s.ClientLimited || len(s.Binds) != 2 || s.Binds[0].Rule != "generator-limited" || s.Binds[1].Rule != "lock-contention" {
		t.Errorf("pass %v client %v binds %+v; want failing, the client's, generator-limited first and once", s.Pass, s.ClientLimited, s.Binds)
	}
}

// TestSearchRerunsClientLimited: a step the generator failed (firedrill
// starved) is run once more before its level counts as failing.
func TestSearchRerunsClientLimited(t *testing.T) {
	t.Parallel()
	q := &queue{capacity: 1000}
	run := func(ctx context.Context, level float64, confirm int) (Step, error) {
		s, err := q.step(ctx, level, confirm)
		if q.runs == 1 { // the first step: behind, firedrill at its cores
			s.Measure.Issued, s.Measure.ClientCPU, s.Measure.ClientCPUCap = level/2, 2, 2
		}
		return s, err
	}
	res, err := Search(context.Background(), Config{Vary: VaryRate, Start: 400, Confirm: 1, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Steps[0].ClientLimited || res.Steps[1].Level != 400 || !res.Steps[1].Pass || res.Best < 980 {
		t.Errorf("steps %v…, best %v: want 400 re-run after the client failed it, then the search on to ~1000", res.Steps[:2], res.Best)
	}
}

// TestJudgeServerCPU: a failing step at which the server's CPU was at
// the cores it can use while firedrill's was not is the server's, even
// when the diagnosis blamed the generator by the host's idle CPU; with
// the server's CPU unsampled or idle, the finding stands.
func TestJudgeServerCPU(t *testing.T) {
	t.Parallel()
	h := timeline.NewHistogram()
	h.Record(900_000)
	findings := []diagnose.Finding{{Rule: "generator-limited", Severity: diagnose.Warning, Headline: "the host had 0 % CPU idle"}}
	for _, c := range []struct {
		server, serverCap, client float64
		want                      string
		clientLimited             bool
	}{
		{0.97, 1, 0.2, ServerRule, false},        // Redis's one thread saturated
		{1.8, 2, 0.3, ServerRule, false},         // PostgreSQL on both cores
		{0.3, 1, 0.5, "generator-limited", true}, // the server had room, firedrill used more
		{-1, 0, 0.2, "generator-limited", true},  // unsampled
		{0.95, 1, 1.9, ClientRule, true},         // both saturated: firedrill at its cores
	} {
		s := Step{Measure: Measure{Seconds: 10, Count: 1, Latency: h, ServerCPU: c.server, ServerCPUCap: c.serverCap, ClientCPU: c.client, ClientCPUCap: 2},
			Findings: findings, Binds: TopBinds(findings, 3)}
		Judge(Config{SLOs: []SLO{mustSLO(t, "p99<50ms")}}, &s)
		if s.Pass || s.ClientLimited != c.clientLimited || len(s.Binds) == 0 || s.Binds[0].Rule != c.want {
			t.Errorf("server %.2f of %v, client %.1f: client-limited %v, binds %+v; want %v first", c.server, c.serverCap, c.client, s.ClientLimited, s.Binds, c.want)
		}
		if c.want == ServerRule && !strings.Contains(Signals(s.Measure), "server CPU") {
			t.Errorf("signals %q do not name the server's CPU", Signals(s.Measure))
		}
	}
}

// TestJudgeHostCPU: a failing step on a host with no CPU left, neither
// the server nor firedrill at its own limit, names the host and the
// larger user of it; the generator's finding does not make it the
// client's when the server used more.
func TestJudgeHostCPU(t *testing.T) {
	t.Parallel()
	h := timeline.NewHistogram()
	h.Record(900_000)
	findings := []diagnose.Finding{{Rule: "generator-limited", Severity: diagnose.Warning, Headline: "the host had 0 % CPU idle"}}
	pool := diagnose.Finding{Rule: "connection-saturation", Severity: diagnose.Warning, Headline: "pool"}
	for _, c := range []struct {
		server, client float64
		want           string
	}{
		{1.2, 0.3, "the server's CPU"},
		{0.3, 1.2, "the client"},
		{0.2, 0.1, "the other processes"},
	} {
		step := func(fs []diagnose.Finding) Step {
			s := Step{Measure: Measure{Seconds: 10, Count: 1, Latency: h, ServerCPU: c.server, ServerCPUCap: 2, ClientCPU: c.client, ClientCPUCap: 2,
				HostCPUs: 2, HostBusy: 100}, Findings: fs, Binds: TopBinds(fs, 3)}
			Judge(Config{SLOs: []SLO{mustSLO(t, "p99<50ms")}}, &s)
			return s
		}
		s := step(findings)
		client := c.client > c.server
		if s.ClientLimited != client {
			t.Errorf("server %.1f client %.1f: client-limited %v, want %v", c.server, c.client, s.ClientLimited, client)
		}
		if client {
			continue
		}
		if len(s.Binds) != 1 || s.Binds[0].Rule != HostRule || !strings.Contains(s.Binds[0].Headline, c.want) {
			t.Errorf("server %.1f client %.1f: binds %+v; want host-cpu naming %s, alone", c.server, c.client, s.Binds, c.want)
		}
		// A pool the diagnosis names binds on a busy host, not the host.
		pooled := step(append([]diagnose.Finding{pool}, findings...))
		if pooled.HostLimited || pooled.Binds[0].Rule != pool.Rule {
			t.Errorf("with the pool named: host-limited %v, binds %+v; want the pool first", pooled.HostLimited, pooled.Binds)
		}
	}
}

// TestSearchRerunsHostLimited: a step that failed on a host whose CPU
// other processes took (neither the server nor firedrill at its limit)
// is run once more before its level counts as failing.
func TestSearchRerunsHostLimited(t *testing.T) {
	t.Parallel()
	q := &queue{capacity: 1000}
	run := func(ctx context.Context, level float64, confirm int) (Step, error) {
		s, err := q.step(ctx, level, confirm)
		if q.runs == 1 { // the first step: behind on a host 100 % busy
			s.Measure.Issued, s.Measure.HostBusy, s.Measure.HostCPUs = level/2, 100, 2
			s.Measure.ServerCPU, s.Measure.ServerCPUCap, s.Measure.ClientCPU, s.Measure.ClientCPUCap = 0.6, 2, 0.2, 2
		}
		return s, err
	}
	res, err := Search(context.Background(), Config{Vary: VaryRate, Start: 400, Confirm: 1, SLOs: []SLO{mustSLO(t, "p99<10ms")}}, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Steps[0].HostLimited || res.Steps[0].Binds[0].Rule != HostRule || res.Steps[1].Level != 400 || !res.Steps[1].Pass || res.Best < 980 {
		t.Errorf("steps %v…, best %v: want 400 re-run after the host failed it, then the search on to ~1000", res.Steps[:2], res.Best)
	}
}
