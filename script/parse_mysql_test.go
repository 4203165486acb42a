package script

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseMySQLCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string // the SQL commands' simple-protocol text, with no variable set
	}{
		{"one per semicolon", "SELECT 1;\nSELECT 2;", []string{"SELECT 1;", "SELECT 2;"}},
		{"backslash escapes in single quotes", `SELECT 'it\'s; fine', 'a''b;';`, []string{`SELECT 'it\'s; fine', 'a''b;';`}},
		{"double quotes are strings with escapes", `SELECT "x\";y";`, []string{`SELECT "x\";y";`}},
		{"backquoted names", "SELECT `we;ird``name` FROM t;", []string{"SELECT `we;ird``name` FROM t;"}},
		{"hash comment", "SELECT 1 # ; not the end\n, 2;", []string{"SELECT 1 # ; not the end\n, 2;"}},
		{"dash comment needs a space", "SELECT 1 -- ; comment\n;", []string{"SELECT 1 -- ; comment\n;"}},
		{"--1 is arithmetic", "SELECT 1--1;SELECT 2;", []string{"SELECT 1--1;", "SELECT 2;"}},
		{"block comments do not nest", "SELECT /* /* ; */ 1;", []string{"SELECT /* /* ; */ 1;"}},
		{"no dollar quoting", "SELECT $a$;SELECT 2;", []string{"SELECT $a$;", "SELECT 2;"}},
		{"no E strings", `SELECT E'\\';`, []string{`SELECT E'\\';`}},
		{"parentheses do not hold a semicolon", "SELECT (1;\nSELECT 2);", []string{"SELECT (1;", "SELECT 2);"}},
		{"leading comments dropped", "# header\n-- note\n  SELECT 1;", []string{"SELECT 1;"}},
		{"comment-only commands dropped", "SELECT 1; /* trailing */ ; # end\n", []string{"SELECT 1;"}},
		{"marker comment kept", "/* fd */ SELECT 1;", []string{"/* fd */ SELECT 1;"}},
		{"executable comment kept", "/*!40101 SET @a = 1 */;", []string{"/*!40101 SET @a = 1 */;"}},
		{"compound with \\;", "CREATE PROCEDURE p() BEGIN SELECT 1\\; SELECT 2\\; END;", []string{"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END;"}},
		{"escaped colon and := assignment", "SELECT @a := 1, '\\:x', \\:y;", []string{"SELECT @a := 1, '\\:x', :y;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			syms := NewSymbols()
			s, err := ParseDialect("t.sql", []byte(tt.src), syms, MySQL)
			if err != nil {
				t.Fatal(err)
			}
			vars := NewVars(syms)
			var got []string
			for _, c := range s.Commands {
				if c.Kind == KindSQL {
					got = append(got, string(c.SQL.AppendSimple(nil, vars)))
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("commands\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseMySQLVariables(t *testing.T) {
	t.Parallel()
	src := "\\set id random(1, 10)\nSELECT c FROM sbtest1 WHERE id = :id AND k = :k \\gset\n\\if :c > 0\nUPDATE `t` SET v = ':id' WHERE id = :id;\n\\endif\n"
	syms := NewSymbols()
	s, err := ParseDialect("t.sql", []byte(src), syms, MySQL)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []Kind{KindSet, KindSQL, KindIf, KindSQL, KindEndif}
	if len(s.Commands) != len(kinds) {
		t.Fatalf("%d commands, want %d", len(s.Commands), len(kinds))
	}
	for i, k := range kinds {
		if s.Commands[i].Kind != k {
			t.Errorf("command %d is %s, want %s", i, s.Commands[i].Kind, k)
		}
	}
	sel := s.Commands[1].SQL
	if sel.Query != "SELECT c FROM sbtest1 WHERE id = ? AND k = ? " || len(sel.Params) != 2 || sel.Gset == nil {
		t.Errorf("select: query %q, %d params, gset %v", sel.Query, len(sel.Params), sel.Gset)
	}
	// As in pgbench, a :variable inside quotes is substituted too.
	upd := s.Commands[3].SQL
	if upd.Query != "UPDATE `t` SET v = '?' WHERE id = ?;" {
		t.Errorf("update query %q", upd.Query)
	}
	vars := NewVars(syms)
	vars.SetInt(syms.Ref("id"), 7)
	if got := string(upd.AppendSimple(nil, vars)); got != "UPDATE `t` SET v = '7' WHERE id = 7;" {
		t.Errorf("update text %q", got)
	}
}

func TestParseMySQLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ src, want string }{
		{"SELECT 1;\n\\bogus\n", "t.sql:2:1: invalid command \\bogus"},
		{"# only a comment\n", "t.sql:1:1: empty command list for script"},
		{"\\if 1\nSELECT 1;\n", "t.sql:1:1: \\if without matching \\endif"},
	}
	for _, tt := range tests {
		_, err := ParseDialect("t.sql", []byte(tt.src), NewSymbols(), MySQL)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v, want %s", tt.src, err, tt.want)
		}
	}
}

// mysqlFuzzSeeds reach every path of the MySQL lexer.
var mysqlFuzzSeeds = []string{
	"SELECT 1;",
	"SELECT 'a\\'b', \"c\\\"d\", `e``f`, 'g''h' # x\n-- y\n--1;",
	"SELECT /* ; */ /*!50000 1; */ /*M! 2 */ /*+ hint */ 3;",
	"SELECT :a, ':b', \\:c, :{?d}, @e := 1 \\; SELECT 2 \\gset p_\n",
	"\\set x 1\n\\if :x\nSELECT 1 \\aset\n\\else\n\\sleep 1ms\n\\endif\n",
	"CREATE PROCEDURE p() BEGIN SELECT 1\\; END;",
	"SELECT 'unterminated",
	"SELECT `unterminated",
	"SELECT /* unterminated",
	"--",
	"#",
	";;;",
	"\\",
	"$1abc 1e5 x'41' _utf8mb4'x' N'y'",
}

func FuzzParseMySQL(f *testing.F) {
	for _, s := range mysqlFuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		syms := NewSymbols()
		s, err := ParseDialect("fuzz.sql", src, syms, MySQL)
		if err != nil {
			var scriptErr *Error
			if !errors.As(err, &scriptErr) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if p := scriptErr.Pos; p.File != "fuzz.sql" || p.Line < 1 || p.Col < 1 {
				t.Fatalf("error position %v out of range: %v", p, err)
			}
			return
		}
		if len(s.Commands) == 0 {
			t.Fatal("parsed with no commands")
		}
		vars := NewVars(syms)
		for i, c := range s.Commands {
			if c.Pos.Line < 1 || c.Pos.Col < 1 {
				t.Fatalf("command %d at %v", i, c.Pos)
			}
			if c.Kind != KindSQL {
				continue
			}
			text := string(c.SQL.AppendSimple(nil, vars))
			if !strings.HasPrefix(text, c.Text) {
				t.Fatalf("command %d: text %q does not start with %q", i, text, c.Text)
			}
			if skipMySQLComments([]byte(text)) < 0 {
				t.Fatalf("command %d: %q holds only comments", i, text)
			}
			// One ? per parameter beyond the ? already written.
			if got := strings.Count(c.SQL.Query, "?") - strings.Count(text, "?"); got != len(c.SQL.Params) {
				t.Fatalf("command %d: query %q has %d placeholders for %d params", i, c.SQL.Query, got, len(c.SQL.Params))
			}
		}
	})
}
