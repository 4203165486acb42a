package sqlcheck

import "testing"

func TestSplitLiterals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, shape, values string }{
		{"UPDATE counter SET n = n + 1 WHERE id = 1;", "UPDATE counter SET n = n + ? WHERE id = ?;", "1"},
		{"UPDATE t SET v = 'x' WHERE k = 'a''b' AND n = 2.5", "UPDATE t SET v = ? WHERE k = ? AND n = ?", "'a''b', 2.5"},
		{"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;", "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;", ""},
		{"SELECT 1", "SELECT ?", ""},
	} {
		shape, values := SplitLiterals(c.in)
		if shape != c.shape || values != c.values {
			t.Errorf("SplitLiterals(%q) = %q, %q; want %q, %q", c.in, shape, values, c.shape, c.values)
		}
	}
}
