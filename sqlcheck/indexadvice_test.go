package sqlcheck

import (
	"strings"
	"testing"
)

func TestRecommendIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		filter string
		sort   []string
		want   string // the CREATE INDEX statement
		alt    string // in the alternative, if any
	}{
		{"((deleted_at IS NULL) AND (posted_at < (now() - make_interval(0, 0, 0, $1, 0, 0, '0'::double precision))))", []string{"posted_at DESC"},
			"CREATE INDEX CONCURRENTLY ON a (posted_at) WHERE deleted_at IS NULL;", "(deleted_at, posted_at)"},
		{"(user_id = $1)", []string{"created_at DESC"}, "CREATE INDEX CONCURRENTLY ON a (user_id, created_at);", ""},
		{"((status = 'open'::text) AND (tenant_id = $2))", nil, "CREATE INDEX CONCURRENTLY ON a (status, tenant_id);", ""},
		{"(created_at >= '2024-01-01 00:00:00+00'::timestamp with time zone)", nil, "CREATE INDEX CONCURRENTLY ON a (created_at);", ""},
		{"(a_id = ANY ($1))", nil, "CREATE INDEX CONCURRENTLY ON a (a_id);", ""},
		{"", []string{"a.score DESC", "a.id"}, "CREATE INDEX CONCURRENTLY ON a (score DESC, id);", ""},
		{"(lower(email) = $1)", nil, "", ""},
		{"(x.a = y.b)", nil, "", ""},
		{"deleted_at is not null and kind = $1", []string{"id"}, "CREATE INDEX CONCURRENTLY ON a (kind, id) WHERE deleted_at IS NOT NULL;", "(deleted_at, kind, id)"},
		{"n BETWEEN $1 AND $2", nil, "CREATE INDEX CONCURRENTLY ON a (n);", ""},
		// No index returns rows in random order: the sort adds nothing,
		// and alone it is no index at all (issue 11).
		{"", []string{"(random())"}, "", ""},
		{"(price = $1)", []string{"(random())"}, "CREATE INDEX CONCURRENTLY ON a (price);", ""},
		{"", []string{"random()"}, "", ""},
	}
	for _, tc := range tests {
		got := RecommendIndex("a", []string{tc.filter}, tc.sort, Rel{Names: []string{"a"}, BareOK: true})
		if got.Create != tc.want {
			t.Errorf("RecommendIndex(%q, %q) = %q, want %q", tc.filter, tc.sort, got.Create, tc.want)
		}
		if tc.alt != "" && !strings.Contains(got.Alternative, tc.alt) {
			t.Errorf("RecommendIndex(%q): alternative %q lacks %q", tc.filter, got.Alternative, tc.alt)
		}
	}
}

func TestQueryClauses(t *testing.T) {
	t.Parallel()
	where, order := QueryClauses("SELECT id FROM a\nWHERE deleted_at IS NULL AND posted_at < now() - make_interval(days => $1)\nORDER BY posted_at DESC, id LIMIT $2")
	if where != "deleted_at is null and posted_at < now() - make_interval(days => $1)" {
		t.Errorf("where %q", where)
	}
	if strings.Join(order, "|") != "posted_at desc|id" {
		t.Errorf("order %q", order)
	}
	if got := QueryTables("SELECT * FROM public.a JOIN b ON b.a_id = a.id WHERE x IN (SELECT y FROM c)"); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("tables %q", got)
	}
}

func TestTableClauses(t *testing.T) {
	t.Parallel()
	const page = `SELECT e.id, e.posted_at, sum(l.amount) AS total,
       (SELECT count(*) FROM journal_attachment a WHERE a.entry_id = e.id) AS attachments
  FROM (SELECT id, posted_at FROM journal_entry
         WHERE deleted_at IS NULL AND posted_at < now() - make_interval(mins => $1)
         ORDER BY posted_at DESC LIMIT 20) AS e
  JOIN journal_line l ON l.entry_id = e.id
 GROUP BY e.id, e.posted_at ORDER BY e.posted_at DESC`
	for _, c := range []struct {
		table, index string
		outer        bool
	}{
		{"journal_entry", "CREATE INDEX CONCURRENTLY ON journal_entry (posted_at) WHERE deleted_at IS NULL;", false},
		{"journal_line", "CREATE INDEX CONCURRENTLY ON journal_line (entry_id);", false},
		{"journal_attachment", "CREATE INDEX CONCURRENTLY ON journal_attachment (entry_id);", true},
	} {
		b, ok := TableClauses(page, c.table)
		if !ok {
			t.Fatalf("%s not found", c.table)
		}
		if got := RecommendIndex(c.table, b.Conds, b.SortKeys, b.Rel).Create; got != c.index || b.PerOuterRow != c.outer {
			t.Errorf("%s: %q (per outer row %v), want %q (%v); block %+v", c.table, got, b.PerOuterRow, c.index, c.outer, b)
		}
	}
}
