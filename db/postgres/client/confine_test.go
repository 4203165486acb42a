package postgres

import (
	"fmt"
	"strings"
	"testing"
)

func TestConfinementEscapes(t *testing.T) {
	t.Parallel()
	c := Confinement{Schema: "firedrill", Others: []string{"public", "billing"}}
	tests := []struct {
		name string
		sql  string
		want []string // "line:col object", in order; nil = confined
	}{
		// Unqualified names are confined by the search path.
		{"unqualified drop", "DROP TABLE IF EXISTS customers;\nCREATE TABLE customers (id int);", nil},
		{"own schema", "CREATE TABLE firedrill.items (id int); INSERT INTO firedrill.items VALUES (1)", nil},
		{"column references", "UPDATE items SET qty = items.qty - 1 WHERE items.id = 1", nil},
		{"reads of other schemas are harmless", "SELECT count(*) FROM public.customers", nil},
		{"qualified drop", "DROP TABLE IF EXISTS public.customers", []string{"1:22 public.customers"}},
		{"second line", "CREATE TABLE a (id int);\n  TRUNCATE billing.invoices;", []string{"2:12 billing.invoices"}},
		{"quoted schema", `DELETE FROM "public"."Orders" WHERE true`, []string{`1:13 public.Orders`}},
		{"three-part name", "ALTER TABLE app.public.t ADD c int", []string{"1:13 app.public.t"}},
		{"insert select", "INSERT INTO public.log SELECT * FROM items", []string{"1:13 public.log"}},
		{"search_path", "SET search_path = firedrill, public", []string{"1:5 search_path"}},
		{"search_path own", "SET search_path TO firedrill; SET LOCAL search_path = firedrill, pg_catalog", nil},
		{"set_config", "SELECT set_config('search_path', 'public', false)", []string{"1:19 search_path"}},
		{"set schema", "ALTER TABLE items SET SCHEMA public", []string{"1:30 public"}},
		{"drop other schema", "DROP SCHEMA IF EXISTS billing CASCADE", []string{"1:23 billing"}},
		{"create own schema", "CREATE SCHEMA IF NOT EXISTS firedrill", nil},
		{"database level", "ALTER SYSTEM SET work_mem = '1GB'", []string{"1:1 ALTER SYSTEM"}},
		{"role", "DROP ROLE IF EXISTS app", []string{"1:1 DROP ROLE"}},
		{"extension", "CREATE EXTENSION IF NOT EXISTS pgcrypto", []string{"1:1 CREATE EXTENSION"}},
		{"comments and strings hide nothing", "-- DROP TABLE public.x\n/* DROP TABLE public.y */ SELECT 'DROP TABLE public.z'", nil},
		{"function body", "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n  DELETE FROM public.customers;\nEND $$;",
			[]string{"3:15 public.customers"}},
		{"do block", "DO $body$ BEGIN UPDATE public.items SET qty = 0; END $body$", []string{"1:1 DO", "1:24 public.items"}},
		{"parameters are not dollar quotes", "UPDATE items SET qty = $1 WHERE id = $2", nil},
		// Through the server rather than a name (issue 20).
		{"copy to program", "COPY items TO PROGRAM 'rm -rf /tmp/x'", []string{"1:1 COPY TO PROGRAM"}},
		{"copy from program", "copy items (id) from program 'curl evil'", []string{"1:1 COPY FROM PROGRAM"}},
		{"copy to a server file", "COPY (SELECT 1) TO '/tmp/out.csv'", []string{"1:20 COPY TO '/tmp/out.csv'"}},
		{"copy from a server file", "COPY items FROM '/etc/passwd'", []string{"1:17 COPY FROM '/etc/passwd'"}},
		{"copy stdin is the client's", "COPY items FROM STDIN; COPY items TO STDOUT", nil},
		{"large object unlink", "SELECT lo_unlink(16403)", []string{"1:8 lo_unlink"}},
		{"large objects in a from", "SELECT lo_unlink(oid) FROM pg_largeobject_metadata", []string{"1:8 lo_unlink"}},
		{"large object import export put", "SELECT lo_import('/etc/hosts'), lo_export(1, '/tmp/x'), lo_put(1, 0, 'x')",
			[]string{"1:8 lo_import", "1:33 lo_export", "1:57 lo_put"}},
		{"qualified large object", "SELECT pg_catalog.lo_unlink(1)", []string{"1:19 lo_unlink"}},
		{"terminate others", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'app'", []string{"1:8 pg_terminate_backend"}},
		{"cancel others", "SELECT pg_cancel_backend(4711)", []string{"1:8 pg_cancel_backend"}},
		{"terminate self", "SELECT pg_terminate_backend(pg_backend_pid())", nil},
		{"a function of our own that shares a name", "SELECT firedrill.lo_unlink(1)", nil},
		{"set role", "SET ROLE postgres", []string{"1:1 SET ROLE"}},
		{"set local role", "SET LOCAL ROLE postgres", []string{"1:1 SET ROLE"}},
		{"reset role", "RESET ROLE", []string{"1:1 RESET ROLE"}},
		{"session authorization", "SET SESSION AUTHORIZATION postgres", []string{"1:1 SET SESSION"}},
		{"set_config role", "SELECT set_config('role', 'postgres', false)", []string{"1:19 role"}},
		{"a column named role is not a role", "UPDATE items SET role = 'x'", nil},
		{"create or replace elsewhere", "CREATE OR REPLACE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
			[]string{"1:28 public.f", "1:28 public.f"}},
		{"create or replace in pg_catalog", "CREATE OR REPLACE FUNCTION pg_catalog.now() RETURNS int LANGUAGE sql AS 'SELECT 1'",
			[]string{"1:28 pg_catalog.now"}},
		{"create or replace here", "CREATE OR REPLACE VIEW v AS SELECT 1; CREATE OR REPLACE FUNCTION firedrill.f() RETURNS int LANGUAGE sql AS 'SELECT 1'", nil},
		{"server files", "SELECT pg_read_file('/etc/passwd')", []string{"1:8 pg_read_file"}},
		{"reload", "SELECT pg_reload_conf()", []string{"1:8 pg_reload_conf"}},
		{"dblink", "SELECT * FROM dblink_exec('dbname=app', 'DROP TABLE t')", []string{"1:15 dblink_exec"}},
		{"dynamic sql", "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DROP TABLE ' || 'public.t'; END $$",
			[]string{"1:63 EXECUTE"}},
		{"execute format", "EXECUTE format('DROP TABLE %I', 'x')", []string{"1:1 EXECUTE"}},
		{"a prepared statement", "PREPARE p(int) AS SELECT $1; EXECUTE p(1); EXECUTE p", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range c.Escapes(tt.sql) {
				got = append(got, fmt.Sprintf("%d:%d %s", e.Line, e.Col, e.Object))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Escapes(%q)\n got %q\nwant %q", tt.sql, got, tt.want)
			}
		})
	}
}

