package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// genConfig shapes a synthetic run: a multixact incident in miniature.
// A transaction is held open from HoldFrom to HoldTo; the xmin horizon
// ages, dead tuples pile up, the MultiXactMember SLRU thrashes, sessions
// pile up on its lock and throughput falls, then everything recovers.
type genConfig struct {
	Workloads  int  // named orders, stock, w3 …
	Intervals  int  // one-second ticks
	Tables     int  // user tables with dead tuples
	Histograms bool // write HDR histograms in intervals, as the engine does (slow for big runs)
	Samplers   bool // sample every source; false: a run that watched nothing
	HoldFrom   float64
	HoldTo     float64
}

func smallRun() genConfig {
	return genConfig{Workloads: 2, Intervals: 300, Tables: 8, Histograms: true, Samplers: true, HoldFrom: 100, HoldTo: 200}
}

// quickRun is smallRun without HDR histograms, which dominate writing
// and reading a run (about 2 ms each to decode) and which the HTML report
// does not read.
func quickRun() genConfig {
	cfg := smallRun()
	cfg.Histograms = false
	return cfg
}

func bigRun() genConfig {
	return genConfig{Workloads: 12, Intervals: 3600, Tables: 20, Samplers: true, HoldFrom: 1200, HoldTo: 2100}
}

var genWaits = []string{
	"wait.LWLock:MultiXactMemberSLRU", "wait.LWLock:MultiXactOffsetSLRU", "wait.Lock:transactionid",
	"wait.IO:DataFileRead", "wait.LWLock:WALWrite", "wait.IO:WALSync", "wait.Client:ClientRead",
	"wait.Lock:tuple", "wait.LWLock:BufferMapping", "wait.IO:SLRURead", "wait.IPC:ProcArrayGroupUpdate",
	"wait.Timeout:VacuumDelay",
}

var genSLRUs = []string{"Xact", "MultiXactMember", "MultiXactOffset", "Subtrans", "CommitTs", "Notify", "Serial"}

func workloadName(i int) string {
	switch i {
	case 0:
		return "orders"
	case 1:
		return "stock"
	}
	return fmt.Sprintf("w%d", i+1)
}

