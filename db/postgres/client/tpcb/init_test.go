package tpcb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/jackc/pgx/v5/pgconn"
)

// server is the throwaway server all tests in this package share; each test
// works in databases of its own.
var server *postgres.Instance

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	inst, err := postgres.Start(ctx, postgres.Options{Settings: map[string]string{
		// Throwaway data: durability only slows the tests down.
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
	}})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting PostgreSQL for tests: %v\n", err)
		os.Exit(1)
	}
	server = inst
	code := m.Run()
	if err := inst.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
	}
	os.Exit(code)
}

var databaseSeq atomic.Int64

// newDatabase creates an empty database for one test and connects to it.
func newDatabase(t *testing.T) (name string, conn *pgconn.PgConn) {
	t.Helper()
	ctx := context.Background()
	name = fmt.Sprintf("tpcb_%d", databaseSeq.Add(1))
	admin := connect(t, "postgres")
	if _, err := admin.Exec(ctx, "create database "+name).ReadAll(); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return name, connect(t, name)
}

func connect(t *testing.T, database string) *pgconn.PgConn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, server.ConnString()+" dbname="+database)
	if err != nil {
		t.Fatalf("connect to %s: %v", database, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// runPgbench runs the server's own pgbench against database.
func runPgbench(t *testing.T, database string, args ...string) string {
	t.Helper()
	bin := filepath.Join(server.BinDir(), "pgbench")
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("pgbench"); err != nil {
			t.Skip("no pgbench next to the server nor on PATH")
		}
	}
	args = append([]string{"-h", server.Host(), "-p", strconv.Itoa(server.Port()), "-U", server.User()}, args...)
	args = append(args, database)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// query returns the rows of sql as text, one string per row with
// columns separated by " | ".
func query(t *testing.T, conn *pgconn.PgConn, sql string) []string {
	t.Helper()
	result := conn.ExecParams(context.Background(), sql, nil, nil, nil, nil).Read()
	if result.Err != nil {
		t.Fatalf("%s: %v", sql, result.Err)
	}
	rows := make([]string, len(result.Rows))
	for i, row := range result.Rows {
		cols := make([]string, len(row))
		for j, col := range row {
			if col == nil {
				cols[j] = "NULL"
			} else {
				cols[j] = string(col)
			}
		}
		rows[i] = strings.Join(cols, " | ")
	}
	return rows
}

// schemaSQL describes every relation in public: kind, persistence, options,
// partitioning, columns, constraints and indexes; what pg_dump would need
// to recreate the tables.
const schemaSQL = `
select c.relname, c.relkind, c.relpersistence,
  coalesce(array_to_string(c.reloptions, ','), ''),
  coalesce(pg_get_partkeydef(c.oid), ''),
  coalesce(pg_get_expr(c.relpartbound, c.oid), ''),
  coalesce((select string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
      || case when a.attnotnull then ' not null' else '' end
      || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' order by a.attnum)
    from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), ''),
  coalesce((select string_agg(conname || ' ' || pg_get_constraintdef(oid), '; ' order by conname)
    from pg_constraint where conrelid = c.oid), ''),
  coalesce((select string_agg(pg_get_indexdef(indexrelid), '; ' order by indexrelid::regclass::text)
    from pg_index where indrelid = c.oid), '')
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where n.nspname = 'public' and c.relkind in ('r', 'p')
order by c.relname`

// dataSQL fingerprints the contents of every table, in key order.
const dataSQL = `
select 'branches', count(*), md5(coalesce(string_agg(t::text, ',' order by bid), '')) from pgbench_branches t
union all
select 'tellers', count(*), md5(coalesce(string_agg(t::text, ',' order by tid), '')) from pgbench_tellers t
union all
select 'accounts', count(*), md5(coalesce(string_agg(t::text, ',' order by aid), '')) from pgbench_accounts t
union all
select 'history', count(*), md5(coalesce(string_agg(t::text, ',' order by mtime), '')) from pgbench_history t`

// partitionRowsSQL counts the rows in each partition of pgbench_accounts.
const partitionRowsSQL = `
select tableoid::regclass, count(*), min(aid), max(aid) from pgbench_accounts group by 1 order by 1`

// sameRows fails the test unless got and want are equal, showing both.
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s differ from pgbench's:\nfiredrill:\n  %s\npgbench:\n  %s",
			what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// initBoth runs Init with opts in one new database and real pgbench with
// args in another, and returns connections to both and Init's output.
func initBoth(t *testing.T, opts InitOptions, pgbenchArgs ...string) (ours, theirs *pgconn.PgConn, log string) {
	t.Helper()
	_, ours = newDatabase(t)
	theirsName, theirs := newDatabase(t)
	var out bytes.Buffer
	if err := Init(context.Background(), ours, opts, &out); err != nil {
		t.Fatalf("Init: %v\noutput:\n%s", err, out.String())
	}
	runPgbench(t, theirsName, append([]string{"-i"}, pgbenchArgs...)...)
	return ours, theirs, out.String()
}

func TestInitMatchesPgbench(t *testing.T) {
	t.Parallel()
	ours, theirs, log := initBoth(t, InitOptions{Scale: 2, ForeignKeys: true}, "-s", "2", "--foreign-keys")

	sameRows(t, "table definitions", query(t, ours, schemaSQL), query(t, theirs, schemaSQL))
	sameRows(t, "table contents", query(t, ours, dataSQL), query(t, theirs, dataSQL))

	counts := query(t, ours, `select (select count(*) from pgbench_accounts), (select count(*) from pgbench_tellers),
		(select count(*) from pgbench_branches), (select sum(abalance) from pgbench_accounts)`)
	if want := "200000 | 20 | 2 | 0"; counts[0] != want {
		t.Errorf("accounts | tellers | branches | sum(abalance) = %s, want %s", counts[0], want)
	}

	// The output follows pgbench's, line by line.
	wantLog := []string{
		`dropping old tables\.\.\.`,
		`creating tables\.\.\.`,
		`generating data \(client-side\)\.\.\.`,
		`100000 of 200000 tuples \(50%\) done \(elapsed \d+\.\d\d s, remaining \d+\.\d\d s\)`,
		`200000 of 200000 tuples \(100%\) done \(elapsed \d+\.\d\d s, remaining 0\.00 s\)`,
		`vacuuming\.\.\.`,
		`creating primary keys\.\.\.`,
		`creating foreign keys\.\.\.`,
		`done in \d+\.\d\d s \(drop tables \d+\.\d\d s, create tables \d+\.\d\d s, client-side generate \d+\.\d\d s, vacuum \d+\.\d\d s, primary keys \d+\.\d\d s, foreign keys \d+\.\d\d s\)\.`,
	}
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) != len(wantLog) {
		t.Fatalf("output has %d lines, want %d:\n%s", len(lines), len(wantLog), log)
	}
	for i, pattern := range wantLog {
		if !regexp.MustCompile(`^` + pattern + `$`).MatchString(lines[i]) {
			t.Errorf("output line %d = %q, want /%s/", i+1, lines[i], pattern)
		}
	}

	scale, ok, err := Scale(context.Background(), ours)
	if err != nil || !ok || scale != 2 {
		t.Errorf("Scale = %d, %v, %v; want 2, true, nil", scale, ok, err)
	}
	method, partitions, err := PartitionInfo(context.Background(), ours)
	if err != nil || method != "none" || partitions != 0 {
		t.Errorf("PartitionInfo = %q, %d, %v; want none, 0, nil", method, partitions, err)
	}
}

func TestInitPartitionsMatchPgbench(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts InitOptions
		args []string
	}{
		// 100000 rows in 3 parts: 33334 per part, open-ended first and last.
		{"range", InitOptions{Partitions: 3}, []string{"--partitions", "3"}},
		{"hash", InitOptions{Partitions: 4, PartitionMethod: "hash"}, []string{"--partitions", "4", "--partition-method", "hash"}},
		// Unlogged tables with a partitioned parent, and a fillfactor on
		// every partition.
		{"range unlogged fillfactor", InitOptions{Scale: 2, Partitions: 7, Unlogged: true, FillFactor: 90},
			[]string{"-s", "2", "--partitions", "7", "--unlogged-tables", "-F", "90"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ours, theirs, _ := initBoth(t, tt.opts, tt.args...)
			sameRows(t, "table definitions", query(t, ours, schemaSQL), query(t, theirs, schemaSQL))
			sameRows(t, "rows per partition", query(t, ours, partitionRowsSQL), query(t, theirs, partitionRowsSQL))
			sameRows(t, "table contents", query(t, ours, dataSQL), query(t, theirs, dataSQL))

			method, partitions, err := PartitionInfo(context.Background(), ours)
			wantMethod := tt.opts.PartitionMethod
			if wantMethod == "" {
				wantMethod = "range"
			}
			if err != nil || method != wantMethod || partitions != tt.opts.Partitions {
				t.Errorf("PartitionInfo = %q, %d, %v; want %q, %d, nil", method, partitions, err, wantMethod, tt.opts.Partitions)
			}
		})
	}
}

