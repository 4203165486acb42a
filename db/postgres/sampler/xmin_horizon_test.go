package postgres

import (
	"context"
	"testing"
)

// TestXminHorizonHolders holds the horizon back with a session, then with a
// prepared transaction, and finds each as the holder. Not parallel: the
// horizon is the whole server's, and another test's transaction could be
// older.
func TestXminHorizonHolders(t *testing.T) {
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, xminHorizonName)
	holder := openSession(t, server.ConnString(), "xmin-holder")
	exec(t, holder, "BEGIN; SELECT txid_current() AS xmin_test")
	// Later transactions make the holder's xid old.
	burner := openSession(t, server.ConnString(), "xmin-burner")
	for range 5 {
		exec(t, burner, "SELECT txid_current()")
	}

	values, detail := sample(t, smp)
	assertNoSampler(t, values, detail)
	h, ok := detail.(*XminHolder)
	if !ok {
		t.Fatalf("detail is %T, want *XminHolder", detail)
	}
	if h.Kind != "backend" || h.PID != pid(holder) || h.ApplicationName != "xmin-holder" ||
		h.State != "idle in transaction" || h.XactAgeS == nil || h.Query == "" {
		t.Errorf("holder %+v, want the backend of pid %d", h, pid(holder))
	}
	if values["age"] < 5 || values["backend_age"] != values["age"] || values["prepared_age"] != 0 || values["slot_age"] != 0 {
		t.Errorf("values %v: want age ≥ 5 from the backend alone", values)
	}

	// A prepared transaction outlives its session and holds the horizon
	// until it is committed or rolled back.
	preparer := openSession(t, server.ConnString(), "xmin-preparer")
	exec(t, preparer, "BEGIN; SELECT txid_current(); PREPARE TRANSACTION 'xmin_test'")
	t.Cleanup(func() {
		// Gone already unless the test failed before its end; a prepared
		// transaction left behind would hold the horizon for every test.
		_, _ = burner.Exec(context.Background(), "ROLLBACK PREPARED 'xmin_test'")
	})
	exec(t, holder, "COMMIT")
	exec(t, burner, "SELECT txid_current()")
	values, detail = sample(t, smp)
	h, ok = detail.(*XminHolder)
	if !ok || h.Kind != "prepared" || h.GID != "xmin_test" || h.PID != 0 {
		t.Errorf("holder %+v, want the prepared transaction xmin_test", detail)
	}
	if values["prepared_age"] < 1 || values["age"] != values["prepared_age"] {
		t.Errorf("values %v: want age = prepared_age ≥ 1", values)
	}

	exec(t, burner, "ROLLBACK PREPARED 'xmin_test'")
	values, detail = sample(t, smp)
	if detail != nil || values["age"] != 0 {
		t.Errorf("nothing holds the horizon, yet values %v, detail %+v", values, detail)
	}
}

// TestXminHorizonHolderOwnsTheXid: while a transaction with an xid is
// open, every snapshot taken since has that xid as its xmin, so other
// sessions tie with the holder on age; the holder is the session whose
// own xid it is, even when another transaction started earlier.
func TestXminHorizonHolderOwnsTheXid(t *testing.T) {
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, xminHorizonName)
	early := openSession(t, server.ConnString(), "xmin-early-reader")
	exec(t, early, "BEGIN ISOLATION LEVEL REPEATABLE READ") // started first, no snapshot yet
	holder := openSession(t, server.ConnString(), "xmin-holder")
	exec(t, holder, "BEGIN; SELECT txid_current()")
	exec(t, early, "SELECT 1") // its snapshot's xmin is the holder's xid
	burner := openSession(t, server.ConnString(), "xmin-burner")
	for range 3 {
		exec(t, burner, "SELECT txid_current()")
	}
	_, detail := sample(t, smp)
	h, ok := detail.(*XminHolder)
	if !ok || h.PID != pid(holder) {
		t.Errorf("holder %+v, want the session owning the xid (pid %d), not the earlier reader (pid %d)", detail, pid(holder), pid(early))
	}
	exec(t, early, "COMMIT")
	exec(t, holder, "COMMIT")
}