// genRunDir writes a run directory under t.TempDir() with the timeline
// package's own writer, reads it back with timeline.Open, and returns it
// with its findings (also written to findings.json).
func genRunDir(tb testing.TB, cfg genConfig) (*timeline.Run, []diagnose.Finding) {
	tb.Helper()
	dir := tb.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	started := time.Date(2025, 3, 14, 3, 7, 0, 0, time.UTC)
	duration := float64(cfg.Intervals)

	m := timeline.Manifest{
		Format:   timeline.Format,
		Name:     "multixact-storm",
		Started:  started,
		Ended:    started.Add(time.Duration(duration) * time.Second),
		Status:   timeline.StatusCompleted,
		Version:  "v0.3.0-test",
		Command:  []string{"firedrill", "run", "drills/multixact/scenario.yaml"},
		Interval: 1,
		Target: timeline.Target{Kind: "postgres", Embedded: true, Address: "/tmp/firedrill-5f3a/.s.PGSQL.54321",
			Database: "firedrill", ServerVersion: "16.4", VersionNum: 160004, DataDir: "/tmp/firedrill-5f3a/data"},
		Host: timeline.Host{Hostname: "ci-runner-7", OS: "linux", Arch: "amd64", CPUs: 8, MemBytes: 16 << 30, Kernel: "6.1.0-18-amd64"},
		Settings: map[string]string{
			"max_connections": "100", "shared_buffers": "128MB", "work_mem": "4MB", "autovacuum": "on",
			"autovacuum_vacuum_cost_limit": "200", "autovacuum_naptime": "60s", "multixact_member_buffers": "32",
			"multixact_offset_buffers": "16", "synchronous_commit": "on", "wal_level": "replica",
			"idle_in_transaction_session_timeout": "0", "statement_timeout": "0", "lock_timeout": "0",
			"max_wal_size": "1GB", "checkpoint_timeout": "5min", "effective_cache_size": "4GB",
		},
		Events: []timeline.EventInfo{
			{Name: "hold-snapshot", Kind: "hold_transaction", At: cfg.HoldFrom, Duration: cfg.HoldTo - cfg.HoldFrom},
			{Name: "raise-vacuum-limit", Kind: "settings", At: cfg.HoldTo + 20},
			{Name: "never-reached", Kind: "sql", At: duration + 60},
		},
	}
	if cfg.Samplers {
		for _, s := range []string{"pg_stat_activity", "pg_stat_slru", "xmin_horizon", "pg_stat_user_tables", "pg_stat_database", "host", "firedrill"} {
			m.Samplers = append(m.Samplers, timeline.SamplerInfo{Name: s})
		}
		m.Samplers = append(m.Samplers, timeline.SamplerInfo{Name: "pg_stat_statements", Notes: "pg_stat_statements is not installed (CREATE EXTENSION pg_stat_statements)"})
	}
	for i := 0; i < cfg.Workloads; i++ {
		w := timeline.WorkloadInfo{Name: workloadName(i), Clients: 16, Start: 0, Stop: duration, Mode: "prepared",
			Scripts: []timeline.ScriptInfo{{Name: "tx.sql", Weight: 1, File: "tx.sql", Commands: []string{
				"\\set id random(1, 100000)", "BEGIN;", "SELECT * FROM items WHERE id = :id FOR SHARE;",
				"UPDATE stock SET qty = qty - 1 WHERE item_id = :id;", "COMMIT;"}}}}
		if i == 1 {
			w.Pool = 8
		}
		m.Workloads = append(m.Workloads, w)
	}

	w, err := timeline.Create(dir)
	if err != nil {
		tb.Fatal(err)
	}
	// incident is 0 before the hold, ramps to 1 while it lasts and decays after.
	incident := func(t float64) float64 {
		switch {
		case t < cfg.HoldFrom:
			return 0
		case t < cfg.HoldTo:
			return math.Min(1, (t-cfg.HoldFrom)/((cfg.HoldTo-cfg.HoldFrom)*0.4))
		default:
			return math.Exp(-(t - cfg.HoldTo) / 15)
		}
	}
	w.Add(timeline.Record{Mark: &timeline.Mark{T: cfg.HoldFrom, Event: "hold-snapshot", Kind: "hold_transaction", Phase: timeline.PhaseStart,
		Detail: map[string]any{"pid": 4242, "xid": 771234}}})
	w.Add(timeline.Record{Mark: &timeline.Mark{T: cfg.HoldTo, Event: "hold-snapshot", Kind: "hold_transaction", Phase: timeline.PhaseEnd, Outcome: "rolled back"}})
	w.Add(timeline.Record{Mark: &timeline.Mark{T: cfg.HoldTo + 20, Event: "raise-vacuum-limit", Kind: "settings", Phase: timeline.PhaseStart}})
	w.Add(timeline.Record{Mark: &timeline.Mark{T: cfg.HoldTo + 20.2, Event: "raise-vacuum-limit", Kind: "settings", Phase: timeline.PhaseEnd, Outcome: "reloaded",
		Detail: map[string]any{"changed": map[string]any{"autovacuum_vacuum_cost_limit": map[string]any{"old": "200", "new": "2000"}, "autovacuum_naptime": "10s"}}}})

	var hist *timeline.Histogram
	if cfg.Histograms {
		hist = timeline.NewHistogram()
	}
	xminAge := 1000.0
	dead := make([]float64, cfg.Tables)
	for tick := 0; tick < cfg.Intervals; tick++ {
		t0, t1 := float64(tick), float64(tick+1)+0.0004*rng.Float64()
		x := incident(t1)
		for i := 0; i < cfg.Workloads; i++ {
			base := 900.0 / float64(i+1)
			tps := base * (1 - 0.75*x) * (0.95 + 0.1*rng.Float64())
			p50 := 2.0 * (1 + 6*x) * (0.9 + 0.2*rng.Float64())
			iv := timeline.Interval{Workload: workloadName(i), Start: t0, End: t1, Clients: 16,
				Count: int64(tps * (t1 - t0)),
				LatencyPct: timeline.Percentiles{P50: int64(p50 * 1000), P90: int64(p50 * 2200), P95: int64(p50 * 3000),
					P99: int64(p50 * 6000), P999: int64(p50 * 12000), Max: int64(p50 * 20000)}}
			if x > 0.3 && rng.Float64() < x {
				iv.Failed = int64(1 + 20*x*rng.Float64())
				iv.Errors = map[string]int64{"40P01": iv.Failed}
			}
			if hist != nil {
				hist.Reset()
				for k := 0; k < 50; k++ {
					hist.Record(int64(p50 * 1000 * (0.5 + 2*rng.Float64())))
				}
				iv.Latency = hist // encoded on Add, so one histogram serves every interval
			}
			if i == 1 {
				iv.PoolWaitPct = timeline.Percentiles{P50: 50, P99: int64(200 + 40000*x*rng.Float64()), Max: int64(300 + 80000*x)}
			}
			w.Add(timeline.Record{Interval: &iv})
		}
		if !cfg.Samplers {
			continue
		}
		ts := float64(tick + 1)
		if tick == cfg.Intervals/3 {
			w.Add(timeline.Record{Sample: &timeline.Sample{Source: "pg_stat_activity", T: ts, Error: "context deadline exceeded", Duration: 1000}})
		} else {
			v := map[string]float64{"wait.CPU": 3 + rng.Float64()*1.5 - 1.5*x}
			for k, name := range genWaits {
				level := 0.4 / float64(k+1) * rng.Float64()
				switch k {
				case 0:
					level += 9 * x
				case 1:
					level += 2.5 * x
				case 2:
					level += 1.2 * x
				}
				if level > 0.02 {
					v[name] = math.Round(level*100) / 100
				}
			}
			w.Add(timeline.Record{Sample: &timeline.Sample{Source: "pg_stat_activity", T: ts, Values: v, Duration: 2.1}})
		}
		slru := map[string]float64{}
		for k, name := range genSLRUs {
			if name == "Notify" || (name == "CommitTs" && tick%7 != 0) {
				continue // no reads this tick: no hit rate
			}
			h := 0.999 - 0.002*rng.Float64()
			if name == "MultiXactMember" {
				h -= 0.6 * x
			} else if name == "MultiXactOffset" {
				h -= 0.2 * x
			}
			slru[name+".hit_rate"] = h
			slru[name+".blks_read"] = float64(k) * 10 * x
		}
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "pg_stat_slru", T: ts, Values: slru}})
		if t1 >= cfg.HoldFrom && t1 < cfg.HoldTo {
			xminAge += 900 * (0.9 + 0.2*rng.Float64())
		} else {
			xminAge = 1000 + 200*rng.Float64()
		}
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "xmin_horizon", T: ts, Values: map[string]float64{"age": math.Round(xminAge)},
			Detail: json.RawMessage(`{"holder":"backend","pid":4242,"state":"idle in transaction"}`)}})
		tables := map[string]float64{}
		for k := range dead {
			if t1 >= cfg.HoldFrom && t1 < cfg.HoldTo {
				dead[k] += float64(40*(cfg.Tables-k)) * rng.Float64()
			} else if rng.Float64() < 0.05 {
				dead[k] *= 0.1 // autovacuum
			} else {
				dead[k] += float64(5*(cfg.Tables-k)) * rng.Float64()
			}
			name := fmt.Sprintf("public.t%02d", k)
			tables[name+".n_dead_tup"] = math.Round(dead[k])
			tables[name+".n_live_tup"] = 100000
		}
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "pg_stat_user_tables", T: ts, Values: tables}})
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "pg_stat_database", T: ts, Values: map[string]float64{
			"numbackends": float64(16*cfg.Workloads) + 4 + math.Round(6*x), "max_connections": 100 + 100*float64(cfg.Workloads/3), "xact_commit": 1000}}})
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "host", T: ts, Values: map[string]float64{
			"cpu.user": 45 - 20*x + 5*rng.Float64(), "cpu.system": 12 + 3*rng.Float64(), "cpu.iowait": 2 + 25*x*rng.Float64(),
			"disk.write_bytes_per_s": 40e6 + 30e6*rng.Float64(), "disk.read_bytes_per_s": 2e6 + 80e6*x*rng.Float64(),
			"disk.await_ms": 0.4 + 6*x*rng.Float64(), "mem.used_bytes": 6e9}}})
		w.Add(timeline.Record{Sample: &timeline.Sample{Source: "firedrill", T: ts, Values: map[string]float64{
			"cpu": 0.8 + 0.3*rng.Float64() - 0.5*x, "rss_bytes": 60e6 + 1e4*float64(tick)}}})
		if tick%10 == 9 {
			if err := w.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := timeline.WriteJSON(dir, timeline.ManifestFile, m); err != nil {
		tb.Fatal(err)
	}
	if err := timeline.WriteJSON(dir, timeline.SummaryFile, genSummary(cfg, duration, hist)); err != nil {
		tb.Fatal(err)
	}
	findings := genFindings(cfg)
	if err := timeline.WriteJSON(dir, timeline.FindingsFile, diagnose.Findings{Format: diagnose.FindingsFormat, Findings: findings}); err != nil {
		tb.Fatal(err)
	}
	run, err := openRun(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return run, findings
}

func genSummary(cfg genConfig, duration float64, hist *timeline.Histogram) timeline.Summary {
	s := timeline.Summary{Duration: duration}
	pct := timeline.Percentiles{P50: 2400, P90: 5100, P95: 7300, P99: 31000, P999: 88000, Max: 240000}
	for i := 0; i < cfg.Workloads; i++ {
		n := int64(900 / float64(i+1) * duration * 0.8)
		ws := timeline.WorkloadSummary{Name: workloadName(i), Duration: duration, Count: n, Failed: 412, TPS: float64(n) / duration,
			Latency: hist, LatencyPct: pct,
			Scripts: []timeline.ScriptSummary{{Name: "tx.sql", Count: n, Failed: 412, Latency: hist, LatencyPct: pct, Commands: []timeline.CommandSummary{
				{Line: 1, Text: "\\set id random(1, 100000)", Count: n, MeanUS: 0.4, LatencyPct: timeline.Percentiles{P50: 1, P99: 2, Max: 40}},
				{Line: 2, Text: "BEGIN;", Count: n, MeanUS: 80, LatencyPct: timeline.Percentiles{P50: 70, P95: 120, P99: 300, Max: 4000}},
				{Line: 3, Text: "SELECT * FROM items WHERE id = :id FOR SHARE;", Count: n, MeanUS: 1900, LatencyPct: timeline.Percentiles{P50: 900, P95: 4200, P99: 28000, Max: 230000}, Failures: 12},
				{Line: 4, Text: "UPDATE stock SET qty = qty - 1 WHERE item_id = :id AND qty > 0 AND warehouse_id IN (SELECT id FROM warehouses WHERE region = 'eu-west-1');", Count: n - 12, MeanUS: 700, LatencyPct: timeline.Percentiles{P50: 400, P95: 1500, P99: 3000, Max: 9000}, Failures: 400},
				{Line: 5, Text: "COMMIT;", Count: n - 412, MeanUS: 300, LatencyPct: timeline.Percentiles{P50: 250, P95: 600, P99: 1400, Max: 8000}},
			}}},
			Errors: []timeline.ErrorSummary{
				{Code: "40P01", Message: "deadlock detected", Detail: "Process 4301 waits for ShareLock on transaction 771301; blocked by process 4297.\nProcess 4297 waits for ShareLock on transaction 771300; blocked by process 4301.", Count: 400, First: cfg.HoldFrom + 31, Last: cfg.HoldTo - 2},
				{Code: "55P03", Message: "could not obtain lock on row in relation \"items\"", Count: 12, First: cfg.HoldFrom + 50, Last: cfg.HoldFrom + 70},
			}}
		if i == 1 {
			ws.PoolPct = timeline.Percentiles{P50: 50, P99: 18000, Max: 80000}
			ws.Errors = append(ws.Errors, timeline.ErrorSummary{Code: timeline.PoolTimeoutCode, Message: "no connection from the pool within 5s", Count: 3, First: cfg.HoldFrom + 80, Last: cfg.HoldFrom + 81})
		}
		s.Workloads = append(s.Workloads, ws)
	}
	return s
}

func genFindings(cfg genConfig) []diagnose.Finding {
	mid := cfg.HoldFrom + (cfg.HoldTo-cfg.HoldFrom)*0.4
	return []diagnose.Finding{
		{
			Rule: "xmin_horizon_held", Severity: diagnose.Warning, Start: cfg.HoldFrom, End: cfg.HoldTo,
			Headline: fmt.Sprintf("An idle-in-transaction session (pid 4242) held the xmin horizon for %.0f s; dead tuples could not be vacuumed", cfg.HoldTo-cfg.HoldFrom),
			Evidence: []diagnose.Evidence{
				{Series: "xmin_horizon:age", T: cfg.HoldTo - 1, Value: 90123, Text: "xmin horizon age peaked at 90 123 xids"},
				{Series: "event:hold-snapshot", T: cfg.HoldFrom, Text: "hold-snapshot began a transaction and left it idle"},
				{Series: "pg_stat_user_tables:public.t00.n_dead_tup", T: cfg.HoldTo - 1, Value: 160000, Text: "dead tuples in public.t00 grew 40× while held"},
			},
			Mechanism: "VACUUM can only remove row versions no running snapshot can see. A session idle in a transaction keeps its snapshot, so the horizon stays put and dead tuples pile up in every table.",
			Remedy:    "Set idle_in_transaction_session_timeout (e.g. ALTER SYSTEM SET idle_in_transaction_session_timeout = '60s'; SELECT pg_reload_conf();) and find the client that leaves transactions open.",
			References: []string{"https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-IDLE-IN-TRANSACTION-SESSION-TIMEOUT",
				"INCIDENTS.md#held-xmin"},
		},
		{
			Rule: "slru_thrashing", Severity: diagnose.Critical, Start: mid, End: cfg.HoldTo + 30, Workload: "orders",
			Headline: "MultiXactMember SLRU thrashing: hit rate fell to 40%, sessions queued on MultiXactMemberSLRU and throughput dropped 75% <b>not bold</b>",
			Evidence: []diagnose.Evidence{
				{Series: "pg_stat_slru:MultiXactMember.hit_rate", T: mid + 10, Value: 0.4, Text: "hit rate 40% (99.9% before)"},
				{Series: "pg_stat_activity:wait.LWLock:MultiXactMemberSLRU", T: mid + 10, Value: 9.3, Text: "9.3 sessions waiting on average"},
				{Series: "workload:orders.tps", T: mid + 10, Value: 226, Text: "226 tx/s, down from 900"},
			},
			Mechanism:  "SELECT … FOR SHARE by many sessions creates multixacts; with the horizon held they cannot be truncated, the member SLRU outgrows its buffers and every lookup reads pages from disk under one lock.",
			Remedy:     "Raise multixact_member_buffers (PostgreSQL 17+), avoid FOR SHARE on hot rows, and keep the horizon moving (see the other finding).",
			References: []string{"https://www.postgresql.org/docs/17/runtime-config-resource.html#GUC-MULTIXACT-MEMBER-BUFFERS"},
		},
	}
}
