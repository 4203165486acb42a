package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
)

// TestCaptureExplains explains a cursor-pagination query without an index
// on a real server: the plan must show the sequential scan with its
// filter and the sort, and leave out the samplers' statements, utility
// statements and transaction control.
func TestCaptureExplains(t *testing.T) {
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
		`CREATE TABLE posts (id bigint PRIMARY KEY, title text, posted_at timestamptz NOT NULL, deleted_at timestamptz)`,
		`INSERT INTO posts SELECT g, 'post ' || g, now() - g * interval '1 minute', CASE WHEN g % 10 = 0 THEN now() END
			FROM generate_series(1, 50000) g`,
		`CREATE TABLE comments (id bigint PRIMARY KEY, post_id bigint NOT NULL, body text)`,
		`INSERT INTO comments SELECT g, g % 50000 + 1, 'comment ' || g FROM generate_series(1, 30000) g`,
		"ANALYZE posts, comments",
		"SELECT pg_stat_statements_reset()",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const page = `SELECT id, title, posted_at FROM posts WHERE deleted_at IS NULL AND posted_at < $1 ORDER BY posted_at DESC LIMIT 20`
	for i := 0; i < 5; i++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, page, time.Now().Add(-time.Duration(i)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A correlated subquery (a scan per outer row) and a hash join.
	const perPost = `SELECT p.id, (SELECT count(*) FROM comments c WHERE c.post_id = p.id) AS n FROM posts p WHERE p.id = $1`
	const joined = `SELECT count(*) FROM posts p JOIN comments c ON c.post_id = p.id WHERE p.title = $1`
	for _, q := range []string{perPost, joined} {
		rows, err := conn.Query(ctx, q, map[string]any{perPost: 7, joined: "post 7"}[q])
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	// A statement whose generic plan cannot be had: its parameter's type
	// is unknown once the constant is normalised away.
	if _, err := conn.Exec(ctx, "SELECT 40 + 2", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "/* firedrill-sampler */ SELECT count(*) FROM posts"); err != nil {
		t.Fatal(err)
	}

	smp, err := CaptureExplains(ctx, inst.ConnString(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if smp.Source != ExplainSource || smp.Error != "" {
		t.Fatalf("sample %+v", smp)
	}
	var stmts []ExplainedStatement
	if err := json.Unmarshal(smp.Detail, &stmts); err != nil {
		t.Fatal(err)
	}
	var found *ExplainedStatement
	for i, s := range stmts {
		t.Logf("%s calls=%v mean=%.2f ms scans=%+v sorts=%+v err=%s", oneLineTest(s.Query), s.Calls, s.MeanMS, s.SeqScans, s.Sorts, s.Error)
		switch word := strings.ToLower(firstWord(s.Query)); {
		case strings.Contains(s.Query, "firedrill-sampler"):
			t.Errorf("a sampler's statement was explained: %s", s.Query)
		case word != "select":
			t.Errorf("not a query: %s", s.Query)
		}
		if strings.Contains(s.Query, "FROM posts WHERE deleted_at") {
			found = &stmts[i]
		}
	}
	if found == nil {
		t.Fatalf("the pagination query is not among %d statements", len(stmts))
	}
	if found.Calls != 5 || found.Plan == nil || len(found.SeqScans) == 0 || len(found.Sorts) == 0 {
		t.Fatalf("pagination query: %+v", found)
	}
	scan := found.SeqScans[0]
	if scan.Relation != "posts" || scan.Schema != "public" || !strings.Contains(scan.Filter, "deleted_at IS NULL") ||
		!strings.Contains(scan.Filter, "posted_at <") || scan.TableRows < 40000 {
		t.Errorf("seq scan %+v", scan)
	}
	if !strings.Contains(strings.Join(found.Sorts[0].Keys, ","), "posted_at DESC") || strings.Join(scan.SortKeys, ",") != "posted_at DESC" {
		t.Errorf("sort %+v, scan's sort keys %q", found.Sorts[0], scan.SortKeys)
	}
	for _, s := range stmts {
		switch {
		case strings.Contains(s.Query, "SELECT count(*) FROM comments c WHERE"):
			if len(s.SeqScans) != 1 || s.SeqScans[0].Relation != "comments" || !s.SeqScans[0].SubPlan || !strings.Contains(s.SeqScans[0].Filter, "post_id = p.id") {
				t.Errorf("correlated subquery: %+v", s.SeqScans)
			}
		case strings.Contains(s.Query, "JOIN comments c ON"):
			var cond string
			for _, sc := range s.SeqScans {
				if sc.Relation == "comments" {
					cond = sc.JoinCond
				}
			}
			if !strings.Contains(cond, "post_id") {
				t.Errorf("join: %+v", s.SeqScans)
			}
		}
	}
	failed := false
	for _, s := range stmts {
		if s.Plan == nil && s.Error != "" {
			failed = true
		}
	}
	if !failed {
		t.Errorf("SELECT $1 + $2 should have failed to prepare and said why")
	}
	if smp.Values["plans"] < 1 || smp.Values["seq_scans"] < 1 {
		t.Errorf("values %v", smp.Values)
	}
	// The session left nothing prepared or open: a second capture works.
	if _, err := CaptureExplains(ctx, inst.ConnString(), 5); err != nil {
		t.Fatalf("second capture: %v", err)
	}
}

// TestCaptureExplainsWithoutStatements says why when pg_stat_statements
// is missing.
func TestCaptureExplainsWithoutStatements(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	smp, err := CaptureExplains(ctx, inst.ConnString(), 5)
	if err == nil || !strings.Contains(err.Error(), "pg_stat_statements") || smp.Error == "" || smp.Source != ExplainSource {
		t.Fatalf("want an error naming pg_stat_statements, got %v (%+v)", err, smp)
	}
}

func TestExplainHelpers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		query string
		ok    bool
		n     int
	}{
		{"SELECT a FROM t WHERE b = $1 AND c < $12 LIMIT $2", true, 12},
		{"/* x */ (SELECT 1)", true, 0},
		{"  with x as (select 1) select * from x", true, 0},
		{"BEGIN", false, 0},
		{"SAVEPOINT s1", false, 0},
		{"COMMIT", false, 0},
		{"SET statement_timeout = $1", false, 1},
		{"CREATE INDEX ON t (a)", false, 0},
		{"UPDATE t SET a = '$9' WHERE id = $1", true, 1},
		{"-- comment\nDELETE FROM t", true, 0},
	} {
		if got := explainable(c.query); got != c.ok {
			t.Errorf("explainable(%q) = %v", c.query, got)
		}
		if got := paramCount(c.query); got != c.n {
			t.Errorf("paramCount(%q) = %d, want %d", c.query, got, c.n)
		}
	}
}

func oneLineTest(s string) string { return strings.Join(strings.Fields(s), " ") }
