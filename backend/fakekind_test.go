package backend_test

// A fourth kind of database, defined here in test code alone, runs through
// the whole pipeline (runner, diagnose, the HTML report, compare) beside
// PostgreSQL in one registry: the proof that adding a kind is its own
// folder plus one registration line, and touches no neutral package.
//
// The kind, "kvstub", is a key-value "server" inside the test process: a
// struct that counts the commands its clients send and sleeps a
// configured time on each (target.settings.delay_ms). It is a test of the
// seam, not of a database: what a database does is tested against real
// servers in db/<kind>/.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// The fake kind's names: its kind, its one sampled source and that
// source's keys (what a kind's metric leaf would hold).
const (
	stubKind       = "kvstub"
	stubSource     = "kvstub_server"
	stubOps        = "ops_per_s"     // commands answered per second
	stubSlow       = "slow_commands" // commands slower than stubSlowAfter in the interval
	stubBusy       = "busy_clients"  // clients inside a command now
	stubRule       = "kvstub-slow-commands"
	stubChart      = "kvstub-ops"
	stubSlowAfter  = 5 * time.Millisecond
	stubSlowLabel  = "commands slower than 5 ms"
	stubProduct    = "KV Stub"
	stubFindingMsg = "the stub server answered slowly"
)

// stubBackend is the fake kind: a Backend with what the report, compare
// and diagnosis need of a kind, all as data on it.
type stubBackend struct{}

var (
	_ backend.Backend   = stubBackend{}
	_ backend.Ruled     = stubBackend{}
	_ present.Presenter = stubBackend{}
)

func (stubBackend) Kind() string { return stubKind }

// Open starts the in-process server; there is no given one (no schemes).
func (stubBackend) Open(_ context.Context, spec backend.Spec) (backend.Target, error) {
	delay := time.Duration(0)
	if v, ok := spec.Scenario.Target.Settings["delay_ms"]; ok {
		ms, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("kvstub: target.settings.delay_ms %q: %w", v, err)
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	return &stubTarget{server: &stubServer{delay: delay}}, nil
}

// Rules are the kind's own: one.
func (stubBackend) Rules() []diagnose.Rule { return []diagnose.Rule{slowCommandsRule{}} }

// Presentation is the kind's report chart and compare counters.
func (stubBackend) Presentation() present.Kind {
	return present.Kind{
		Product: stubProduct,
		Charts: []present.Chart{
			{Drawn: present.DrawnThroughput},
			{Drawn: present.DrawnLatency},
			{
				ID: stubChart, Title: "Stub commands",
				Help: "Commands the stub server answered per second, and those slower than 5 ms.",
				Axes: []present.Axis{{Label: "commands/s", Unit: "rate", Min: present.Zero()}},
				What: "stub commands",
				Series: []present.Series{
					{Source: stubSource, Key: stubOps, Label: "answered", Color: "#1f77b4", Width: 2},
					{Source: stubSource, Key: stubSlow, Label: "slow", Color: "#d62728", Width: 1},
				},
			},
		},
		Load: &present.Load{
			Title: "Stub commands per second", Help: "Commands the stub server answered per second.",
			Axis:   present.Axis{Label: "commands/s", Unit: "rate", Min: present.Zero()},
			Source: stubSource, Key: stubOps,
		},
		Compare: &present.Compare{
			StallMS: 100,
			Counters: []present.Counter{
				{Source: stubSource, Key: stubSlow, Label: stubSlowLabel, Agg: present.Sum},
				{Source: stubSource, Key: stubOps, Label: "commands per second", Unit: "/s", Agg: present.Mean},
			},
		},
	}
}

// stubServer is the in-process "server": it counts commands and holds
// each one for delay.
type stubServer struct {
	delay            time.Duration
	answered, slow   atomic.Int64
	busy             atomic.Int64
	setupDone, close atomic.Bool
}

// exec answers one command.
func (s *stubServer) exec(ctx context.Context) error {
	if s.close.Load() {
		return &engine.DBError{Code: "closed", Err: errors.New("kvstub: the server is closed"), Fault: engine.Unavailable}
	}
	s.busy.Add(1)
	defer s.busy.Add(-1)
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.answered.Add(1)
	// Counted by the hold it was given, not by the clock: a noisy
	// machine must not make the fast run slow.
	if s.delay >= stubSlowAfter {
		s.slow.Add(1)
	}
	return nil
}

// stubTarget is a run's stub server.
type stubTarget struct{ server *stubServer }

var (
	_ backend.Target  = (*stubTarget)(nil)
	_ backend.Sampled = (*stubTarget)(nil)
)

func (t *stubTarget) Info() timeline.Target {
	return timeline.Target{Kind: stubKind, Embedded: true, Address: "in-process", ServerVersion: "1.0", Product: stubProduct}
}

func (t *stubTarget) Setup(context.Context) error {
	t.server.setupDone.Store(true)
	return nil
}

func (t *stubTarget) Workload(*scenario.Workload, []*script.Script, string) (backend.Workload, error) {
	return backend.Workload{Target: stubClients{t.server}, Mode: "stub"}, nil
}

func (t *stubTarget) Close(bool) error {
	t.server.close.Store(true)
	return nil
}

// Samplers: one server source, scheduled by the shared cadence.
func (t *stubTarget) Samplers(context.Context, time.Duration) (*backend.Sampling, error) {
	return &backend.Sampling{
		Sources: sampler.Schedule([]sampler.Sampler{&stubSampler{server: t.server}}, nil),
		Close:   func() error { return nil },
	}, nil
}

// stubClients is the engine's target of a workload on the stub server.
type stubClients struct{ server *stubServer }

func (c stubClients) Connect(context.Context, int) (engine.Conn, error) {
	return &stubConn{server: c.server}, nil
}

// stubConn is one client's session.
type stubConn struct {
	server *stubServer
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (c *stubConn) Exec(ctx context.Context, _ *script.Command, _ *script.Vars) error {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	defer cancel()
	return c.server.exec(ctx)
}

func (c *stubConn) Reset(context.Context) error { return nil }

func (c *stubConn) Interrupt(bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *stubConn) Close() error { return nil }

// stubSampler reads the stub server's counters.
type stubSampler struct {
	server   *stubServer
	counters sampler.Counters
}

var (
	_ sampler.Sampler   = (*stubSampler)(nil)
	_ sampler.Momentary = (*stubSampler)(nil)
)

func (*stubSampler) Name() string    { return stubSource }
func (*stubSampler) EveryTick() bool { return true }

func (s *stubSampler) Sample(context.Context) (map[string]float64, any, error) {
	iv := s.counters.Next(time.Now(), map[string]float64{
		"answered": float64(s.server.answered.Load()),
		"slow":     float64(s.server.slow.Load()),
	})
	values := map[string]float64{stubBusy: float64(s.server.busy.Load())}
	if v, ok := iv.Rate("answered"); ok {
		values[stubOps] = v
	}
	if v, ok := iv.Delta("slow"); ok {
		values[stubSlow] = v
	}
	return values, nil, nil
}

// slowCommandsRule reports a run whose stub server answered slowly.
type slowCommandsRule struct{}

var _ diagnose.Rule = slowCommandsRule{}

func (slowCommandsRule) ID() string { return stubRule }

func (slowCommandsRule) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{stubSource}}
}

