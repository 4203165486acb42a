package mariadb

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []statement
	}{
		{"two on two lines", "CREATE TABLE t (id INT);\nINSERT INTO t VALUES (1);\n",
			[]statement{{"CREATE TABLE t (id INT)", 1, 1}, {"INSERT INTO t VALUES (1)", 2, 1}}},
		{"no final delimiter", "SELECT 1", []statement{{"SELECT 1", 1, 1}}},
		// A semicolon inside quotes, names and comments ends nothing.
		{"quoted", "INSERT INTO t VALUES ('a;b', \"c;d\", 'it''s;', 'x\\';y');  SELECT `a;b` FROM t;",
			[]statement{{"INSERT INTO t VALUES ('a;b', \"c;d\", 'it''s;', 'x\\';y')", 1, 1}, {"SELECT `a;b` FROM t", 1, 58}}},
		{"comments", "# one; two\n-- three; four\n/* five; six */ SELECT 1; --not a comment;\n",
			[]statement{{"/* five; six */ SELECT 1", 3, 1}, {"--not a comment", 3, 27}}},
		// The mysql client's DELIMITER brings a stored program whole.
		{"delimiter", "DELIMITER //\nCREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END //\nDELIMITER ;\nCALL p();\n",
			[]statement{{"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END", 2, 1}, {"CALL p()", 4, 1}}},
		{"indented after blank lines", "\n\n   UPDATE t SET v = 1;", []statement{{"UPDATE t SET v = 1", 3, 4}}},
		{"empty statements", ";;\n;", nil},
	}
	for _, test := range tests {
		if got := splitStatements(test.text); !reflect.DeepEqual(got, test.want) {
			t.Errorf("%s: splitStatements(%q)\n got %+v\nwant %+v", test.name, test.text, got, test.want)
		}
	}
}

// FuzzSplitStatements: any bytes split without panicking into statements
// that are pieces of the text, in order, at the positions they claim.
func FuzzSplitStatements(f *testing.F) {
	for _, seed := range []string{
		"CREATE TABLE t (id INT);\nINSERT INTO t VALUES (1);",
		"DELIMITER //\nCREATE PROCEDURE p() BEGIN SELECT 1; END //\nDELIMITER ;\nCALL p();",
		"SELECT 'a;b', `c;d`, \"e\\\";\" # x;\n/* y; */ -- z;\n;",
		"'unterminated; SELECT 1",
		"DELIMITER\nSELECT 1;",
		"/*! DROP TABLE shop.t */;\n/*M!100000 DELETE FROM shop.stock; */\n/*!50001 CREATE VIEW v AS SELECT 1 */;",
		"DELIMITER $$\nCREATE PROCEDURE evil() BEGIN DROP DATABASE shop; END $$\nDELIMITER ;\nCALL evil();",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		for _, stmt := range splitStatements(text) {
			if stmt.Text == "" || stmt.Text != strings.TrimSpace(stmt.Text) {
				t.Fatalf("statement %q is empty or untrimmed", stmt.Text)
			}
			if stmt.Line < 1 || stmt.Line > len(lines) {
				t.Fatalf("statement %q at line %d of %d", stmt.Text, stmt.Line, len(lines))
			}
			runes := []rune(lines[stmt.Line-1])
			if stmt.Col < 1 || stmt.Col > len(runes) {
				t.Fatalf("statement %q at %d:%d, a line of %d characters", stmt.Text, stmt.Line, stmt.Col, len(runes))
			}
			first, _ := firstRune(stmt.Text)
			if runes[stmt.Col-1] != first {
				t.Fatalf("statement %q does not start at %d:%d (%q)", stmt.Text, stmt.Line, stmt.Col, runes[stmt.Col-1])
			}
		}
	})
}

// firstRune is s's first character.
func firstRune(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return 0, false
}
