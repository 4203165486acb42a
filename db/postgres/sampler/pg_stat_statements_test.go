package postgres

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatements runs a statement between ticks and finds it among the
// top statements with its calls, while the samplers' own statements (of
// this set and of the sets other tests run meanwhile) never show.
func TestStatements(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{CreateStatements: true})
	if note, ok := set.Notes()[statementsName]; ok {
		t.Fatalf("the test server preloads pg_stat_statements, yet: %s", note)
	}
	smp := samplerOf(t, set, statementsName)
	values, detail := sample(t, smp)
	if detail != nil || len(values) != 0 {
		t.Errorf("first tick: values %v, detail %+v; want nothing before there is an interval", values, detail)
	}

	work := openSession(t, server.ConnString(), "statements-work")
	const calls = 10
	for range calls {
		exec(t, work, "SELECT pg_sleep(0.02) AS statements_test")
	}
	values, detail = sample(t, smp)
	assertNoSampler(t, values, detail)
	top, ok := detail.([]Statement)
	if !ok {
		t.Fatalf("detail is %T, want []Statement", detail)
	}
	if len(top) > topStatements+topSpilling {
		t.Errorf("%d statements, want ≤ %d", len(top), topStatements+topSpilling)
	}
	var found *Statement
	for i, stmt := range top {
		if strings.Contains(stmt.Query, "statements_test") {
			found = &top[i]
		}
		if i > 0 && i < topStatements && stmt.TotalMS > top[i-1].TotalMS {
			t.Errorf("statement %d took longer than statement %d: want the most time first", i, i-1)
		}
	}
	if found == nil {
		t.Fatalf("statements_test not in the top statements %+v", top)
	}
	if found.Calls != calls || found.TotalMS < calls*20 || found.MeanMS < 20 || found.Rows != calls || found.QueryID == 0 {
		t.Errorf("statement %+v, want %d calls of ≥ 20 ms returning a row each", found, calls)
	}
	if values["calls_per_s"] <= 0 || values["exec_ms_per_s"] < found.TotalMS/60 || values["statements"] < 1 {
		t.Errorf("values %v", values)
	}
}

// TestStatementsNotCreatedOnAServerItDidNotStart: without
// CreateStatements (a --dsn server) the sampler does not create the
// extension, even with its library loaded, and says how to.
func TestStatementsNotCreatedOnAServerItDidNotStart(t *testing.T) {
	t.Parallel()
	admin := openSession(t, server.ConnString(), "statements-admin")
	exec(t, admin, "DROP DATABASE IF EXISTS nostatements")
	exec(t, admin, "CREATE DATABASE nostatements")
	set := newSet(t, server.ConnString()+" dbname=nostatements", Options{})
	note, ok := set.Notes()[statementsName]
	if !ok || !strings.Contains(note, "CREATE EXTENSION pg_stat_statements") {
		t.Errorf("note %q, want one saying to CREATE EXTENSION", note)
	}
	other := openSession(t, server.ConnString()+" dbname=nostatements", "statements-check")
	var n int
	if err := other.QueryRow(t.Context(), "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("the extension was created on a server the sampler was only pointed at")
	}
}

// TestStatementsKeepASpillingStatement: a quick statement that writes
// temporary files stays in the detail, with its temp_blks_written, though
// more than 10 statements took more time in the interval. Not parallel:
// two sets creating the extension at once would race.
func TestStatementsKeepASpillingStatement(t *testing.T) {
	set := newSet(t, server.ConnString(), Options{CreateStatements: true})
	smp := samplerOf(t, set, statementsName)
	sample(t, smp)
	work := openSession(t, server.ConnString(), "statements-spill")
	exec(t, work, "SET work_mem = '64kB'")
	exec(t, work, "SELECT count(*) FROM (SELECT g FROM generate_series(1, 20000) g ORDER BY g DESC) AS statements_spill")
	// Twelve statements of distinct shapes (constants and aliases do not
	// tell statements apart), each slower than the spill.
	for i := range topStatements + 2 {
		exec(t, work, fmt.Sprintf("SELECT pg_sleep(0.2)%s", strings.Repeat(", 'statements_slow'", i+1)))
	}
	_, detail := sample(t, smp)
	top, _ := detail.([]Statement)
	at := -1
	for i := range top {
		if strings.Contains(top[i].Query, "statements_spill") {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("the spilling statement is not in the detail: %+v", top)
	}
	if at < topStatements {
		t.Fatalf("the spilling statement (%.1f ms) is among the %d slowest: the test must push it out", top[at].TotalMS, topStatements)
	}
	if top[at].TempBlksWritten <= 0 || top[at].Calls != 1 {
		t.Errorf("spilling statement %+v: want 1 call with temp_blks_written", top[at])
	}
	if len(top) > topStatements+topSpilling {
		t.Errorf("%d statements, want ≤ %d", len(top), topStatements+topSpilling)
	}
}
