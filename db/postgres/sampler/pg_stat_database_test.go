package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestDeadlock makes two sessions deadlock and sees "deadlocks" count it
// in an interval, and the connection limits.
func TestDeadlock(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, databaseName)
	setup := openSession(t, server.ConnString(), "deadlock-setup")
	exec(t, setup, "DROP TABLE IF EXISTS deadlock_test; CREATE TABLE deadlock_test (id int PRIMARY KEY, v int); INSERT INTO deadlock_test VALUES (1, 0), (2, 0)")
	first, _ := sample(t, smp)

	a := openSession(t, server.ConnString(), "deadlock-a")
	b := openSession(t, server.ConnString(), "deadlock-b")
	exec(t, a, "BEGIN; UPDATE deadlock_test SET v = 1 WHERE id = 1")
	exec(t, b, "BEGIN; UPDATE deadlock_test SET v = 1 WHERE id = 2")
	done := make(chan error, 1)
	go func() {
		_, err := a.Exec(context.Background(), "UPDATE deadlock_test SET v = 2 WHERE id = 2")
		done <- err
	}()
	waitForLockWait(t, setup, pid(a))
	_, errB := b.Exec(context.Background(), "UPDATE deadlock_test SET v = 2 WHERE id = 1")
	errA := <-done
	if isDeadlock(errA) == isDeadlock(errB) {
		t.Fatalf("want exactly one deadlock error, got %v and %v", errA, errB)
	}
	// Sessions send their statistics when they end.
	a.Close(t.Context())
	b.Close(t.Context())

	// Backends flush their counts at most once a second, so a single
	// interval may show none of the rates: sum them over the intervals.
	sums := map[string]float64{}
	rates := []string{"xact_commit_per_s", "blks_hit_per_s", "tup_returned_per_s"}
	values, _ := sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		for _, key := range append(rates, "deadlocks") {
			sums[key] += values[key]
		}
		return sums["deadlocks"] >= 1 && sums["xact_commit_per_s"] > 0 && sums["blks_hit_per_s"] > 0 && sums["tup_returned_per_s"] > 0
	})
	if values["deadlocks_total"] < first["deadlocks_total"]+1 {
		t.Errorf("deadlocks_total went from %v to %v, want +1", first["deadlocks_total"], values["deadlocks_total"])
	}
	for key, want := range map[string]float64{"max_connections": 200, "superuser_reserved_connections": 3} {
		if values[key] != want {
			t.Errorf("%s = %v, want %v", key, values[key], want)
		}
	}
	if values["numbackends"] < 1 {
		t.Errorf("numbackends = %v, want ≥ 1 (the sampler's own session at least)", values["numbackends"])
	}
}

// isDeadlock reports whether err is PostgreSQL's deadlock error.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