func TestConfinementDefaultsToPublic(t *testing.T) {
	t.Parallel()
	c := Confinement{Schema: "firedrill"}
	if got := c.Escapes("DROP TABLE public.pgbench_accounts"); len(got) != 1 {
		t.Fatalf("public is outside by default: %v", got)
	}
	if got := c.Escapes("DROP TABLE billing.x"); len(got) != 0 {
		t.Fatalf("an unknown prefix is taken for a table, not a schema: %v", got)
	}
}

func FuzzConfinementEscapes(f *testing.F) {
	for _, s := range []string{"DROP TABLE public.x", "DO $$ BEGIN DELETE FROM public.t; END $$", "SELECT 'a''b', E'\\'', \"q\"\"x\"",
		"/* /* nested */ */ SET search_path = public", "$1 $a$ $$",
		"COPY t TO PROGRAM 'x'", "SELECT lo_unlink(1)", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
		"SET ROLE x", "SET SESSION AUTHORIZATION x", "CREATE OR REPLACE FUNCTION public.f() RETURNS int AS 'select 1' LANGUAGE sql",
		"DO $$ BEGIN EXECUTE 'x'; END $$", "EXECUTE format('%s', 1)", "pg_terminate_backend(", "COPY x FROM", "SET LOCAL"} {
		f.Add(s)
	}
	c := Confinement{Schema: "firedrill", Others: []string{"public"}}
	f.Fuzz(func(t *testing.T, sql string) {
		for _, e := range c.Escapes(sql) {
			if e.Line < 1 || e.Col < 1 || e.Object == "" {
				t.Fatalf("bad escape %+v for %q", e, sql)
			}
		}
		// Prefixing a qualified drop is always seen.
		if got := c.Escapes("DROP TABLE public.victim;\n" + sql); len(got) == 0 || got[0].Object != "public.victim" {
			t.Fatalf("missed the drop before %q: %v", sql, got)
		}
	})
}
