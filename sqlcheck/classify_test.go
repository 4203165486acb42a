package sqlcheck

import (
	"reflect"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Stmt
	}{
		{"begin", "BEGIN;", Stmt{Kind: StmtBegin}},
		{"begin isolation, lower case", "begin isolation level repeatable read;", Stmt{Kind: StmtBegin}},
		{"start transaction", "START TRANSACTION;", Stmt{Kind: StmtBegin}},
		{"commit", "COMMIT;", Stmt{Kind: StmtEnd}},
		{"end", "end", Stmt{Kind: StmtEnd}},
		{"rollback", "ROLLBACK WORK;", Stmt{Kind: StmtEnd}},
		{"prepare transaction ends the session's transaction", "PREPARE TRANSACTION 'x';", Stmt{Kind: StmtEnd}},
		{"commit prepared ends another one", "COMMIT PREPARED 'x';", Stmt{Kind: StmtOther}},
		{"savepoint", "SAVEPOINT nested;", Stmt{Kind: StmtSavepoint, Savepoint: "nested"}},
		{"release", "RELEASE SAVEPOINT nested;", Stmt{Kind: StmtRelease, Savepoint: "nested"}},
		{"release short", "release nested", Stmt{Kind: StmtRelease, Savepoint: "nested"}},
		{"rollback to", "ROLLBACK TO SAVEPOINT s1;", Stmt{Kind: StmtRollbackTo, Savepoint: "s1"}},
		{"rollback transaction to", "rollback transaction to s1", Stmt{Kind: StmtRollbackTo, Savepoint: "s1"}},
		{"meta", `\set aid random(1, 100000 * :scale)`, Stmt{Kind: StmtMeta}},
		{"for update", "SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;",
			Stmt{Kind: StmtLock, Lock: "FOR UPDATE", Locked: []string{"pgbench_accounts"}}},
		{"for no key update, qualified and quoted", `select * from public."Stock" s where s.sku = $1 for no key update`,
			Stmt{Kind: StmtLock, Lock: "FOR NO KEY UPDATE", Locked: []string{"Stock"}}},
		{"for share of", "SELECT * FROM a JOIN b ON a.id = b.a_id WHERE a.id = 1 FOR SHARE OF b",
			Stmt{Kind: StmtLock, Lock: "FOR SHARE", Locked: []string{"b"}}},
		{"for key share over a join", "SELECT * FROM a JOIN b USING (id) FOR KEY SHARE",
			Stmt{Kind: StmtLock, Lock: "FOR KEY SHARE", Locked: []string{"a", "b"}}},
		{"for update in a comment is not a lock", "SELECT 1 /* FOR UPDATE */ -- for update\n",
			Stmt{Kind: StmtOther}},
		{"for update in a string is not a lock", "SELECT 'for update' FROM t", Stmt{Kind: StmtOther}},
		{"nested comments", "SELECT /* a /* b */ FOR UPDATE */ 1 FROM t", Stmt{Kind: StmtOther}},
		{"update", "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
			Stmt{Kind: StmtWrite, Written: []string{"pgbench_accounts"}}},
		{"update only", "update only t set x = 1", Stmt{Kind: StmtWrite, Written: []string{"t"}}},
		{"delete", "DELETE FROM stock WHERE sku = 1", Stmt{Kind: StmtWrite, Written: []string{"stock"}}},
		{"insert on conflict do update", "INSERT INTO t (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET n = t.n + 1",
			Stmt{Kind: StmtWrite, Written: []string{"t"}}},
		{"cte update", "WITH u AS (UPDATE t SET n = 1 RETURNING id) SELECT * FROM u",
			Stmt{Kind: StmtWrite, Written: []string{"t"}}},
		{"dollar quote hides keywords", "SELECT $$ UPDATE t SET x = 1 $$", Stmt{Kind: StmtOther}},
		{"parameters are not dollar quotes", "UPDATE t SET x = $1 WHERE id = $2", Stmt{Kind: StmtWrite, Written: []string{"t"}}},
		{"empty", "  -- nothing\n", Stmt{Kind: StmtOther}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Classify(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Classify(%q) = %+v, want %+v", tt.text, got, tt.want)
			}
		})
	}
}

func TestSplitScript(t *testing.T) {
	t.Parallel()
	text := "-- a comment\n\\set aid random(1, 10)\nBEGIN;\nSELECT *\n  FROM t -- trailing; not the end\n  WHERE id = :aid;\nCOMMIT;\n"
	texts, lines := SplitScript(text)
	if len(texts) != 4 || !reflect.DeepEqual(lines, []int{2, 3, 4, 7}) {
		t.Fatalf("got %q at lines %v", texts, lines)
	}
}

// Only commands that may be a SAVEPOINT make a script worth classifying
// for the subtransaction rules.
func TestMaySavepoint(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"SAVEPOINT a", true},
		{"  savepoint a;", true},
		{"rollback to SavePoint a", true},
		{"release a", false}, // without a savepoint opened, nothing for the rules
		{"SELECT :v0 + 0;", false},
		{`\set v random(1, 1000)`, false},
		{"SAVEPOİNT a", true}, // non-ASCII: left to Classify
		{"SAVEPOIN", false},
		{"", false},
	} {

		if got := MaySavepoint(tt.text); got != tt.want {
			t.Errorf("MaySavepoint(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// The lock-order analysis parses only scripts that may lock rows.
func TestMayMention(t *testing.T) {
	words := []string{"update", "delete", "share", "insert"}
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"SELECT :v0 + 0;\n\\set v random(1, 10)\n", false},
		{"UPDATE t SET v = 1;", true},
		{"select * from t for Share;", true},
		{"insert into t values (1);", true},
		{"delete from t", true},
		{"SELECT 'ü';", true}, // non-ASCII: parsed to be sure
		{"UPDAT", false},
	} {
		if got := MayMention(tt.text, words...); got != tt.want {
			t.Errorf("MayMention(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
