package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/capacity"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// capacityJSON is the part of --json the tests read.
type capacityJSON struct {
	Schema      string  `json:"schema"`
	Best        float64 `json:"best_level"`
	Failed      float64 `json:"failed_level"`
	Sustainable float64 `json:"sustainable_tps"`
	Confirmed   int     `json:"confirmed"`
	Server      string  `json:"server"`
	Dir         string  `json:"dir"`
	Steps       []struct {
		Level         float64 `json:"level"`
		Pass          bool    `json:"pass"`
		ClientLimited bool    `json:"client_limited"`
		Why           []string
		Binds         []capacity.Bind `json:"binds"`
		RunDir        string          `json:"run_dir"`
	} `json:"steps"`
}

func writeScenario(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCapacityFindsKnownCapacity: 8 pooled connections each held 25 ms
// by a script's \sleep carry at most 8/0.025 s = 320 tx/s (few enough that
// the client's own work, even under -race on a loaded machine, is not
// what binds); on an embedded
// Redis (the cheapest server to start per step) the search lands within
// its tolerance of that, and names the pool as what binds. The SLO is
// loose (the machine is shared: a stall of a few hundred ms must not
// fail a step), so what fails a step above capacity is the generator
// falling behind the offered rate, as the backlog at the pool grows.
func TestCapacityFindsKnownCapacity(t *testing.T) {
	t.Parallel()
	tmp := privateTmp(t)
	path := writeScenario(t, tmp, `name: sleep-pool
target: {kind: redis}
workloads:
  - name: pooled
    pool: 8
    rate: 160
    scripts:
      - inline: |
          \sleep 25ms
          PING
`)
	env, out, errb := clikit.MemoryEnv("")
	args := []string{"capacity", path, "--slo", "p99<1s", "--step", "4s", "--warmup", "1s", "--confirm", "1",
		"--tolerance", "0.05", "--out", filepath.Join(tmp, "runs"), "--json", "-", "-q", "--junit", filepath.Join(tmp, "junit.xml")}
	if code := Main(env, kinds.Registry(), args); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	var res capacityJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--json -: %v\n%s", err, out)
	}
	t.Logf("search:\n%s", errb)
	const ideal = 8 / 0.025
	// The script's sleep overshoots by a millisecond or so, and a starved
	// machine stretches it more (at 16 connections of 20 ms, -race at a
	// load average of 25 on 2 cores found 575–625 of 800). So 70 % of the
	// ideal, up to the tolerance above it: a search that stops short or
	// misses the overload still fails.
	if res.Best < 0.7*ideal || res.Best > 1.05*ideal || res.Confirmed != 1 {
		t.Errorf("best %v tx/s (failed at %v, confirmed %d), want within [%v, %v]\n%s", res.Best, res.Failed, res.Confirmed, 0.7*ideal, 1.05*ideal, errb)
	}
	if res.Failed <= res.Best || res.Failed > 1.6*ideal {
		t.Errorf("first failing level %v, want above the best %v and near %v", res.Failed, res.Best, ideal)
	}
	pool := false
	for _, s := range res.Steps {
		if !s.Pass && len(s.Binds) > 0 && s.Binds[0].Rule == "connection-saturation" {
			pool = true
		}
		if _, err := os.Stat(filepath.Join(s.RunDir, "report.html")); err != nil {
			t.Errorf("step at %v: no run directory with its report: %v", s.Level, err)
		}
	}
	if !pool {
		t.Errorf("no failing step names the pool (connection-saturation) as what binds: %+v", res.Steps)
	}
	if !strings.Contains(res.Server, "a fresh embedded server per step") {
		t.Errorf("server %q does not say each step had a fresh server", res.Server)
	}
	junit, err := os.ReadFile(filepath.Join(tmp, "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `name="a level meets the SLO"`) || strings.Contains(string(junit), "<failure") {
		t.Errorf("--junit: %v\n%s", err, junit)
	}
	for _, f := range []string{capacity.HTMLFile, capacity.JSONFile} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("no %s in the capacity directory: %v", f, err)
		}
	}
}

