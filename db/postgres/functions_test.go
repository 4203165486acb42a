package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

func TestCalledNames(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	calledNames(names, "SELECT app.Transfer(:a, :b), count(*) FROM t WHERE id IN (1, 2)")
	for _, want := range []string{"transfer", "count"} {
		if !names[want] {
			t.Errorf("%q not among %v", want, names)
		}
	}
	if names["app"] || names["t"] {
		t.Errorf("names %v: a schema or a table is not called", names)
	}
}

// TestCaptureFunctions reads, on a real server, the body of the function
// a script calls and of the one that function calls, and leaves out
// functions nobody calls, the system's and an extension's.
func TestCaptureFunctions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	conn, err := pgx.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
		"CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)",
		"CREATE TABLE transfers (id bigserial PRIMARY KEY, account_id int NOT NULL REFERENCES accounts (id), amount bigint)",
		`CREATE FUNCTION log_change(p_id int) RETURNS void LANGUAGE sql AS $$ SELECT 1 $$`,
		`CREATE FUNCTION bump(p_id int, p_delta int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM accounts WHERE id = p_id FOR UPDATE;
	BEGIN
		UPDATE accounts SET balance = balance + p_delta WHERE id = p_id;
		PERFORM log_change(p_id);
	EXCEPTION WHEN serialization_failure THEN
		RAISE NOTICE 'retry';
	END;
END $$`,
		`CREATE FUNCTION unused() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	names := map[string]bool{}
	calledNames(names, "SELECT bump(:id, :delta);")
	calledNames(names, "SELECT pg_stat_statements_reset();") // an extension's: left out
	// On a given server only firedrill's schema is read: public's are not.
	confined, err := captureFunctions(ctx, inst.ConnString(), names, "", "firedrill")
	if err != nil || confined.Values[pgmetric.FunctionsRead] != 0 {
		t.Errorf("functions of schema firedrill: %v, %v; want none", confined.Values, err)
	}
	smp, err := CaptureFunctions(ctx, inst.ConnString(), names)
	if err != nil {
		t.Fatal(err)
	}
	if smp.Source != pgmetric.Functions || smp.Values[pgmetric.FunctionsRead] != 2 {
		t.Fatalf("sample %s %v, want 2 functions", smp.Source, smp.Values)
	}
	var fns []pgmetric.Function
	if err := json.Unmarshal(smp.Detail, &fns); err != nil {
		t.Fatal(err)
	}
	got := map[string]pgmetric.Function{}
	for _, f := range fns {
		got[f.Name] = f
	}
	bump, ok := got["bump"]
	if !ok || bump.Language != "plpgsql" || bump.Schema != "public" || bump.Args != "p_id integer, p_delta integer" ||
		!strings.Contains(bump.Body, "EXCEPTION WHEN serialization_failure") {
		t.Errorf("bump: %+v", bump)
	}
	if f, ok := got["log_change"]; !ok || f.Language != "sql" {
		t.Errorf("log_change, called by bump: %+v (found %v)", f, got)
	}
	if _, ok := got["unused"]; ok {
		t.Error("unused was read, though nothing calls it")
	}
}

// TestCaptureForeignKeys reads a foreign key on a real server, with its
// columns on both sides.
func TestCaptureForeignKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	conn, err := pgx.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"CREATE TABLE customers (region int, id int, PRIMARY KEY (region, id))",
		"CREATE TABLE orders (id bigserial PRIMARY KEY, region int, customer int, FOREIGN KEY (region, customer) REFERENCES customers (region, id))",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	other, err := CaptureForeignKeys(ctx, inst.ConnString(), "firedrill")
	if err != nil || other.Values[pgmetric.ForeignKeysRead] != 0 {
		t.Errorf("foreign keys of schema firedrill: %v, %v; want none", other.Values, err)
	}
	smp, err := CaptureForeignKeys(ctx, inst.ConnString(), "")
	if err != nil {
		t.Fatal(err)
	}
	var fks []pgmetric.ForeignKey
	if err := json.Unmarshal(smp.Detail, &fks); err != nil || len(fks) != 1 || smp.Values[pgmetric.ForeignKeysRead] != 1 {
		t.Fatalf("got %v %s (%v), want one foreign key", smp.Values, smp.Detail, err)
	}
	fk := fks[0]
	if fk.Table != "orders" || fk.RefTable != "customers" || strings.Join(fk.Columns, ",") != "region,customer" ||
		strings.Join(fk.RefColumns, ",") != "region,id" || fk.Schema != "public" {
		t.Errorf("foreign key %+v", fk)
	}
}

// TestEvidenceReadsTheScriptsFunctions: the functions a workload's script
// calls, as the target saw it in Workload, come back from Evidence with
// their bodies, beside the plans and the foreign keys.
func TestEvidenceReadsTheScriptsFunctions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	conn, err := pgx.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
		"CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)",
		`CREATE FUNCTION credit(p_id int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE accounts SET balance = balance + 1 WHERE id = p_id;
EXCEPTION WHEN others THEN NULL;
END $$`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	sc, err := script.Parse("credit.sql", []byte("\\set id random(1, 10)\nSELECT credit(:id);\n"), script.NewSymbols())
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{connString: inst.ConnString(), userConnString: inst.ConnString()}
	if _, err := tg.Workload(&scenario.Workload{Name: "w"}, []*script.Script{sc}, "firedrill:w"); err != nil {
		t.Fatal(err)
	}
	samples, err := tg.Evidence(ctx)
	if err != nil {
		t.Logf("evidence: %v (the plans need statements; the functions do not)", err)
	}
	var fns []pgmetric.Function
	sources := map[string]bool{}
	for _, s := range samples {
		sources[s.Source] = true
		if s.Source == pgmetric.Functions {
			if err := json.Unmarshal(s.Detail, &fns); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, want := range []string{pgmetric.Explain, pgmetric.Functions, pgmetric.ForeignKeys} {
		if !sources[want] {
			t.Errorf("no %s sample among %v", want, sources)
		}
	}
	if len(fns) != 1 || fns[0].Name != "credit" || !strings.Contains(fns[0].Body, "EXCEPTION WHEN others") {
		t.Errorf("functions %+v, want credit's body", fns)
	}
}
