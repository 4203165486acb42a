package scenario_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

func ptr[T any](v T) *T { return &v }

// TestLoadFull decodes the example that uses every key into the struct it
// stands for, defaults filled in.
func TestLoadFull(t *testing.T) {
	t.Parallel()
	s, err := Load(filepath.Join("testdata", "good", "full.yaml"), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Name:        "multixact",
		Description: "Row locks taken FOR SHARE by many clients thrash the multixact SLRU.",
		File:        filepath.Join("testdata", "good", "full.yaml"),
		Dialect:     pgdialect.Script(),
		Target: Target{Pos: Pos{6, 3}, Settings: map[string]string{
			"synchronous_commit": "off", "shared_buffers": "256MB", "max_connections": "200", "fsync": "false",
		}},
		Setup: Setup{
			Pos:          Pos{12, 3},
			PgbenchScale: 1,
			SQL: []SQLSource{
				{Pos: Pos{14, 7}, File: "schema.sql"},
				{Pos: Pos{15, 7}, Inline: "CREATE INDEX ON accounts (balance)"},
				{Pos: Pos{16, 7}, Inline: "CREATE TABLE audit (id bigserial PRIMARY KEY, at timestamptz)"},
			},
			Schema: "firedrill",
		},
		SampleInterval: 500 * time.Millisecond,
		Duration:       5 * time.Minute,
		Workloads: []Workload{
			{
				Pos:  Pos{21, 5},
				Name: "oltp",
				Scripts: []ScriptSource{
					{Pos: Pos{23, 9}, Name: "multixact.sql", File: "multixact.sql", Weight: 9},
					{Pos: Pos{24, 9}, Name: "pgbench-select", Builtin: "select-only", Weight: 1},
					{Pos: Pos{25, 9}, Name: "ping", Inline: "SELECT 1;", Weight: 1},
					{Pos: Pos{26, 9}, Name: "other.sql", File: "other.sql", Weight: 2},
				},
				Clients:      8,
				Stop:         3 * time.Minute,
				Mode:         "prepared",
				Seed:         ptr(uint64(42)),
				Pool:         5,
				PoolTimeout:  10 * time.Second,
				MaxTries:     3,
				LatencyLimit: 50 * time.Millisecond,
				Defines:      map[string]string{"accounts": "1000", "label": "hot"},
				Scale:        2,
				Settings:     map[string]string{"statement_timeout": "5s", "lock_timeout": "1s"},
			},
			{
				Pos:  Pos{39, 5},
				Name: "reports",
				Scripts: []ScriptSource{{
					Pos: Pos{41, 9}, Name: "inline-1", Weight: 1,
					Inline: "\\set id random(1, 1000)\nSELECT sum(balance) FROM accounts WHERE id <= :id;\n",
				}},
				Rate:     2000,
				Clients:  20, // one per 100/s
				Start:    10 * time.Second,
				Mode:     "simple",
				MaxTries: 1,
				Scale:    1,
			},
			{
				Pos:     Pos{46, 5},
				Name:    "ramp",
				Scripts: []ScriptSource{{Pos: Pos{47, 15}, Name: "tpcb-like", Builtin: "tpcb-like", Weight: 1}},
				Stages: []Stage{
					{Pos: Pos{49, 9}, Duration: 30 * time.Second, Clients: ptr(16)},
					{Pos: Pos{50, 9}, Duration: time.Minute, Clients: ptr(4)},
				},
				Start:    time.Minute,
				Mode:     "simple",
				MaxTries: 1,
				Scale:    1,
			},
		},
		Events: []Event{
			{Pos: Pos{53, 5}, Name: "long-tx", Kind: "hold_transaction", At: time.Minute, Duration: 2 * time.Minute},
			{Pos: Pos{60, 5}, Name: "sql-2", Kind: "sql", At: 90 * time.Second},
			{Pos: Pos{61, 5}, Name: "settings-3", Kind: "settings", At: 30 * time.Second},
			{Pos: Pos{62, 5}, Name: "terminate-4", Kind: "terminate", At: 40 * time.Second},
			{Pos: Pos{63, 5}, Name: "terminate-5", Kind: "terminate", At: 45 * time.Second},
			{Pos: Pos{64, 5}, Name: "disk_pressure-6", Kind: "disk_pressure", At: 10 * time.Second, Duration: 30 * time.Second},
			{Pos: Pos{65, 5}, Name: "shell-7", Kind: "shell", At: 5 * time.Second},
		},
		Thresholds: []Threshold{
			{Pos: Pos{67, 13}, Metric: "oltp.p99", Op: "<", Value: 50, Unit: "ms", Text: "< 50ms", Kind: Latency},
			{Pos: Pos{68, 20}, Metric: "oltp.error_rate", Op: "<", Value: 0.1, Unit: "%", Text: "< 0.1%", Kind: Ratio},
			{Pos: Pos{69, 17}, Metric: "reports.tps", Op: ">=", Value: 1900, Text: ">= 1900", Kind: Throughput},
			{Pos: Pos{69, 28}, Metric: "reports.tps", Op: "<=", Value: 2100, Text: "<= 2100", Kind: Throughput},
			{Pos: Pos{70, 17}, Metric: "db.deadlocks", Op: "==", Value: 0, Text: "== 0", Kind: Count},
			{Pos: Pos{71, 42}, Metric: "db.slru_hit_rate_min.MultiXactMember", Op: ">=", Value: 90, Unit: "%", Text: ">= 90%", Kind: Ratio},
			{Pos: Pos{72, 21}, Metric: "finding.deadlock", Op: "absent", Text: "absent", Kind: Presence},
		},
		AbortOnFailure: FailureLimit{Pos: Pos{73, 19}, Ratio: 0.9, For: 10 * time.Second},
	}
	if string(s.Source) != string(mustRead(t, s.File)) {
		t.Error("Source is not the file's text")
	}
	s.Source = nil
	// Each kind's keys are its own (the event package tests them); here,
	// that they reached it.
	wantConfigs := []string{
		`{"Duration":120000000000,"Isolation":"repeatable read","XID":true,"SQL":["SELECT txid_current()"]}`,
		`{"SQL":["CREATE INDEX CONCURRENTLY ON accounts (id, balance)","ANALYZE accounts"]}`,
		`{"Settings":{"idle_in_transaction_session_timeout":"10s"},"Restart":false}`,
		`{"Workload":"oltp","By":0}`,
		`{"Workload":"","By":1234}`,
		`{"Size":512000000,"Duration":30000000000,"Rate":50000000,"Path":"/tmp","Mode":"","FsyncDelay":0}`,
		`{"Command":"sync"}`,
	}
	for i := range s.Events {
		if i < len(wantConfigs) {
			if got := configJSON(t, s.Events[i]); got != wantConfigs[i] {
				t.Errorf("event %d config %s, want %s", i+1, got, wantConfigs[i])
			}
		}
		s.Events[i].Config = nil
	}
	wantKeys := []KeyUse{{"target.settings", Pos{7, 5}, "", ""}, {"setup.pgbench", Pos{12, 12}, "", ""}, {"setup.sql", Pos{14, 5}, "", ""},
		{"setup.schema", Pos{17, 11}, "firedrill", ""}, {"workloads.mode", Pos{30, 11}, "prepared", ""}, {"workloads.settings", Pos{38, 15}, "", ""}}
	if !reflect.DeepEqual(s.KindKeys, wantKeys) {
		t.Errorf("KindKeys %v, want %v", s.KindKeys, wantKeys)
	}
	s.KindKeys = nil
	wantFiles := []FileUse{{"schema.sql", Pos{14, 14}}, {"multixact.sql", Pos{23, 16}}, {"other.sql", Pos{26, 9}}}
	if !reflect.DeepEqual(s.Files, wantFiles) {
		t.Errorf("Files %v, want %v", s.Files, wantFiles)
	}
	s.Files = nil
	// A database metric carries how its kind measures it (a func, which
	// DeepEqual cannot compare); the others carry none.
	for i := range s.Thresholds {
		th := &s.Thresholds[i]
		if isDB := strings.HasPrefix(th.Metric, "db."); isDB != (th.Measure != nil) {
			t.Errorf("threshold %s: measure set %v", th.Metric, th.Measure != nil)
		}
		th.Measure = nil
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Load differs:\n%s", diffJSON(t, s, want))
	}
}

