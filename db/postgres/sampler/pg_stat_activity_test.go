package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestIdleInTransaction holds a transaction open with an xid and sees it in
// the state counts, the per-application counts and the detail, while no
// sampler session shows anywhere. The xmin horizon test next door relies on
// the same kind of holder; both look at the whole server, so neither runs in
// parallel.
func TestIdleInTransaction(t *testing.T) {
	set := newSet(t, server.ConnString(), Options{})
	// Another run's samplers: each set leaves out both itself and the other.
	other := newSet(t, server.ConnString(), Options{AppName: DefaultAppName + "-other"})
	// A set named outside the convention still leaves itself out.
	custom := newSet(t, server.ConnString(), Options{AppName: "custom-sampler"})
	holder := openSession(t, server.ConnString(), "idle-holder")
	exec(t, holder, "BEGIN; SELECT txid_current() AS activity_test")
	time.Sleep(20 * time.Millisecond) // so that the transaction has an age

	for _, s := range []*Set{set, other, custom} {
		values, detail := sample(t, samplerOf(t, s, activityName))
		t.Logf("values %v", values)
		assertNoSampler(t, values, detail)
		if s == custom {
			for key := range values {
				if strings.Contains(key, "custom-sampler") {
					t.Errorf("value %q names the custom-named sampler's own session", key)
				}
			}
		}
		if got := values["state.idle in transaction"]; got < 1 {
			t.Errorf(`state.idle in transaction = %v, want ≥ 1`, got)
		}
		if got := values["app.idle-holder.sessions"]; got != 1 {
			t.Errorf("app.idle-holder.sessions = %v, want 1", got)
		}
		if got, ok := values["app.idle-holder.active"]; ok {
			t.Errorf("app.idle-holder.active = %v, want absent (it is idle)", got)
		}
		for _, key := range []string{"oldest_xact_age_s", "oldest_idle_in_xact_s"} {
			if values[key] <= 0 {
				t.Errorf("%s = %v, want > 0", key, values[key])
			}
		}
		if _, ok := values["oldest_backend_xmin_age"]; !ok {
			t.Error("oldest_backend_xmin_age missing")
		}
		if values["connections"] < 1 || values["connections_total"] < values["connections"]+2 {
			t.Errorf("connections = %v, connections_total = %v: want ≥ 1, and at least two sampler sessions on top",
				values["connections"], values["connections_total"])
		}
		sessions, ok := detail.([]ActivitySession)
		if !ok {
			t.Fatalf("detail is %T, want []ActivitySession", detail)
		}
		if len(sessions) > topSessions {
			t.Errorf("detail lists %d sessions, want ≤ %d", len(sessions), topSessions)
		}
		found := false
		for _, session := range sessions {
			if session.PID != pid(holder) {
				continue
			}
			found = true
			if session.State != "idle in transaction" || session.BackendXID == "" || session.XactAgeS <= 0 ||
				!strings.Contains(session.Query, "activity_test") || session.ApplicationName != "idle-holder" {
				t.Errorf("holder's session in the detail: %+v", session)
			}
		}
		if !found {
			t.Errorf("holder pid %d not in the detail %+v", pid(holder), sessions)
		}
	}
}