func TestInitServerSideMatchesPgbench(t *testing.T) {
	t.Parallel()
	ours, theirs, log := initBoth(t, InitOptions{Scale: 2, Steps: "dtGvp"}, "-s", "2", "-I", "dtGvp")
	sameRows(t, "table definitions", query(t, ours, schemaSQL), query(t, theirs, schemaSQL))
	sameRows(t, "table contents", query(t, ours, dataSQL), query(t, theirs, dataSQL))
	if !strings.Contains(log, "generating data (server-side)...\n") || !strings.Contains(log, "server-side generate ") {
		t.Errorf("output does not mention server-side generation:\n%s", log)
	}

	// Client-side and server-side generation must make the same rows.
	_, clientSide := newDatabase(t)
	if err := Init(context.Background(), clientSide, InitOptions{Scale: 2}, nil); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "client-side vs server-side contents", query(t, clientSide, dataSQL), query(t, ours, dataSQL))
}

func TestInitRerunReplacesTables(t *testing.T) {
	t.Parallel()
	_, conn := newDatabase(t)
	ctx := context.Background()
	if err := Init(ctx, conn, InitOptions{Scale: 3, ForeignKeys: true}, nil); err != nil {
		t.Fatal(err)
	}
	// Regenerating data alone into existing tables with foreign keys works,
	// because tables are filled parents first.
	if err := Init(ctx, conn, InitOptions{Scale: 1, Steps: "g"}, nil); err != nil {
		t.Fatal(err)
	}
	if scale, ok, err := Scale(ctx, conn); err != nil || !ok || scale != 1 {
		t.Errorf("Scale after regenerating at 1 = %d, %v, %v", scale, ok, err)
	}
	// The connection is still usable after a failed step: here COPY into
	// dropped tables.
	if err := Init(ctx, conn, InitOptions{Steps: "dg"}, nil); err == nil {
		t.Fatal("generating into dropped tables succeeded")
	}
	if got := query(t, conn, "select 1"); got[0] != "1" {
		t.Fatalf("connection after failed Init: %v", got)
	}
}