// TestCapacityGeneratorLimited: a script that makes firedrill compute
// 300 expressions per PING, at 20,000/s with one thread (GOMAXPROCS=1),
// outruns firedrill, not Redis: the step fails for falling behind, and
// the summary says the client is the limit and how to lift it.
func TestCapacityGeneratorLimited(t *testing.T) {
	t.Parallel()
	tmp := privateTmp(t)
	var script strings.Builder
	script.WriteString("          \\set x0 1\n")
	for i := 1; i <= 300; i++ {
		script.WriteString("          \\set x" + itoa(i) + " random(1, 1000000) + :x" + itoa(i-1) + " * 3 % 1000\n")
	}
	path := writeScenario(t, tmp, "name: burn\ntarget: {kind: redis}\nworkloads:\n  - name: burn\n    rate: 20000\n    scripts:\n      - inline: |\n"+script.String()+"          PING\n")
	jsonPath := filepath.Join(tmp, "result.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "TMPDIR="+tmp, cliHelperEnv+"="+strings.Join([]string{"capacity", path, "--step", "4s", "--warmup", "1s",
		"--max-steps", "1", "--confirm", "0", "--out", filepath.Join(tmp, "runs"), "--json", jsonPath}, "\x1f"))
	text, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != clikit.ExitThresholds {
		t.Fatalf("exit %v, want %d (no level met)\n%s", err, clikit.ExitThresholds, text)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res capacityJSON
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 1 || res.Steps[0].Pass || !res.Steps[0].ClientLimited {
		t.Fatalf("steps %+v: want one failing step, limited by the client\n%s", res.Steps, text)
	}
	if s := res.Steps[0]; len(s.Binds) == 0 || s.Binds[0].Rule != capacity.ClientRule || !strings.Contains(s.Binds[0].Remedy, "shards") {
		t.Errorf("binds %+v: want the client first, with shards as the remedy", s.Binds)
	}
	if !strings.Contains(string(text), "the client, not the system, is the limit") {
		t.Errorf("the summary does not say the client is the limit:\n%s", text)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestCapacityUsage: mistakes are told before any server starts.
func TestCapacityUsage(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	two := filepath.Join(tmp, "two.yaml")
	if err := os.WriteFile(two, []byte("name: two\nduration: 10s\nworkloads:\n  - {name: a, clients: 1, scripts: [{builtin: select-only}]}\n  - {name: b, rate: 10, scripts: [{builtin: select-only}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capacity", two, "--slo", "p99<5"}, "unit"},
		{[]string{"capacity", two, "--slo", "p99<5ms"}, "several workloads (a, b)"},
		{[]string{"capacity", two, "--workload", "c", "--slo", "p99<5ms"}, "no such workload"},
		{[]string{"capacity", two, "--workload", "b", "--vary", "clients", "--slo", "p99<5ms"}, "arrival rate"},
		{[]string{"capacity", two, "--workload", "a", "--vary", "clients"}, "needs an --slo"},
		{[]string{"capacity", two, "--workload", "a", "--vary", "users", "--slo", "p99<5ms"}, "--vary users"},
		{[]string{"capacity", two, "--workload", "a", "--slo", "p99<5ms", "--warmup", "40s"}, "nothing of a 30s step"},
	} {
		env, out, errb := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), append(c.args, "--out", filepath.Join(tmp, "runs"))); code != clikit.ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", c.args, code, clikit.ExitUsage, out, errb)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: %q lacks %q", c.args, errb, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "runs")); !os.IsNotExist(err) {
		t.Errorf("a refused search made its directory: %v", err)
	}
}

