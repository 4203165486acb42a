package mariadb_test

import (
	"strconv"
	"testing"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	"github.com/firedrill/firedrill/script"
)

// TestPreparedResultsDescribedOnce: with MariaDB's metadata cache the
// server describes a prepared statement's result only when it changes,
// and sends a statement's parameter types only when they change. The
// executes it does not describe still store \gset values by name; a
// table change that alters the result is described again; parameters
// whose type changes between executes are sent with their new types.
func TestPreparedResultsDescribedOnce(t *testing.T) {
	c := connect(t, mdbtarget.ModePrepared)
	syms := script.NewSymbols()
	vars := script.NewVars(syms)
	if err := execScript(c, `DROP TABLE IF EXISTS meta;
CREATE TABLE meta (k INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO meta VALUES (1, 'one'), (2, 'two');
`, vars); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { execScript(c, "DROP TABLE IF EXISTS meta;\n", nil) })
	sent := func() int {
		t.Helper()
		if err := execScript(c, "SHOW SESSION STATUS LIKE 'Bytes_sent' \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(text(t, vars, "Value"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sel := "SELECT k, v FROM meta WHERE k = :k \\gset m_\n"
	const runs = 10
	for i := range runs {
		vars.SetInt(syms.Ref("k"), int64(1+i%2))
		if err := execScript(c, sel, vars); err != nil {
			t.Fatal(err)
		}
		if got, want := text(t, vars, "m_v"), []string{"one", "two"}[i%2]; got != want {
			t.Fatalf("execute %d: m_v = %q, want %q", i+1, got, want)
		}
	}
	// Bytes per execute, less the reading's own result (also undescribed).
	sent()
	before := sent()
	show := sent() - before
	before = sent()
	for range runs {
		if err := execScript(c, sel, vars); err != nil {
			t.Fatal(err)
		}
	}
	perExecute := (sent() - before - show) / runs
	// Undescribed, a one-row result of two short columns is about 40
	// bytes; its two column definitions would add about 70.
	t.Logf("%d bytes per execute (the SHOW's result %d)", perExecute, show)
	if perExecute > 60 {
		t.Errorf("%d bytes per execute of a described result: the server was not asked to leave its columns out", perExecute)
	}

	// A changed table changes the result: the server describes it again.
	if err := execScript(c, "ALTER TABLE meta ADD COLUMN w INT NOT NULL DEFAULT 7;\n", vars); err != nil {
		t.Fatal(err)
	}
	star := "SELECT * FROM meta WHERE k = :k \\gset s_\n"
	if err := execScript(c, star, vars); err != nil {
		t.Fatal(err)
	}
	if err := execScript(c, "ALTER TABLE meta DROP COLUMN v;\n", vars); err != nil {
		t.Fatal(err)
	}
	if err := execScript(c, star, vars); err != nil {
		t.Fatal(err)
	}
	if got := text(t, vars, "s_w"); got != "7" {
		t.Errorf("s_w = %q after the table changed, want 7", got)
	}

	// Parameter types that change between executes are sent again.
	echo := "SELECT CONCAT('<', :x, '>') AS echo \\gset\n"
	for i, x := range []string{"5", "five", "6", "-7", "", "eight"} {
		vars.SetString(syms.Ref("x"), x)
		if err := execScript(c, echo, vars); err != nil {
			t.Fatalf("execute %d (%q): %v", i+1, x, err)
		}
		if got, want := text(t, vars, "echo"), "<"+x+">"; got != want {
			t.Errorf("execute %d: echo = %q, want %q", i+1, got, want)
		}
	}
}
