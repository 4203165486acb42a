package pgrules

import (
	"encoding/json"
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"maps"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// holdEventPID is the pid of the recording's hold_transaction session.
func holdEventPID(t *testing.T, run *timeline.Run) int {
	t.Helper()
	for _, e := range diagnose.Events(run) {
		if pid, ok := numberOf(e.Started["pid"]); e.Kind == "hold_transaction" && ok {
			return int(pid)
		}
	}
	t.Fatal("the recording has no hold_transaction event")
	return 0
}

func TestXminHorizonHeldNamesTheHolder(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"multixact-broken", "multixact-control", "subtrans"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := openRecording(t, name)
			pid := holdEventPID(t, run)
			// The recordings show the sampler caveat: when ages tie,
			// xmin_horizon's detail names workload sessions too.
			others := 0
			for _, s := range run.SourceSamples("xmin_horizon") {
				var d pgmetric.XminHolder
				if diagnose.Detail(&s, &d) && d.PID != 0 && d.PID != pid {
					others++
				}
			}
			if others == 0 {
				t.Fatalf("expected xmin_horizon details naming other sessions than pid %d", pid)
			}
			fs := findingsOf(xminHorizonHeld{}, run)
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
			}
			f := fs[0]
			want := fmt.Sprintf("pid %d", pid)
			for _, s := range []string{want, "idle-in-transaction", "SELECT txid_current()", "pgbench_accounts"} {
				if !strings.Contains(f.Headline, s) {
					t.Errorf("headline lacks %q: %s", s, f.Headline)
				}
			}
			if !strings.Contains(f.Remedy, fmt.Sprintf("pg_terminate_backend(%d)", pid)) ||
				!strings.Contains(f.Remedy, "idle_in_transaction_session_timeout") {
				t.Errorf("remedy: %s", f.Remedy)
			}
			if f.Severity != diagnose.Warning && f.Severity != diagnose.Critical {
				t.Errorf("severity %s", f.Severity)
			}
			hold := diagnose.Events(run)[0]
			if f.Start > hold.Start+5 || f.End < hold.End-5 {
				t.Errorf("window [%.0f, %.0f] misses the hold [%.0f, %.0f]", f.Start, f.End, hold.Start, hold.End)
			}
		})
	}
}

// TestXminHorizonHeldNeedsNoEvent: rules are judged on runs they have not
// seen, where no firedrill event opened the transaction. Without marks the
// session list decides; without session lists the event decides.
func TestXminHorizonHeldNeedsNoEvent(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	pid := holdEventPID(t, run)
	want := fmt.Sprintf("pid %d", pid)

	noMarks := *run
	noMarks.Marks = nil
	fs := findingsOf(xminHorizonHeld{}, &noMarks)
	if len(fs) != 1 || !strings.Contains(fs[0].Headline, want) {
		t.Errorf("without event marks: %+v", fs)
	}

	noSessions := *run
	noSessions.Samples = nil
	for _, s := range run.Samples {
		if s.Source != "pg_stat_activity" {
			noSessions.Samples = append(noSessions.Samples, s)
		}
	}
	fs = findingsOf(xminHorizonHeld{}, &noSessions)
	if len(fs) != 1 || !strings.Contains(fs[0].Headline, want) {
		t.Errorf("without pg_stat_activity: %+v", fs)
	}

	// With only xmin_horizon's details, most of which name workload
	// sessions: the session open longest across the hold wins.
	neither := noSessions
	neither.Marks = nil
	fs = findingsOf(xminHorizonHeld{}, &neither)
	if len(fs) != 1 || !strings.Contains(fs[0].Headline, want) {
		t.Errorf("with only xmin_horizon and tables: %+v", fs)
	}
}

func TestXminHorizonHeldQuiet(t *testing.T) {
	t.Parallel()
	// healthy and guarded: short transactions only; multixact-timeout: the
	// same long transaction, ended by idle_in_transaction_session_timeout
	// after 5 s.
	for _, name := range []string{"healthy", "guarded", "multixact-timeout", "generator-limited"} {
		if fs := findingsOf(xminHorizonHeld{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %d findings, want none: %s", name, len(fs), fs[0].Headline)
		}
	}
}

// syntheticHold builds a run where the horizon is held for 60 s by holder
// while a table gains dead rows.
func syntheticHold(holder pgmetric.XminHolder) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Target: timeline.Target{Kind: "postgres"}}}
	for t := 0; t <= 80; t++ {
		age := 50.0
		if t >= 10 && t <= 70 {
			age = 50 + float64(t-10)*1000
		}
		values := map[string]float64{"age": age, "backend_age": 0, "prepared_age": 0, "slot_age": 0}
		var detail json.RawMessage
		if t >= 10 && t <= 70 {
			h := holder
			h.Age = age
			key := map[string]string{"backend": "backend_age", "prepared": "prepared_age", "slot": "slot_age"}[h.Kind]
			values[key] = age
			detail, _ = json.Marshal(h)
		}
		run.Samples = append(run.Samples,
			timeline.Sample{Source: "xmin_horizon", T: float64(t), Values: values, Detail: detail},
			timeline.Sample{Source: "pg_stat_user_tables", T: float64(t), Values: map[string]float64{
				"public.orders.n_dead_tup": 100 + float64(min(t, 70))*500, "public.orders.n_live_tup": 50000,
				"public.orders.autovacuum_count": map[bool]float64{true: 1}[t == 40]}})
	}
	return run
}

func TestXminHorizonHeldHolderKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		holder   pgmetric.XminHolder
		headline []string
		remedy   string
	}{
		{"prepared transaction", pgmetric.XminHolder{Kind: "prepared", GID: "tx-42"},
			[]string{"prepared transaction", "tx-42", "orders", "autovacuum ran 1×"}, "ROLLBACK PREPARED 'tx-42'"},
		{"replication slot", pgmetric.XminHolder{Kind: "slot", SlotName: "standby_1", State: "inactive"},
			[]string{"replication slot", "standby_1"}, "pg_drop_replication_slot('standby_1')"},
		{"long query", pgmetric.XminHolder{Kind: "backend", PID: 321, State: "active", Query: "SELECT count(*) FROM big"},
			[]string{"long-running query", "pid 321", "SELECT count(*) FROM big"}, "statement_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := findingsOf(xminHorizonHeld{}, syntheticHold(tt.holder))
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1", len(fs))
			}
			for _, s := range tt.headline {
				if !strings.Contains(fs[0].Headline, s) {
					t.Errorf("headline lacks %q: %s", s, fs[0].Headline)
				}
			}
			if !strings.Contains(fs[0].Remedy, tt.remedy) {
				t.Errorf("remedy lacks %q: %s", tt.remedy, fs[0].Remedy)
			}
		})
	}
}

func TestXminHorizonHeldIgnoresHarmlessHolds(t *testing.T) {
	t.Parallel()
	// Held, but nothing was updated: no dead rows, no finding.
	run := syntheticHold(pgmetric.XminHolder{Kind: "backend", PID: 7, State: "idle in transaction"})
	for i := range run.Samples {
		if run.Samples[i].Source == "pg_stat_user_tables" {
			run.Samples[i].Values["public.orders.n_dead_tup"] = 100
		}
	}
	if fs := findingsOf(xminHorizonHeld{}, run); len(fs) != 0 {
		t.Errorf("no dead rows: got %s", fs[0].Headline)
	}
	// Held for 10 s only: one slow request, not a held horizon.
	short := syntheticHold(pgmetric.XminHolder{Kind: "backend", PID: 7, State: "idle in transaction"})
	for i := range short.Samples {
		s := &short.Samples[i]
		if s.Source == "xmin_horizon" && s.T > 20 {
			s.Values["age"] = 60
		}
	}
	if fs := findingsOf(xminHorizonHeld{}, short); len(fs) != 0 {
		t.Errorf("10 s hold: got %s", fs[0].Headline)
	}
}

// rewriteDeadRows returns a copy of run in which the dead-row counts of
// public.pgbench_accounts are deadAt(t, recorded) and the sample nearest
// vacuumAt reports one autovacuum. The recording itself is left alone.
func rewriteDeadRows(run *timeline.Run, vacuumAt float64, deadAt func(t, recorded float64) float64) *timeline.Run {
	const table = "public.pgbench_accounts"
	v := *run
	v.Samples = make([]timeline.Sample, len(run.Samples))
	copy(v.Samples, run.Samples)
	vacuum := diagnose.SampleNear(run, "pg_stat_user_tables", vacuumAt, 0.5*diagnose.Tick(run))
	for i := range v.Samples {
		s := &v.Samples[i]
		dead, ok := s.Values[table+".n_dead_tup"]
		if s.Source != "pg_stat_user_tables" || !ok {
			continue
		}
		values := maps.Clone(s.Values)
		values[table+".n_dead_tup"] = deadAt(s.T, dead)
		values[table+".autovacuum_count"] = 0
		if vacuum != nil && s.T == vacuum.T {
			values[table+".autovacuum_count"] = 1
		}
		s.Values = values
	}
	return &v
}

// recordedDeadAt is the recording's dead-row count at the sample nearest t.
func recordedDeadAt(t *testing.T, run *timeline.Run, at float64) float64 {
	t.Helper()
	s := diagnose.SampleNear(run, "pg_stat_user_tables", at, 0.5*diagnose.Tick(run))
	if s == nil {
		t.Fatalf("no pg_stat_user_tables sample near %.1f", at)
	}
	return s.Values["public.pgbench_accounts.n_dead_tup"]
}