func TestInitRejectsBadOptions(t *testing.T) {
	t.Parallel()
	_, conn := newDatabase(t)
	tests := []struct {
		name string
		opts InitOptions
		want string
	}{
		// pgbench's message and detail for an unknown step letter.
		{"unknown step", InitOptions{Steps: "dtx"}, "unrecognized initialization step \"x\"\nAllowed step characters are: \"dtgGvpf\"."},
		{"fillfactor", InitOptions{FillFactor: 5}, "-F/--fillfactor must be in range 10..100"},
		{"partition method", InitOptions{Partitions: 2, PartitionMethod: "list"}, `invalid partition method, expecting "range" or "hash", got: "list"`},
		{"method without partitions", InitOptions{PartitionMethod: "hash"}, "--partition-method requires greater than zero --partitions"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := Init(context.Background(), conn, tt.opts, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Init error = %v, want one containing %q", tt.name, err, tt.want)
		}
		if out.Len() > 0 {
			t.Errorf("%s: Init printed %q before rejecting its options", tt.name, out.String())
		}
	}
	var stepErr *StepError
	if err := Init(context.Background(), conn, InitOptions{Steps: "dt!"}, nil); !errors.As(err, &stepErr) || stepErr.Step != '!' {
		t.Errorf("Init with step '!' = %v, want a *StepError for '!'", err)
	}
	if _, ok, _ := Scale(context.Background(), conn); ok {
		t.Error("rejected options created tables")
	}
}

func TestScaleWithoutTables(t *testing.T) {
	t.Parallel()
	_, conn := newDatabase(t)
	scale, ok, err := Scale(context.Background(), conn)
	if err != nil || ok || scale != 0 {
		t.Errorf("Scale on an empty database = %d, %v, %v; want 0, false, nil", scale, ok, err)
	}
	if _, _, err := PartitionInfo(context.Background(), conn); err == nil {
		t.Error("PartitionInfo on an empty database succeeded")
	}
}