// TestActiveSessionsByWait runs sessions that sleep and sessions that wait
// for a lock, and sees them in aas split by wait event.
func TestActiveSessionsByWait(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, activityName)
	setup := openSession(t, server.ConnString(), "aas-setup")
	exec(t, setup, "DROP TABLE IF EXISTS aas_test; CREATE TABLE aas_test (id int PRIMARY KEY); INSERT INTO aas_test VALUES (1)")
	exec(t, setup, "BEGIN; LOCK TABLE aas_test IN ACCESS EXCLUSIVE MODE")

	const sleepers, waiters = 2, 3
	done := make(chan error, sleepers+waiters)
	var workers []*pgx.Conn
	for i := range sleepers + waiters {
		conn := openSession(t, server.ConnString(), "aas-worker")
		workers = append(workers, conn)
		sql := "SELECT pg_sleep(30)"
		if i >= sleepers {
			sql = "SELECT * FROM aas_test"
		}
		go func() { _, err := conn.Exec(context.Background(), sql); done <- err }()
	}
	// The workers end before their sessions close: the lock goes, the
	// sleepers are cancelled.
	t.Cleanup(func() {
		exec(t, setup, "ROLLBACK")
		for _, conn := range workers[:sleepers] {
			_ = conn.PgConn().CancelRequest(context.Background())
		}
		for range workers {
			<-done
		}
	})
	values, _ := sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		return values["app.aas-worker.active"] == sleepers+waiters &&
			values["wait.Timeout:PgSleep"] >= sleepers && values["wait.Lock:relation"] >= waiters
	})
	if values["aas"] < sleepers+waiters {
		t.Errorf("aas = %v, want ≥ %d", values["aas"], sleepers+waiters)
	}
	var waits float64
	for key, v := range values {
		if strings.HasPrefix(key, "wait.") {
			waits += v
		}
	}
	if waits != values["aas"] {
		t.Errorf("the wait.* values add up to %v, aas is %v: every active session has exactly one wait (or CPU)", waits, values["aas"])
	}
}

// TestSummarizeActivity checks the counting rules on fixed rows.
func TestSummarizeActivity(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	rows := []activityRow{
		// An active client on CPU and one waiting for a lock.
		{pid: 1, backendType: "client backend", app: "app", state: "active", xactAge: f(2), query: s("q1"), counted: true},
		{pid: 2, backendType: "client backend", app: "app", state: "active", waitType: "Lock", waitEvent: "tuple", xactAge: f(1), query: s("q2"), counted: true},
		// Idle in transaction without a name: counted, not active.
		{pid: 3, backendType: "client backend", state: "idle in transaction", waitType: "Client", waitEvent: "ClientRead",
			xactAge: f(9), idleInXact: f(8), xminAge: f(40), backendXID: s("123"), query: s("q3"), counted: true},
		// An autovacuum worker is active but not a connection.
		{pid: 4, backendType: "autovacuum worker", state: "active", waitType: "IO", waitEvent: "DataFileRead", xactAge: f(5), counted: true},
		// A background process has no state.
		{pid: 5, backendType: "checkpointer", counted: true},
		// A sampler's session counts only in connections_total.
		{pid: 6, backendType: "client backend", app: "firedrill-sampler", state: "active", xactAge: f(100), xminAge: f(99), query: s("q"), counted: false},
	}
	values, detail := summarizeActivity(rows)
	want := map[string]float64{
		"aas": 3, "wait.CPU": 1, "wait.Lock:tuple": 1, "wait.IO:DataFileRead": 1,
		"state.active": 2, "state.idle in transaction": 1,
		"app.app.sessions": 2, "app.app.active": 2, "app.(none).sessions": 1,
		"connections": 3, "connections_total": 4, "autovacuum_workers": 1,
		"oldest_xact_age_s": 9, "oldest_idle_in_xact_s": 8, "oldest_backend_xmin_age": 40,
	}
	if fmt.Sprint(values) != fmt.Sprint(want) {
		t.Errorf("values\n got %v\nwant %v", values, want)
	}
	var pids []int
	for _, session := range detail {
		pids = append(pids, session.PID)
	}
	if fmt.Sprint(pids) != "[3 1 2]" {
		t.Errorf("detail pids %v, want [3 1 2]: oldest transaction first, only rows with a query text", pids)
	}
}

// TestCapApps keeps the busiest application names and sums the rest.
func TestCapApps(t *testing.T) {
	t.Parallel()
	counts := map[string]float64{}
	for i := range maxApps + 10 {
		counts[fmt.Sprintf("client-%03d", i)] = float64(i)
	}
	capped := capApps(counts)
	if len(capped) != maxApps {
		t.Fatalf("%d names, want %d", len(capped), maxApps)
	}
	var total float64
	for _, n := range capped {
		total += n
	}
	if want := float64((maxApps + 10) * (maxApps + 9) / 2); total != want {
		t.Errorf("sessions add up to %v, want %v", total, want)
	}
	if _, ok := capped["client-059"]; !ok {
		t.Errorf("the busiest name is missing: %v", capped)
	}
	if _, ok := capped["client-000"]; ok {
		t.Errorf("an idle name survived the cap: %v", capped)
	}
}