func (slowCommandsRule) Check(run *timeline.Run) []diagnose.Finding {
	total, first, last := 0.0, -1.0, 0.0
	for _, p := range run.Series(stubSource, stubSlow) {
		if p.V > 0 && first < 0 {
			first = p.T
		}
		total += p.V
		last = p.T
	}
	if total == 0 {
		return nil
	}
	return []diagnose.Finding{{
		Rule: stubRule, Severity: diagnose.Warning, Start: first, End: last,
		Headline:  fmt.Sprintf("%s: %.0f commands took over 5 ms", stubFindingMsg, total),
		Evidence:  []diagnose.Evidence{{Series: stubSource + ":" + stubSlow, T: first, Value: total}},
		Mechanism: "The stub holds every command for target.settings.delay_ms.",
		Remedy:    "Set target.settings.delay_ms to 0.",
	}}
}

// stubScenario is a short run on the stub server holding each command
// for delayMS.
func stubScenario(t *testing.T, reg *backend.Registry, delayMS int) *scenario.Scenario {
	t.Helper()
	src := fmt.Sprintf(`name: stub-%d
duration: 2s
sample_interval: 250ms
target: {kind: %s, settings: {delay_ms: "%d"}}
workloads:
  - name: kv
    clients: 2
    scripts:
      - inline: |
          SELECT 1;
`, delayMS, stubKind, delayMS)
	sc, err := scenario.Parse("stub.yaml", []byte(src), reg.ScenarioOptions())
	if err != nil {
		t.Fatalf("parse the stub scenario: %v", err)
	}
	return sc
}