// TestCapacityStepScenario: each step is the scenario at its level: a
// rate with the clients it gives kept, or enough clients when it gives
// none; stages scaled in size, kept in shape; the step's length.
func TestCapacityStepScenario(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env, _, _ := clikit.MemoryEnv("")
	o := &capacityOpts{backends: kinds.Registry(), vary: capacity.VaryRate, step: 10 * time.Second}
	for _, c := range []struct {
		name, file, text string
		vary             string
		level            float64
		rate             float64
		clients          int
		stageRates       []float64
		duration         time.Duration
	}{
		// A closed workload's 8 clients carry every rate (pgbench's -c).
		{"closed", "closed.yaml", "name: c\nworkloads:\n  - {name: w, clients: 8, scripts: [{builtin: select-only}]}\n", capacity.VaryRate, 5000, 5000, 8, nil, 10 * time.Second},
		// A rate without clients gets one per 50/s.
		{"open", "open.yaml", "name: o\nduration: 1m\nworkloads:\n  - {name: w, rate: 100, scripts: [{builtin: select-only}]}\n", capacity.VaryRate, 5000, 5000, 100, nil, 10 * time.Second},
		// Rate stages: 100 → 400 → 200 scaled to a peak of 1,000.
		{"stages", "stages.yaml", "name: s\nworkloads:\n  - name: w\n    scripts: [{builtin: select-only}]\n    stages: [{duration: 5s, rate: 100}, {duration: 10s, rate: 400}, {duration: 5s, rate: 200}]\n", capacity.VaryRate, 1000, 0, 20, []float64{250, 1000, 500}, 20 * time.Second},
		// The closed model: clients.
		{"clients", "clients.yaml", "name: k\nworkloads:\n  - {name: w, clients: 4, scripts: [{builtin: select-only}]}\n", capacity.VaryClients, 24, 0, 24, nil, 10 * time.Second},
	} {
		o.vary = c.vary
		path := write(c.file, c.text)
		p, err := o.plan(env, path, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sc, err := o.stepScenario(env, path, "", nil, p, c.level)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w := sc.Workloads[0]
		var stages []float64
		for _, st := range w.Stages {
			stages = append(stages, *st.Rate)
		}
		if w.Rate != c.rate || w.MaxClients() != c.clients || sc.Duration != c.duration || fmt.Sprint(stages) != fmt.Sprint(c.stageRates) {
			t.Errorf("%s at %v: rate %v clients %d stages %v duration %v; want %v %d %v %v", c.name, c.level, w.Rate, w.MaxClients(), stages, sc.Duration, c.rate, c.clients, c.stageRates, c.duration)
		}
	}
}

// TestCapacityServiceThreadsBind: a service of 4 threads whose requests
// each hold a thread 40 ms (a script's \sleep) serves at most 4/0.04 =
// 100 requests/s; above it its accept queue fills and requests are
// refused. The first failing step reads the service's series and says
// its threads bind. Three steps (60, 120, 90 tx/s) on one kept server.
func TestCapacityServiceThreadsBind(t *testing.T) {
	t.Parallel()
	tmp := privateTmp(t)
	path := writeScenario(t, tmp, `name: service-threads
target: {kind: redis}
services:
  - name: api
    max_threads: 4
    accept_count: 20
workloads:
  - name: calls
    service: api
    rate: 60
    scripts:
      - inline: |
          \sleep 40ms
          PING
`)
	env, out, errb := clikit.MemoryEnv("")
	args := []string{"capacity", path, "--slo", "failed<1%", "--step", "4s", "--warmup", "1s", "--confirm", "0", "--max-steps", "3",
		"--reuse-server", "--out", filepath.Join(tmp, "runs"), "--json", "-"}
	code := Main(env, kinds.Registry(), args)
	if code != 0 && code != clikit.ExitThresholds {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	var res struct {
		Steps []struct {
			Level   float64 `json:"level"`
			Pass    bool    `json:"pass"`
			Measure struct {
				Services []capacity.ServiceLoad `json:"services"`
			} `json:"measure"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--json -: %v\n%s", err, out)
	}
	const ideal = 4 / 0.040
	bound := false
	for _, s := range res.Steps {
		if len(s.Measure.Services) != 1 || s.Measure.Services[0].Name != "api" || s.Measure.Services[0].Threads != 4 {
			t.Errorf("step at %v: services %+v, want api's 4 threads", s.Level, s.Measure.Services)
			continue
		}
		l := s.Measure.Services[0]
		if s.Level > ideal && !s.Pass {
			bound = true
			if l.Binds != capacity.ServiceThreads || l.Busy < 3 {
				t.Errorf("step at %v, above the service's capacity %v: %+v, want its threads binding, nearly all busy", s.Level, ideal, l)
			}
		}
	}
	if !bound {
		t.Errorf("no step above the capacity %v failed: %+v\n%s", ideal, res.Steps, errb)
	}
	if !strings.Contains(errb.String(), "service api: its threads bind") {
		t.Errorf("the summary does not say the service's threads bind:\n%s", errb)
	}
}
