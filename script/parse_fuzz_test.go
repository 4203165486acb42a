package script

import (
	"errors"
	"strings"
	"testing"
)

// fuzzSeeds are scripts that reach every path of the parser.
var fuzzSeeds = []string{
	"SELECT 1;",
	"SELECT :a, ':b', :c::int, \\:d, :{?e}, :'f', :\"g\" \\; SELECT 2 \\gset p_\n",
	"\\set x 1 + \\\n 2\n\\if :x > 1\nSELECT 1 \\aset\n\\elif false\n\\sleep 10ms\n\\else\n\\shell echo :x ::y\n\\endif\n",
	"\\setshell v echo 1\n\\sleep :v us\n\\startpipeline\nSELECT 1;\n\\syncpipeline\n\\endpipeline\n",
	"SELECT E'\\'', $t$ ; $t$, \"a\"\"b\", /* /* */ */ 1 -- c\n;",
	"CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT CASE WHEN 1 THEN 2 END; END;",
	"SELECT (1;\n\\gset\n);",
	"SELECT 'a'\n  'b';\r\n\\set y 2\r\n",
	"\\",
	"\\if 1\n\\else\n\\else\n",
	"\\sleep\n\\foo",
	"E'\\",
	"$a$",
	"U&'x' U&\"y\" u&z 1e'x' $1abc",
	"\\set x\n",
	"\\gset",
}

func FuzzParse(f *testing.F) {
	for _, b := range BuiltinNames() {
		f.Add([]byte(b.Source))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		syms := NewSymbols()
		s, err := Parse("fuzz.sql", src, syms)
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
		vars := NewVars(syms)
		n := len(s.Commands)
		if n == 0 {
			t.Fatal("Parse succeeded with no commands")
		}
		endifAt := func(i int) bool { return i >= 0 && i < n && s.Commands[i].Kind == KindEndif }
		for i, c := range s.Commands {
			if c.Pos.Line < 1 || c.Pos.Col < 1 {
				t.Fatalf("command %d at %v", i, c.Pos)
			}
			switch c.Kind {
			case KindIf, KindElif:
				if c.Next <= i || c.Next > c.End || !endifAt(c.End) {
					t.Fatalf("command %d (%s): Next %d, End %d out of range", i, c.Kind, c.Next, c.End)
				}
				if k := s.Commands[c.Next].Kind; k != KindElif && k != KindElse && k != KindEndif {
					t.Fatalf("command %d: Next %d is a %s", i, c.Next, k)
				}
			case KindElse:
				if c.End <= i || !endifAt(c.End) {
					t.Fatalf("command %d (else): End %d out of range", i, c.End)
				}
			case KindSQL:
				// With no variable set, every reference is sent as written, so
				// the simple-protocol text is the command itself.
				text := string(c.SQL.AppendSimple(nil, vars))
				if !strings.HasPrefix(text, c.Text) {
					t.Fatalf("command %d: text %q does not start with %q", i, text, c.Text)
				}
				if got := strings.Count(c.SQL.Query, "$") - strings.Count(text, "$"); got != len(c.SQL.Params) {
					t.Fatalf("command %d: query %q has %d placeholders for %d params", i, c.SQL.Query, got, len(c.SQL.Params))
				}
			}
		}
		// Substituting values must work for every command.
		for r := VarRef(0); int(r) < syms.Len(); r++ {
			vars.SetInt(r, int64(r))
		}
		for _, c := range s.Commands {
			if c.Kind == KindSQL {
				c.SQL.AppendSimple(nil, vars)
			}
			if c.Kind == KindSleep {
				if _, err := c.Sleep.Micros(vars); err != nil {
					t.Fatalf("Micros with every variable set: %v", err)
				}
			}
		}
	})
}