// configJSON is an event's config as JSON, to check what its kind decoded
// without naming the kind's type.
func configJSON(t *testing.T, e Event) string {
	t.Helper()
	data, err := json.Marshal(e.Config)
	if err != nil {
		t.Fatalf("event %s: config %#v: %v", e.Name, e.Config, err)
	}
	return string(data)
}

// A target's kind is any backend's name; which exist is the backend
// registry's to say (backend.Registry.Resolve).
func TestLoadTargetKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "k.yaml")
	for _, tt := range []struct{ yaml, kind, err string }{
		{"target: {kind: postgres}\n", "postgres", ""},
		{"target: {kind: redis, dsn: \"redis://127.0.0.1:6379/0\"}\n", "redis", ""},
		{"", "", ""},
		{"target: {kind: Post gres}\n", "", "k.yaml:2:16: kind: \"Post gres\" is not a kind of database"},
	} {
		text := "name: k\n" + tt.yaml + "workloads: [{name: w, scripts: [{inline: \"SELECT 1;\"}], clients: 1}]\nduration: 1s\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(path, kinds.Registry().ScenarioOptions())
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil || s.Target.Kind != tt.kind {
			t.Errorf("%q: kind %q, err %v; want %q", tt.yaml, s.Target.Kind, err, tt.kind)
		}
	}
}

