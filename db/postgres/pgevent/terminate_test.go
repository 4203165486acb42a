package pgevent

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

func TestTerminate(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	env := envFor(inst)
	connString := inst.ConnString()

	t.Run("the sessions of a workload, and no others", func(t *testing.T) {
		fake1 := connectAs(t, connString, "firedrill:fake")
		fake2 := connectAs(t, connString, "firedrill:fake")
		other := connectAs(t, connString, "firedrill:other")
		ev := mustNew(t, scenario.Event{Name: "kill-fake", Kind: "terminate", Config: event.TerminateConfig[int]{Workload: "fake"}})
		outcome, detail, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := "terminated 2 backends of workload fake"; outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		pids, _ := detail["pids"].([]int)
		slices.Sort(pids)
		want := []int{int(fake1.PID()), int(fake2.PID())}
		slices.Sort(want)
		if !slices.Equal(pids, want) {
			t.Errorf("detail pids = %v, want %v", detail["pids"], want)
		}
		for _, conn := range []*pgconn.PgConn{fake1, fake2} {
			if n := queryValue(t, connString, fmt.Sprintf("SELECT count(*) FROM pg_stat_activity WHERE pid = %d", conn.PID())); n != "0" {
				t.Errorf("backend %d is still there", conn.PID())
			}
		}
		if _, err := fake1.Exec(context.Background(), "SELECT 1").ReadAll(); err == nil {
			t.Error("a terminated session still answers")
		}
		if _, err := other.Exec(t.Context(), "SELECT 1").ReadAll(); err != nil {
			t.Errorf("the other workload's session was hurt: %v", err)
		}
	})

	t.Run("a workload without sessions", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "kill-none", Kind: "terminate", Config: event.TerminateConfig[int]{Workload: "idle"}})
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := "terminated 0 backends of workload idle"; outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
	})

	t.Run("a pid", func(t *testing.T) {
		victim := connectAs(t, connString, "victim")
		ev := mustNew(t, scenario.Event{Name: "kill-pid", Kind: "terminate", Config: event.TerminateConfig[int]{By: int(victim.PID())}})
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := fmt.Sprintf("terminated pid %d", victim.PID()); outcome != want {
			t.Errorf("outcome %q, want %q", outcome, want)
		}
		if _, err := victim.Exec(context.Background(), "SELECT 1").ReadAll(); err == nil {
			t.Error("the terminated session still answers")
		}
	})

	t.Run("a pid that is not a backend", func(t *testing.T) {
		ev := mustNew(t, scenario.Event{Name: "kill-self", Kind: "terminate", Config: event.TerminateConfig[int]{By: os.Getpid()}})
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err == nil {
			t.Fatalf("Run succeeded: %s", outcome)
		}
		t.Logf("outcome: %s; error: %v", outcome, err)
		mustContain(t, "error", err.Error(), "is not a PostgreSQL")
	})
}