// TestXminHorizonHeldAutovacuumAsTheHoldBegins is the full multixact
// drill: autovacuum's one-minute cycle and the hold both start at 60 s, so
// an autovacuum reported one or two ticks after the hold's start removes
// the dead rows of before the hold (42,106 → 1,925), and dead rows then
// grow from that dip to over a million. The vacuum says nothing about the
// hold: growth counts from the dip.
func TestXminHorizonHeldAutovacuumAsTheHoldBegins(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	holds := horizonHolds(run, horizonMinHoldS)
	if len(holds) != 1 {
		t.Fatalf("the recording has %d holds, want 1", len(holds))
	}
	h := holds[0]
	for _, ticks := range []float64{1, 2} {
		t.Run(fmt.Sprintf("reported %.0f ticks in", ticks), func(t *testing.T) {
			t.Parallel()
			vacuumAt := h.Start + ticks*diagnose.Tick(run)
			const dip = 400 // what the vacuum left: rows that died as it ran
			removed := recordedDeadAt(t, run, vacuumAt) - dip
			v := rewriteDeadRows(run, vacuumAt, func(at, recorded float64) float64 {
				if at < vacuumAt-0.5*diagnose.Tick(run) {
					return recorded
				}
				return recorded - removed
			})
			fs := findingsOf(xminHorizonHeld{}, v)
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1", len(fs))
			}
			for _, s := range []string{"dead rows in pgbench_accounts piled up 400 → ", "vacuum could not remove them"} {
				if !strings.Contains(fs[0].Headline, s) {
					t.Errorf("headline lacks %q: %s", s, fs[0].Headline)
				}
			}
			found := false
			for _, e := range fs[0].Evidence {
				found = found || strings.Contains(e.Text, "a vacuum as the hold began had removed the older ones")
			}
			if !found {
				t.Errorf("no evidence names the vacuum at the hold's start: %+v", fs[0].Evidence)
			}
		})
	}
}

// TestXminHorizonHeldVacuumsDuringTheHold: a vacuum in the middle of the
// hold cannot remove what died since it began; PostgreSQL still lowers
// n_dead_tup somewhat (it replaces the count with what the vacuum saw).
// Such a vacuum early in a hold left fewer dead rows than half the final
// peak, which is no sign of cleaning up. A vacuum that does bring the count
// back down shows the horizon did not hold this table back.
func TestXminHorizonHeldVacuumsDuringTheHold(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	h := horizonHolds(run, horizonMinHoldS)[0]
	vacuumAt := h.Start + 0.25*h.Duration()
	before := recordedDeadAt(t, run, vacuumAt)

	// Removes nothing: the count falls by 15 % and grows on.
	held := rewriteDeadRows(run, vacuumAt, func(at, recorded float64) float64 {
		if at < vacuumAt-0.5*diagnose.Tick(run) {
			return recorded
		}
		return recorded - 0.15*before
	})
	fs := findingsOf(xminHorizonHeld{}, held)
	if len(fs) != 1 {
		t.Fatalf("vacuum that removed nothing: got %d findings, want 1", len(fs))
	}
	if !strings.Contains(fs[0].Headline, "although autovacuum ran 1×") {
		t.Errorf("headline: %s", fs[0].Headline)
	}

	// Removes what piled up (back to the count at the hold's start): not held.
	start := recordedDeadAt(t, run, h.Start)
	cleaned := rewriteDeadRows(run, vacuumAt, func(at, recorded float64) float64 {
		if at < vacuumAt-0.5*diagnose.Tick(run) {
			return recorded
		}
		return start + 0.1*(recorded-before)
	})
	if fs := findingsOf(xminHorizonHeld{}, cleaned); len(fs) != 0 {
		t.Errorf("vacuum that cleaned up: got %s", fs[0].Headline)
	}
}

// A live pass (the run still going) does not say the horizon was "still
// held when the run ended" (issue 26: printed at 53 s of a 210 s run).
func TestXminHorizonHeldLiveSaysNotRunEnded(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	live := &timeline.Run{Dir: run.Dir, Manifest: run.Manifest}
	live.Manifest.Status = timeline.StatusRunning
	for _, s := range run.Samples {
		if s.T <= 40 {
			live.Samples = append(live.Samples, s)
		}
	}
	for _, iv := range run.Intervals {
		if iv.End <= 40 {
			live.Intervals = append(live.Intervals, iv)
		}
	}
	live.Marks = run.Marks
	fs := findingsOf(xminHorizonHeld{}, live)
	if len(fs) == 0 {
		t.Fatal("no xmin-horizon-held finding at 40 s")
	}
	if h := fs[0].Headline; strings.Contains(h, "when the run ended") || !strings.Contains(h, "still held at") {
		t.Errorf("live headline: %s", h)
	}
}
