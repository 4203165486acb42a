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
		// The server runs executable comments: their bodies are SQL.
		{"executable comment", "/*! DROP TABLE shop.t */", []string{"1:16 names the database shop"}},
		{"MariaDB executable comment", "/*M!100000 DELETE FROM shop.stock */", []string{"1:24 names the database shop"}},
		{"versioned executable comment", "/*!50001 CREATE OR REPLACE VIEW shop.v AS SELECT 1 */", []string{"1:33 names the database shop"}},
		{"executable comment starting a statement", "/*!40101 SET GLOBAL max_connections = 1 */", []string{"1:10 SET"}},
		{"executable comment in a script", "SELECT 1 /*! , (SELECT COUNT(*) FROM shop.t) */;", []string{"1:38 names the database shop"}},
		{"executable comment is no plain comment", "/* DROP TABLE shop.t */ SELECT 1", nil},
		// Statements naming several objects.
		{"drop a list", "DROP TABLE IF EXISTS x, shop.customers", []string{"1:25 names the database shop"}},
		{"rename a list", "RENAME TABLE x TO y, shop.stock TO stolen", []string{"1:22 names the database shop"}},
		{"rename into", "RENAME TABLE x TO shop.x", []string{"1:19 names the database shop"}},
		{"multi-table update", "UPDATE x, shop.accounts a SET a.balance = 0", []string{"1:11 names the database shop"}},
		{"multi-table delete", "DELETE x, a FROM x, shop.accounts a WHERE a.id = x.id", []string{"1:21 names the database shop"}},
		{"delete using", "DELETE FROM a USING shop.accounts a", []string{"1:21 names the database shop"}},
		{"aliases after the list", "UPDATE stock s, orders o SET s.qty = o.qty WHERE s.id = o.sku", nil},
		{"select list is no table list", "SELECT s.qty, o.sku FROM stock s, orders o WHERE s.id = o.sku", nil},
		{"lock a list", "LOCK TABLES x WRITE, shop.t READ", []string{"1:22 names the database shop"}},
		// CREATE OR REPLACE, accounts and roles.
		{"create or replace database", "CREATE OR REPLACE DATABASE shop", []string{"1:1 CREATE: creates a database"}},
		{"create or replace own database", "CREATE OR REPLACE DATABASE firedrill", nil},
		{"create or replace user", "CREATE OR REPLACE USER app@localhost IDENTIFIED BY 'x'", []string{"1:1 CREATE: creates a user"}},
		{"create or replace role", "CREATE OR REPLACE ROLE r", []string{"1:1 CREATE: creates a role"}},
		{"alter user", "ALTER USER app@localhost IDENTIFIED BY 'x'", []string{"1:1 ALTER: changes a user"}},
		{"drop role", "DROP ROLE r", []string{"1:1 DROP: drops a role"}},
		{"set role", "SET ROLE admin", []string{"1:1 SET: takes a role"}},
		{"revoke", "REVOKE ALL PRIVILEGES, GRANT OPTION FROM app@localhost", []string{"1:1 REVOKE"}},
		// Stored programs: their bodies run later, as their definer.
		{"procedure body", "CREATE PROCEDURE evil() DROP DATABASE shop", []string{"1:25 DROP: drops a database (in a stored program"}},
		{"procedure compound body", "DELIMITER //\nCREATE PROCEDURE p()\nBEGIN\n  SELECT 1;\n  GRANT ALL ON *.* TO x;\nEND //",
			[]string{"5:3 GRANT: changes privileges (in a stored program"}},
		{"function body", "CREATE FUNCTION f() RETURNS INT DETERMINISTIC BEGIN SET GLOBAL read_only = 1; RETURN 1; END",
			[]string{"1:53 SET: changes a global variable"}},
		{"trigger body", "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW DELETE FROM shop.stock", []string{"1:63 names the database shop"}},
		{"event body", "CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO DROP DATABASE shop", []string{"1:46 DROP: drops a database"}},
		{"harmless procedure", "CREATE PROCEDURE p(IN n INT) BEGIN UPDATE stock SET qty = qty - n; END", nil},
		{"call outside", "CALL shop.restock()", []string{"1:6 names the database shop"}},
		{"definer", "CREATE DEFINER = root@localhost PROCEDURE p() SELECT 1", []string{"1:8 DEFINER"}},
		{"definer current_user", "CREATE DEFINER = CURRENT_USER PROCEDURE p() SELECT 1", nil},
		// SQL built from strings: said, not refused.
		{"execute immediate", "EXECUTE IMMEDIATE CONCAT('DROP ', 'DATABASE shop')", []string{"1:1 EXECUTE IMMEDIATE runs SQL built from a string"}},
		{"prepare", "PREPARE s FROM @sql", []string{"1:1 PREPARE … FROM"}},
		// Settings lists: every GLOBAL item.
		{"settings list", "SET wait_timeout = 100, GLOBAL max_connections = 20", []string{"1:25 SET GLOBAL"}},
		{"settings list @@", "SET @x = 1, @@global.max_connections = 20", []string{"1:1 SET"}},
		{"session settings", "SET SESSION wait_timeout = 100, sql_mode = ''", nil},
		{"set statement for", "SET STATEMENT max_statement_time = 1 FOR DROP DATABASE shop", []string{"1:42 DROP: drops a database"}},
		// Files on the server.
		{"outfile", "SELECT * FROM t INTO OUTFILE '/tmp/x'", []string{"1:22 INTO OUTFILE"}},
		{"load_file", "INSERT INTO t VALUES (LOAD_FILE('/etc/passwd'))", []string{"1:23 LOAD_FILE"}},
		{"load data", "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", []string{"1:1 LOAD: loads a file"}},
		{"create server", "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'h')", []string{"1:1 CREATE: defines a link"}},
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
		"/*! DROP TABLE shop.t */; /*M!100000 DELETE FROM shop.stock */; /*!50001 CREATE VIEW shop.v AS SELECT 1 */",
		"/*!",
		"/*M!1000",
		"/*! SELECT 1 */ */ /*! /*! nested */",
		"DROP TABLE IF EXISTS x, shop.customers; RENAME TABLE x TO y, shop.stock TO stolen; UPDATE x, shop.accounts a SET a.balance = 0",
		"CREATE OR REPLACE DATABASE shop; CREATE OR REPLACE USER app@localhost; CREATE DEFINER = root@localhost PROCEDURE p() DROP DATABASE shop",
		"DELIMITER //\nCREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO BEGIN DELETE FROM shop.t; END //\n",
		"EXECUTE IMMEDIATE 'DROP DATABASE shop'; PREPARE s FROM @q; SET STATEMENT x = 1 FOR",
		"SET a = 1, GLOBAL b = 2, PERSIST c = 3",
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