// diffJSON shows the first lines where two values' JSON differ.
func diffJSON(t *testing.T, got, want any) string {
	t.Helper()
	g, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	var out []string
	for i := 0; i < max(len(gl), len(wl)) && len(out) < 20; i++ {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, a, b))
		}
	}
	if len(out) == 0 {
		return "(the JSON is equal: a difference in unexported state or nil versus empty)"
	}
	return strings.Join(out, "\n")
}

// TestReadmeExample keeps the README's complete example and the tested
// file the same text.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("testdata", "good", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(example)+"```\n") {
		t.Error("README.md does not hold testdata/good/full.yaml verbatim in a yaml block; copy it over")
	}
}

// base is a valid scenario that the cases below extend.
const base = "name: t\nduration: 1m\nworkloads:\n  - name: w\n    scripts: [select-only]\n    clients: 1\n"

// TestParseGood checks what valid files decode into, defaults included.
func TestParseGood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, s *Scenario)
	}{
		{
			// Everything left out takes its default.
			name: "defaults",
			yaml: base,
			check: func(t *testing.T, s *Scenario) {
				w := s.Workloads[0]
				if s.SampleInterval != time.Second || s.Setup.Schema != "firedrill" || !s.Target.Embedded() {
					t.Errorf("scenario defaults: %+v", s)
				}
				if w.Mode != "simple" || w.MaxTries != 1 || w.Scale != 1 || w.PoolTimeout != 0 || w.Seed != nil {
					t.Errorf("workload defaults: %+v", w)
				}
				if sc := w.Scripts[0]; sc.Name != "select-only" || sc.Weight != 1 {
					t.Errorf("script defaults: %+v", sc)
				}
			},
		},
		{
			// The run lasts until the latest stop, stages' end or event end.
			name: "computed duration",
			yaml: "name: t\nworkloads:\n" +
				"  - {name: a, scripts: [select-only], clients: 1, stop: 2m}\n" +
				"  - {name: b, scripts: [select-only], start: 1m, stages: [{duration: 90s, clients: 2}]}\n" +
				"  - {name: c, scripts: [select-only], clients: 1}\n" +
				"events: [{kind: hold_transaction, at: 1m, duration: 100s}, {kind: sql, at: 2m30s, sql: SELECT 1}]\n",
			check: func(t *testing.T, s *Scenario) {
				if s.Duration != 160*time.Second {
					t.Errorf("Duration = %v, want 2m40s", s.Duration)
				}
				if start, stop := s.Workloads[2].Window(s.Duration); start != 0 || stop != s.Duration {
					t.Errorf("unbounded workload's window %v..%v", start, stop)
				}
				if start, stop := s.Workloads[1].Window(s.Duration); start != time.Minute || stop != 150*time.Second {
					t.Errorf("staged workload's window %v..%v", start, stop)
				}
			},
		},
		{
			// Bare numbers are seconds; fractions and Go syntax work too.
			name: "durations",
			yaml: "name: t\nsample_interval: 0.25\nduration: 90\nworkloads:\n  - {name: w, scripts: [select-only], clients: 1, start: 1.5, stop: \"60\", latency_limit: 1m30s}\n",
			check: func(t *testing.T, s *Scenario) {
				w := s.Workloads[0]
				if s.SampleInterval != 250*time.Millisecond || s.Duration != 90*time.Second ||
					w.Start != 1500*time.Millisecond || w.Stop != time.Minute || w.LatencyLimit != 90*time.Second {
					t.Errorf("got %v %v %v %v %v", s.SampleInterval, s.Duration, w.Start, w.Stop, w.LatencyLimit)
				}
			},
		},
		{
			// A shorthand with a dot or slash is a file, else a builtin
			// (prefixes allowed); @ gives the weight.
			name: "script shorthands",
			yaml: "name: t\nduration: 1m\nworkloads:\n  - {name: w, clients: 1, scripts: [multixact.sql@3, ./other.sql, tpcb@2, simple-update@0]}\n",
			check: func(t *testing.T, s *Scenario) {
				got := s.Workloads[0].Scripts
				want := []ScriptSource{
					{Name: "multixact.sql", File: "multixact.sql", Weight: 3},
					{Name: "other.sql", File: "./other.sql", Weight: 1},
					{Name: "tpcb-like", Builtin: "tpcb-like", Weight: 2},
					{Name: "simple-update", Builtin: "simple-update", Weight: 0},
				}
				for i := range got {
					got[i].Pos = Pos{}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("scripts:\n%s", diffJSON(t, got, want))
				}
			},
		},
		{
			// An open model gets one client per 100/s, at least 8.
			name: "rate clients",
			yaml: "name: t\nduration: 1m\nworkloads:\n" +
				"  - {name: a, scripts: [select-only], rate: 50}\n" +
				"  - {name: b, scripts: [select-only], rate: 1234.5}\n" +
				"  - {name: c, scripts: [select-only], rate: 10, clients: 3}\n" +
				"  - {name: d, scripts: [select-only], stages: [{duration: 10s, rate: 100}, {duration: 10s, rate: 5000}]}\n",
			check: func(t *testing.T, s *Scenario) {
				for i, want := range []int{8, 13, 3, 50} {
					w := s.Workloads[i]
					if !w.Open() || w.Clients != want || w.MaxClients() != want {
						t.Errorf("workload %s: open %v, Clients %d, MaxClients %d, want %d", w.Name, w.Open(), w.Clients, w.MaxClients(), want)
					}
				}
			},
		},
		{
			// Clients stages start from clients (default 0) and peak at
			// the highest stage.
			name: "clients stages",
			yaml: "name: t\nworkloads:\n  - {name: w, scripts: [select-only], clients: 2, stages: [{duration: 10s, clients: 40}, {duration: 5s, clients: 0}]}\n",
			check: func(t *testing.T, s *Scenario) {
				w := s.Workloads[0]
				if w.Open() || w.Clients != 2 || w.MaxClients() != 40 || s.Duration != 15*time.Second {
					t.Errorf("open %v, clients %d, max %d, duration %v", w.Open(), w.Clients, w.MaxClients(), s.Duration)
				}
			},
		},
		{
			// pool gets its timeout's default; a pool larger than the
			// clients is allowed.
			name: "pool",
			yaml: "name: t\nduration: 1m\nworkloads:\n  - {name: w, scripts: [select-only], clients: 2, pool: 10}\n",
			check: func(t *testing.T, s *Scenario) {
				if w := s.Workloads[0]; w.Pool != 10 || w.PoolTimeout != 30*time.Second {
					t.Errorf("pool %d, timeout %v", w.Pool, w.PoolTimeout)
				}
			},
		},
		{
			// A service gets Tomcat's, HikariCP's and Resilience4j's
			// defaults for what it leaves out; the parts it does not
			// name are absent; a workload names it.
			name: "services",
			yaml: "name: t\nduration: 1m\nservices:\n  - {name: api, breaker: {}, bulkhead: {}, retry: {}, throttle: {rate: 50, mode: remote, lag: 3s}}\n" +
				"  - {name: lifo-1, queue: lifo, instances: 5, timeout: 30s, cancel_on_timeout: true, cores: 2, cpu_per_request: 5ms}\n" +
				"workloads:\n  - {name: w, scripts: [select-only], rate: 100, service: lifo-1}\n",
			check: func(t *testing.T, s *Scenario) {
				a, b := s.Services[0], s.Services[1]
				if a.Instances != 1 || a.MaxThreads != 200 || a.AcceptCount != 100 || a.LIFO || a.Timeout != 0 || a.Pool.Size != 10 ||
					a.Pool.ConnectionTimeout != 30*time.Second || a.Cores != 0 {
					t.Errorf("service defaults: %+v", a)
				}
				if br := a.Breaker; br == nil || br.FailureRateThreshold != 50 || br.SlowCallRateThreshold != 100 || br.SlowCallDuration != time.Minute ||
					br.SlidingWindowSize != 100 || br.MinimumNumberOfCalls != 100 || br.WaitInOpen != time.Minute || br.PermittedCallsInHalfOpen != 10 {
					t.Errorf("breaker defaults: %+v", br)
				}
				if a.Bulkhead == nil || a.Bulkhead.MaxConcurrentCalls != 25 || a.Bulkhead.MaxWait != 0 {
					t.Errorf("bulkhead defaults: %+v", a.Bulkhead)
				}
				if r := a.Retry; r == nil || r.MaxAttempts != 3 || r.Wait != 500*time.Millisecond || r.Multiplier != 1 || r.Budget != 0 {
					t.Errorf("retry defaults: %+v", r)
				}
				if th := a.Throttle; th == nil || th.Rate != 50 || th.Burst != 50 || !th.Remote || th.Lag != 3*time.Second {
					t.Errorf("throttle: %+v", th)
				}
				if !b.LIFO || b.Instances != 5 || !b.CancelOnTimeout || b.Cores != 2 || b.CPUPerRequest != 5*time.Millisecond || b.Breaker != nil {
					t.Errorf("service lifo-1: %+v", b)
				}
				if s.Workloads[0].Service != "lifo-1" {
					t.Errorf("workload's service %q", s.Workloads[0].Service)
				}
			},
		},
		{
			// A null value is an absent key; x- keys are ignored; merge
			// keys fill workloads from an anchor, written keys winning.
			name: "null, extensions and merge keys",
			yaml: "name: t\ndescription:\nevents:\nx-common: &common {clients: 3, mode: prepared, scripts: [select-only]}\nduration: 1m\n" +
				"workloads:\n  - {<<: *common, name: a}\n  - {<<: *common, name: b, clients: 5}\n",
			check: func(t *testing.T, s *Scenario) {
				a, b := s.Workloads[0], s.Workloads[1]
				if s.Description != "" || s.Events != nil || a.Clients != 3 || b.Clients != 5 || a.Mode != "prepared" || b.Mode != "prepared" {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			// Settings take any scalar, stored as written; sql takes one
			// statement or a list; a size is 1000- or 1024-based by unit.
			name: "scalars",
			yaml: base + "target:\n  settings: {max_connections: 300, fsync: false, work_mem: 64MB, random_page_cost: 1.1}\n" +
				"events:\n  - {kind: sql, at: 1s, sql: VACUUM}\n  - {kind: disk_pressure, at: 2s, size: 1GiB, rate: 1.5MB/s}\n" +
				"  - {kind: disk_pressure, at: 3s, size: 4096}\n  - {kind: hold_transaction, at: 4s, duration: 5s, isolation: REPEATABLE_READ}\n",
			check: func(t *testing.T, s *Scenario) {
				want := map[string]string{"max_connections": "300", "fsync": "false", "work_mem": "64MB", "random_page_cost": "1.1"}
				if !reflect.DeepEqual(s.Target.Settings, want) {
					t.Errorf("settings %v", s.Target.Settings)
				}
				for i, want := range []string{
					`{"SQL":["VACUUM"]}`,
					`{"Size":1073741824,"Duration":0,"Rate":1500000,"Path":"","Mode":"","FsyncDelay":0}`,
					`{"Size":4096,"Duration":0,"Rate":0,"Path":"","Mode":"","FsyncDelay":0}`,
					`{"Duration":5000000000,"Isolation":"repeatable read","XID":false,"SQL":null}`,
				} {
					if got := configJSON(t, s.Events[i]); got != want {
						t.Errorf("event %d config %s, want %s", i+1, got, want)
					}
				}
			},
		},
		{
			// A hold_transaction defaults to read committed.
			name: "isolation default",
			yaml: base + "events: [{kind: hold_transaction, at: 1s, duration: 1s}]\n",
			check: func(t *testing.T, s *Scenario) {
				if e := s.Events[0]; !strings.Contains(configJSON(t, e), `"Isolation":"read committed"`) || e.Name != "hold_transaction-1" {
					t.Errorf("event %+v", e)
				}
			},
		},
		{
			// A non-embedded target takes disk_pressure with a path and
			// an SLRU threshold by its PostgreSQL 17 name.
			name: "dsn target",
			yaml: base + "target: {dsn: \"host=db dbname=app\"}\nsetup: {schema: public}\n" +
				"events: [{kind: disk_pressure, at: 1s, size: 1MB, path: /var/lib/postgresql}]\n" +
				"thresholds: {db.slru_hit_rate_min.transaction: '>= 99.5%', w.p95: '< 250us', w.max: '<= 2s'}\n",
			check: func(t *testing.T, s *Scenario) {
				if s.Target.Embedded() || s.Setup.Schema != "public" {
					t.Errorf("target %+v, schema %q", s.Target, s.Setup.Schema)
				}
				if m := s.Thresholds[0].Metric; m != "db.slru_hit_rate_min.Xact" {
					t.Errorf("metric %q", m)
				}
				if v := s.Thresholds[1].BaseValue(); v != 250e-6 {
					t.Errorf("250us = %v s", v)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(filepath.Join("testdata", "good", tt.name+".yaml"), []byte(tt.yaml), kinds.Registry().ScenarioOptions())
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// TestLoadMissingFile keeps I/O failures apart from content errors.
func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "no-such.yaml"), kinds.Registry().ScenarioOptions())
	var errs Errors
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &errs) {
		t.Errorf("err = %v, want a wrapped fs.ErrNotExist", err)
	}
}

// TestInlineScriptPositions maps errors in inline scripts onto the
// scenario file when the script's text stands verbatim in it.
func TestInlineScriptPositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
	}{
		// A plain scalar: the script's column adds to the value's.
		{"plain", `{inline: SELECT 1 \sleep 1 hour}`, `t.yaml:6:42: unrecognized time unit`},
		// Single and double quotes: one more for the quote.
		{"single", `{inline: 'SELECT 1; \sleep 1 hour'}`, `t.yaml:6:44: unrecognized time unit`},
		{"double", `{inline: "SELECT 1; \\sleep 1 hour"}`, `t.yaml:6:24: inline script, line 1, column 20: unrecognized time unit`},
		// A literal block: lines after the indicator, past the indent.
		{"literal", "\n        - inline: |\n            SELECT 1;\n\n            \\sleep 1 hour\n", `t.yaml:10:22: unrecognized time unit`},
		// A folded block is not verbatim (the blank line became the line
		// break): the script's own position.
		{"folded", "\n        - inline: >\n            SELECT 1;\n\n            \\sleep 1 hour\n", `t.yaml:7:19: inline script, line 2, column 10: unrecognized time unit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			scripts := "[" + tt.script + "]"
			if strings.HasPrefix(tt.script, "\n") {
				scripts = tt.script
			}
			src := "name: t\nduration: 1m\nworkloads:\n  - name: w\n    clients: 1\n    scripts: " + scripts + "\n"
			_, err := Parse("t.yaml", []byte(src), kinds.Registry().ScenarioOptions())
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v\nwant prefix %s\nin:\n%s", err, tt.want, src)
			}
		})
	}
}

// TestLoadScript parses a workload's scripts as the engine will.
func TestLoadScript(t *testing.T) {
	t.Parallel()
	s, err := Load(filepath.Join("testdata", "good", "full.yaml"), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	syms := script.NewSymbols()
	for _, src := range s.Workloads[0].Scripts {
		sc, err := s.LoadScript(src, syms)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != src.Name || sc.Weight != src.Weight || len(sc.Commands) == 0 {
			t.Errorf("script %+v from %+v", sc, src)
		}
	}
	_, err = s.LoadScript(ScriptSource{Pos: Pos{3, 4}, Name: "bad", Inline: `\sleep`, Weight: 1}, syms)
	var e *Error
	if !errors.As(err, &e) || e.Pos != (Pos{3, 4}) || !strings.Contains(e.Msg, "inline script, line 1") {
		t.Errorf("inline error %#v", err)
	}
	sql, err := s.ReadSQL(s.Setup.SQL[0])
	if err != nil || !strings.HasPrefix(sql, "CREATE TABLE accounts") {
		t.Errorf("ReadSQL = %q, %v", sql, err)
	}
	if got := s.Resolve("/abs/x.sql"); got != "/abs/x.sql" {
		t.Errorf("Resolve(abs) = %q", got)
	}
	if got, want := s.Resolve("x.sql"), filepath.Join("testdata", "good", "x.sql"); got != want {
		t.Errorf("Resolve = %q, want %q", got, want)
	}
}

// TestDocExample keeps the package documentation's example and the tested
// file the same text.
func TestDocExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("testdata", "good", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			b.WriteString(code + "\n")
		}
	}
	if !strings.Contains(b.String(), string(example)) {
		t.Error("doc.go's example is not testdata/good/full.yaml; copy it over")
	}
}

// TestYAMLSyntaxLines puts yaml.v3's syntax errors on the right line:
// it counts parser errors from 0 and scanner errors from 1.
func TestYAMLSyntaxLines(t *testing.T) {
	t.Parallel()
	tests := []struct{ src, want string }{
		{"name: t\nworkloads: [a\n", "t.yaml:2: bad YAML: did not find expected ',' or ']'"},     // parser
		{"[a\n", "t.yaml:2: bad YAML: did not find expected ',' or ']'"},                         // parser, at the end
		{"name: t\nworkloads:\n  - a\n b: c\n", "t.yaml:4: bad YAML: did not find expected key"}, // parser
		{"name: t\ndescription: a: b\n", "t.yaml:2: bad YAML: mapping values are not allowed in this context"},
		{"name: t\n\tworkloads: []\n", "t.yaml:2: bad YAML: found a tab character that violates indentation"},
		{"name: *x\n", "t.yaml: bad YAML: unknown anchor 'x' referenced"},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.src), kinds.Registry().ScenarioOptions())
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error\n%v\nwant prefix\n%s", tt.src, err, tt.want)
		}
	}
}

// TestAliasBomb bounds decoding when merge keys nest through aliases, each
// level doubling the keys of the last.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("x-0: &l0 {clients: 1, mode: simple}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "x-%d: &l%d {<<: [*l%d, *l%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("name: t\nduration: 1m\nworkloads:\n  - {<<: *l40, name: w, scripts: [select-only]}\n")
	start := time.Now()
	_, err := Parse("t.yaml", []byte(b.String()), kinds.Registry().ScenarioOptions())
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Errorf("error %v, want the expansion limit", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
