package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// testScript builds a workload script from command texts.
func testScript(workload, name string, commands ...string) workloadScript {
	ws := workloadScript{Workload: workload, Script: name}
	for i, c := range commands {
		ws.Commands = append(ws.Commands, scriptCommand{Workload: workload, Script: name, Line: i + 1, Text: c, Stmt: sqlcheck.Classify(c)})
	}
	return ws
}

func TestLockSavepointWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script workloadScript
		want   int // patterns found
	}{
		{"the multixact pattern", testScript("w", "m.sql", `\set aid random(1, 10)`, "BEGIN;",
			"SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;", "SAVEPOINT nested;",
			"UPDATE pgbench_accounts SET abalance = 1 WHERE aid = :aid;", "RELEASE SAVEPOINT nested;", "COMMIT;"), 1},
		{"the control: no savepoint", testScript("w", "c.sql", "BEGIN;",
			"SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;", "SELECT 1;",
			"UPDATE pgbench_accounts SET abalance = 1 WHERE aid = :aid;", "COMMIT;"), 0},
		{"released before the write", testScript("w", "r.sql", "BEGIN;", "SELECT * FROM t FOR SHARE;",
			"SAVEPOINT s;", "RELEASE s;", "UPDATE t SET x = 1;", "COMMIT;"), 0},
		{"another table", testScript("w", "o.sql", "BEGIN;", "SELECT * FROM a FOR UPDATE;",
			"SAVEPOINT s;", "UPDATE b SET x = 1;", "COMMIT;"), 0},
		{"a second lock inside the savepoint", testScript("w", "l.sql", "begin", "select * from t for key share",
			"savepoint s", "select * from t for update", "commit"), 1},
		{"lock and write in separate transactions", testScript("w", "s.sql", "BEGIN;", "SELECT * FROM t FOR UPDATE;",
			"COMMIT;", "BEGIN;", "SAVEPOINT s;", "UPDATE t SET x = 1;", "COMMIT;"), 0},
		{"autocommit: no transaction block", testScript("w", "a.sql", "SELECT * FROM t FOR UPDATE;",
			"SAVEPOINT s;", "UPDATE t SET x = 1;"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := lockSavepointWrites([]workloadScript{tt.script}); len(got) != tt.want {
				t.Errorf("found %d patterns, want %d: %+v", len(got), tt.want, got)
			}
		})
	}
}

func TestDeepSubtransactions(t *testing.T) {
	t.Parallel()
	deep := func(n int, write bool) workloadScript {
		cmds := []string{"BEGIN;"}
		for i := 0; i < n; i++ {
			cmds = append(cmds, "SAVEPOINT s;")
			if write {
				cmds = append(cmds, "UPDATE t SET x = x + 1 WHERE id = 1;")
			}
		}
		return testScript("w", "deep.sql", append(cmds, "COMMIT;")...)
	}
	released := []string{"BEGIN;"}
	for i := 0; i < 70; i++ {
		released = append(released, "SAVEPOINT s;", "INSERT INTO t VALUES (1);", "RELEASE SAVEPOINT s;")
	}
	rolledBack := []string{"BEGIN;", "SAVEPOINT s;"}
	for i := 0; i < 70; i++ {
		rolledBack = append(rolledBack, "INSERT INTO t VALUES (1);", "ROLLBACK TO SAVEPOINT s;")
	}
	tests := []struct {
		name    string
		script  workloadScript
		withXID int // 0: not reported
	}{
		{"70 writing savepoints", deep(70, true), 70},
		{"64 is still cached", deep(64, true), 0},
		{"savepoints that never write get no xid", deep(100, false), 0},
		{"released subtransactions still count", testScript("w", "r.sql", append(released, "COMMIT;")...), 70},
		{"rolled back ones leave the cache", testScript("w", "b.sql", append(rolledBack, "COMMIT;")...), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := deepSubtransactions([]workloadScript{tt.script})
			switch {
			case tt.withXID == 0 && len(got) != 0:
				t.Errorf("reported %+v, want nothing", got)
			case tt.withXID > 0 && (len(got) != 1 || got[0].WithXID != tt.withXID):
				t.Errorf("got %+v, want one script with %d subtransactions with xids", got, tt.withXID)
			}
		})
	}
}

func TestScriptsFromFileCopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := "-- a comment\n\\set aid random(1, 10)\nBEGIN;\nSELECT *\n  FROM t -- trailing; not the end\n  WHERE id = :aid;\nCOMMIT;\n"
	// A run whose manifest lacks command texts falls back on the copies.
	run := &timeline.Run{Dir: filepath.Dir(dir), Manifest: timeline.Manifest{Workloads: []timeline.WorkloadInfo{
		{Name: "w", Scripts: []timeline.ScriptInfo{{Name: "x.sql", File: "x.sql"}}}}}}
	if err := os.MkdirAll(filepath.Join(dir, timeline.ScriptsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, timeline.ScriptsDir, "x.sql"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run.Dir = dir
	ws := workloadScripts(run)
	if len(ws) != 1 || len(ws[0].Commands) != 4 || ws[0].Commands[2].Line != 4 || ws[0].Commands[2].Stmt.Kind != sqlcheck.StmtOther {
		t.Fatalf("workloadScripts = %+v", ws)
	}
}

// The subtransaction rules get the scripts with savepoints only, and
// within one Diagnose the same classification.
func TestSavepointScripts(t *testing.T) {
	run := &timeline.Run{Manifest: timeline.Manifest{Workloads: []timeline.WorkloadInfo{{Name: "w", Scripts: []timeline.ScriptInfo{
		{Name: "plain", Commands: []string{"BEGIN;", "UPDATE t SET v = 1;", "COMMIT;"}},
		{Name: "nested", Commands: []string{"BEGIN;", "SAVEPOINT a;", "UPDATE t SET v = 1;", "RELEASE a;", "COMMIT;"}},
	}}}}}
	got := savepointScripts(run)
	if len(got) != 1 || got[0].Script != "nested" || len(got[0].Commands) != 5 || got[0].Commands[1].Stmt.Kind != sqlcheck.StmtSavepoint {
		t.Fatalf("savepointScripts = %+v", got)
	}
	var a, b []workloadScript
	diagnose.Diagnose(run, []diagnose.Rule{ruleFunc(func(run *timeline.Run) {
		a, b = savepointScripts(run), savepointScripts(run)
	})})
	if &a[0] != &b[0] {
		t.Error("within one diagnosis the scripts were classified twice")
	}
	if c := savepointScripts(run); &c[0] == &a[0] {
		t.Error("the classified scripts outlived the diagnosis")
	}
}

// ruleFunc is a rule that only calls f, to see what a rule sees within Diagnose.
type ruleFunc func(run *timeline.Run)

func (ruleFunc) ID() string                                   { return "test" }
func (ruleFunc) Inputs() diagnose.Inputs                      { return diagnose.Inputs{} }
func (f ruleFunc) Check(run *timeline.Run) []diagnose.Finding { f(run); return nil }