// runStub runs the stub scenario and reads the run back with its findings.
func runStub(t *testing.T, reg *backend.Registry, delayMS int) (*timeline.Run, []diagnose.Finding) {
	t.Helper()
	var log bytes.Buffer
	res, err := runner.Run(context.Background(), runner.Options{
		Scenario: stubScenario(t, reg, delayMS), Backends: reg, RunDir: t.TempDir() + "/run", Log: &log,
	})
	if err != nil {
		t.Fatalf("run on the stub kind: %v\nlog:\n%s", err, log.String())
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Status != timeline.StatusCompleted {
		t.Fatalf("status %q\nlog:\n%s", run.Manifest.Status, log.String())
	}
	if run.Manifest.Target.Kind != stubKind {
		t.Errorf("run.json's kind %q, want %s", run.Manifest.Target.Kind, stubKind)
	}
	if len(run.Series(stubSource, stubOps)) == 0 {
		t.Errorf("no %s:%s samples: the runner did not read the kind's sampler", stubSource, stubOps)
	}
	return run, diagnose.Diagnose(run, reg.Rules(run.Manifest.Target.Kind))
}

func TestAFourthKindRunsThroughTheSeam(t *testing.T) {
	t.Parallel()
	// The registration: PostgreSQL (the default kind) and the fake
	// kind, one line each. PostgreSQL is not started: no scenario here
	// names it.
	reg := backend.NewRegistry(postgres.New(), stubBackend{})
	kinds := present.KindsOf(reg.Default(), reg.Backends())

	fast, fastFindings := runStub(t, reg, 0)
	slow, slowFindings := runStub(t, reg, 20)

	// Diagnose ran the kind's rule (and the neutral ones), not
	// PostgreSQL's: only the slow run has the kind's finding.
	if hasRule(fastFindings, stubRule) {
		t.Errorf("the fast run has a %s finding: %v", stubRule, fastFindings)
	}
	if !hasRule(slowFindings, stubRule) {
		t.Fatalf("the slow run has no %s finding: %v", stubRule, slowFindings)
	}
	for _, r := range reg.Rules(stubKind) {
		if r.ID() == "connection-saturation" || strings.HasPrefix(r.ID(), "xmin") {
			t.Errorf("a stub run is diagnosed with PostgreSQL's rule %s", r.ID())
		}
	}

	// The HTML report draws the kind's chart and shows its finding.
	var page bytes.Buffer
	if err := report.WriteHTML(&page, slow, slowFindings, kinds); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{stubChart, "Stub commands", stubFindingMsg, stubProduct} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// Without the kind's presentation, the chart is not there: the
	// report drew it from the kind's data, not on its own.
	var bare bytes.Buffer
	if err := report.WriteHTML(&bare, slow, slowFindings, present.Kinds{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(bare.String(), stubChart) {
		t.Errorf("a report that knows no kind still has the chart %s", stubChart)
	}

	// Compare weighs the kind's counters and sees its finding appear.
	c := report.CompareWith(fast, slow, fastFindings, slowFindings, report.CompareOptions{Kinds: kinds})
	var slowCounter *report.CounterChange
	for i := range c.Counters {
		if c.Counters[i].Label == stubSlowLabel {
			slowCounter = &c.Counters[i]
		}
	}
	switch {
	case slowCounter == nil:
		t.Errorf("compare has no %q counter: %+v", stubSlowLabel, c.Counters)
	case slowCounter.A == nil || slowCounter.B == nil || *slowCounter.A != 0 || *slowCounter.B == 0:
		t.Errorf("compare's %q: A %v, B %v; want 0 and more", stubSlowLabel, deref(slowCounter.A), deref(slowCounter.B))
	}
	appeared := false
	for _, f := range c.Findings {
		appeared = appeared || f.Rule == stubRule && f.Change == "appeared"
	}
	if !appeared {
		t.Errorf("compare does not show %s appearing: %+v", stubRule, c.Findings)
	}
	var text bytes.Buffer
	if err := report.WriteCompare(&text, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), stubSlowLabel) {
		t.Errorf("compare's text lacks the kind's counter %q:\n%s", stubSlowLabel, text.String())
	}
	var comparePage bytes.Buffer
	if err := report.WriteCompareHTML(&comparePage, fast, slow, report.CompareSide{Label: "fast"}, report.CompareSide{Label: "slow"}, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comparePage.String(), "Stub commands per second") {
		t.Error("the compare page does not overlay the kind's load")
	}
}

func hasRule(findings []diagnose.Finding, id string) bool {
	for _, f := range findings {
		if f.Rule == id {
			return true
		}
	}
	return false
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
