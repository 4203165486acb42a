package mariadb

import (
	"strings"
	"testing"
)

func TestEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sql  string
		want []string // "line:col what-prefix" of each escape
	}{
		{"unqualified", "UPDATE stock SET qty = qty - 1 WHERE id = :id", nil},
		// alias.column is no database.
		{"alias", "SELECT o.id, s.qty FROM orders o JOIN stock s ON s.id = o.sku", nil},
		{"own database", "SELECT * FROM firedrill.stock; USE firedrill; CREATE DATABASE IF NOT EXISTS `firedrill`", nil},
		{"other database", "SELECT * FROM shop.stock", []string{"1:15 names the database shop"}},
		{"backquoted", "INSERT INTO `shop`.`orders` VALUES (1)", []string{"1:13 names the database shop"}},
		{"index on", "CREATE INDEX i ON shop.orders (sku)", []string{"1:19 names the database shop"}},
		{"three parts", "SELECT shop.stock.qty FROM stock", []string{"1:8 names the database shop"}},
		{"join on a later line", "SELECT 1\nFROM stock\n  JOIN shop.orders ON 1", []string{"3:8 names the database shop"}},
		{"server statements", "USE shop;\nGRANT ALL ON *.* TO x;\nSET GLOBAL max_connections = 1;\nset @@global.wait_timeout = 1;\nKILL 4",
			[]string{"1:1 USE", "2:1 GRANT", "3:1 SET", "4:1 SET", "5:1 KILL"}},
		// Quoted text and comments name nothing.
		{"strings and comments", "SELECT 'FROM shop.stock' -- FROM shop.x\n# USE shop\n/* FROM shop.y */", nil},
		// A script's meta-commands and variables are no SQL names.
		{"script", "\\set id random(1, 10)\nSELECT :id FROM stock", nil},
	}
	for _, test := range tests {
		var got []string
		for _, e := range escapes("firedrill", test.sql) {
			got = append(got, e.describe())
		}
		if len(got) != len(test.want) {
			t.Errorf("%s: escapes = %q, want %q", test.name, got, test.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], test.want[i]) {
				t.Errorf("%s: escape %d = %q, want %q…", test.name, i, got[i], test.want[i])
			}
		}
	}
}

// FuzzEscapes: any script or setup file lexes without panicking, and
// every escape is at a place inside the text.
func FuzzEscapes(f *testing.F) {
	for _, seed := range []string{
		"SELECT * FROM shop.stock; USE shop",
		"INSERT INTO `a``b`.c VALUES ('x\\'y'); SET @@GLOBAL.x = 1",
		"DELIMITER //\nCREATE PROCEDURE shop.p() BEGIN SELECT 1; END //\n",
		"/* unterminated FROM shop.x",
		"\\set id random(1, 10)\nSELECT :id FROM a.b.c",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		for _, e := range escapes("firedrill", text) {
			if e.Line < 1 || e.Line > len(lines) || e.Col < 1 || e.Col > len([]rune(lines[e.Line-1])) {
				t.Fatalf("escape %q at %d:%d outside the text", e.What, e.Line, e.Col)
			}
		}
	})
}
