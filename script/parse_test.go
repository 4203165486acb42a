package script

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// summarize renders a parsed script one command a line, so that table
// tests can state what they expect compactly.
func summarize(s *Script, syms *Symbols) []string {
	var out []string
	for _, c := range s.Commands {
		var b strings.Builder
		b.WriteString(c.Kind.String())
		switch c.Kind {
		case KindSQL:
			fmt.Fprintf(&b, " q=%q", c.SQL.Query)
			for _, p := range c.SQL.Params {
				fmt.Fprintf(&b, " :%s", syms.Name(p))
			}
			if c.SQL.Compound {
				b.WriteString(" compound")
			}
			if g := c.SQL.Gset; g != nil {
				verb := "gset"
				if g.All {
					verb = "aset"
				}
				fmt.Fprintf(&b, " %s(%s)", verb, g.Prefix)
			}
		case KindSet:
			fmt.Fprintf(&b, " %s", syms.Name(c.Var))
		case KindIf, KindElif:
			fmt.Fprintf(&b, " next=%d end=%d", c.Next, c.End)
		case KindElse:
			fmt.Fprintf(&b, " end=%d", c.End)
		case KindSleep:
			if c.Sleep.Var != NoVar {
				fmt.Fprintf(&b, " :%s", syms.Name(c.Sleep.Var))
			} else {
				fmt.Fprintf(&b, " %d", c.Sleep.Literal)
			}
			fmt.Fprintf(&b, " x%d", c.Sleep.Unit)
		case KindSetShell, KindShell:
			if c.Kind == KindSetShell {
				fmt.Fprintf(&b, " %s", syms.Name(c.Var))
			}
			for _, a := range c.Args {
				if a.Var != NoVar {
					fmt.Fprintf(&b, " :%s", syms.Name(a.Var))
				} else {
					fmt.Fprintf(&b, " %q", a.Text)
				}
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestParseConstructs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			// The plainest script: one statement.
			name: "one statement",
			src:  "SELECT 1;\n",
			want: []string{`sql q="SELECT 1;"`},
		},
		{
			// A statement spans lines until its semicolon.
			name: "multi-line statement",
			src:  "SELECT 1\n  + 2\n;\n",
			want: []string{`sql q="SELECT 1\n  + 2\n;"`},
		},
		{
			// Text after the last semicolon is still a command, as in pgbench.
			name: "no final semicolon",
			src:  "SELECT 1;\nSELECT 2\n",
			want: []string{`sql q="SELECT 1;"`, `sql q="SELECT 2\n"`},
		},
		{
			// Whitespace- and comment-only pieces make no command; a lone
			// ';' does (pgbench sends it as an empty query).
			name: "empty pieces",
			src:  "-- header\n\n   \nSELECT 1;;\n-- trailer\n",
			want: []string{`sql q="SELECT 1;"`, `sql q=";"`},
		},
		{
			// Semicolons inside quotes, identifiers and comments do not end
			// the command.
			name: "quoted semicolons",
			src:  "SELECT ';', \";\" /* ; */, 1 -- ;\n;\n",
			want: []string{`sql q="SELECT ';', \";\" /* ; */, 1 -- ;\n;"`},
		},
		{
			// Doubled quotes stay inside the string.
			name: "doubled quotes",
			src:  "SELECT 'it''s;', \"a\"\";\";\n",
			want: []string{`sql q="SELECT 'it''s;', \"a\"\";\";"`},
		},
		{
			// E'' strings have backslash escapes; plain strings do not
			// (standard_conforming_strings).
			name: "escape strings",
			src:  "SELECT E'\\';', 'x\\';\nSELECT 2;",
			want: []string{`sql q="SELECT E'\\';', 'x\\';"`, `sql q="SELECT 2;"`},
		},
		{
			// An E inside an identifier is not a string prefix.
			name: "E inside identifier",
			src:  "SELECT namE'\\';\nSELECT 2;",
			want: []string{`sql q="SELECT namE'\\';"`, `sql q="SELECT 2;"`},
		},
		{
			// A string continued on the next line keeps its E-string escapes.
			name: "string continuation",
			src:  "SELECT E'a'\n  'b\\';';\n",
			want: []string{`sql q="SELECT E'a'\n  'b\\';';"`},
		},
		{
			// Dollar quotes, tagged or not, hide semicolons; $1 is no quote.
			name: "dollar quotes",
			src:  "SELECT $$;$$, $tag$ $$ ; $tag$, $1;\n",
			want: []string{`sql q="SELECT $$;$$, $tag$ $$ ; $tag$, $1;"`},
		},
		{
			// A dollar inside an identifier does not open a quote.
			name: "dollar in identifier",
			src:  "SELECT a$b$;\nSELECT 2;",
			want: []string{`sql q="SELECT a$b$;"`, `sql q="SELECT 2;"`},
		},
		{
			// Block comments nest.
			name: "nested comments",
			src:  "SELECT /* a /* b */ ; */ 1;\n",
			want: []string{`sql q="SELECT /* a /* b */ ; */ 1;"`},
		},
		{
			// A semicolon inside parentheses does not end the command.
			name: "parentheses",
			src:  "SELECT (1;\n);\n",
			want: []string{`sql q="SELECT (1;\n);"`},
		},
		{
			// A SQL-standard function body keeps its semicolons.
			name: "begin atomic",
			src:  "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 1 END; END;\nSELECT 2;",
			want: []string{
				`sql q="CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 1 END; END;"`,
				`sql q="SELECT 2;"`,
			},
		},
		{
			// BEGIN outside a function body is a transaction start.
			name: "begin transaction",
			src:  "BEGIN;\nSELECT 1;\nEND;\n",
			want: []string{`sql q="BEGIN;"`, `sql q="SELECT 1;"`, `sql q="END;"`},
		},
		{
			// \; joins statements into one compound command.
			name: "compound",
			src:  "SELECT 1 \\; SELECT 2;\n",
			want: []string{`sql q="SELECT 1 ; SELECT 2;" compound`},
		},
		{
			// Variables become $n in order, one per occurrence.
			name: "variables",
			src:  "UPDATE t SET a = :a + :b WHERE id = :a;\n",
			want: []string{`sql q="UPDATE t SET a = $1 + $2 WHERE id = $3;" :a :b :a`},
		},
		{
			// Casts are not variables, and pgbench finds variables even in
			// quotes; a name cannot start with a digit.
			name: "casts and quotes",
			src:  "SELECT :x::int, ':y', :1, :::z;\n",
			want: []string{`sql q="SELECT $1::int, '$2', :1, :::z;" :x :y`},
		},
		{
			// Variable names take letters, digits, _ and non-ASCII bytes.
			name: "variable name characters",
			src:  "SELECT :a_1é+1;\n",
			want: []string{`sql q="SELECT $1+1;" :a_1é`},
		},
		{
			// \: forces a colon; :{?x} is psql's test, which pgbench sees as FALSE.
			name: "forced colon and psql test",
			src:  "SELECT \\:x, :{?x};\n",
			want: []string{`sql q="SELECT $1, FALSE;" :x`},
		},
		{
			// \set takes a variable and an expression.
			name: "set",
			src:  "\\set aid random(1, 100000 * :scale)\n",
			want: []string{`set aid`},
		},
		{
			// A meta-command continues after backslash-newline.
			name: "set continued",
			src:  "\\set x 1 + \\\n  2\nSELECT :x;\n",
			want: []string{`set x`, `sql q="SELECT $1;" :x`},
		},
		{
			// Meta-command names ignore case; whitespace may follow the backslash.
			name: "meta-command case",
			src:  "\\SET x 1\n\\ Sleep 1\n",
			want: []string{`set x`, `sleep 1 x1000000`},
		},
		{
			// \sleep with every unit form.
			name: "sleep",
			src:  "\\sleep 2\n\\sleep 10 ms\n\\sleep 5us\n\\sleep :d s\n\\sleep -3 MS\n",
			want: []string{`sleep 2 x1000000`, `sleep 10 x1000`, `sleep 5 x1`, `sleep :d x1000000`, `sleep -3 x1000`},
		},
		{
			// \gset and \aset attach to the SQL command before them, even on
			// the next line; a prefix is optional.
			name: "gset and aset",
			src:  "SELECT 1 AS a \\gset\nSELECT 2 AS b;\n\\gset p_\nSELECT 3 \\; SELECT 4 \\aset\n",
			want: []string{`sql q="SELECT 1 AS a " gset()`, `sql q="SELECT 2 AS b;" gset(p_)`, `sql q="SELECT 3 ; SELECT 4 " compound aset()`},
		},
		{
			// A meta-command may follow SQL on the same line and ends the SQL.
			name: "meta after sql",
			src:  "SELECT 1 \\sleep 1 ms\n",
			want: []string{`sql q="SELECT 1 "`, `sleep 1 x1000`},
		},
		{
			// \if/\elif/\else/\endif get their jump targets.
			name: "conditionals",
			src:  "\\if :a\nSELECT 1;\n\\elif :b\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\n",
			want: []string{`if next=2 end=6`, `sql q="SELECT 1;"`, `elif next=4 end=6`, `sql q="SELECT 2;"`, `else end=6`, `sql q="SELECT 3;"`, `endif`},
		},
		{
			// Nested conditionals link to their own \endif.
			name: "nested conditionals",
			src:  "\\if 1\n\\if 0\nSELECT 1;\n\\endif\n\\else\nSELECT 2;\n\\endif\n",
			want: []string{`if next=4 end=6`, `if next=3 end=3`, `sql q="SELECT 1;"`, `endif`, `else end=6`, `sql q="SELECT 2;"`, `endif`},
		},
		{
			// An \if without \else jumps straight to its \endif.
			name: "if without else",
			src:  "\\if :a\nSELECT 1;\n\\endif\n",
			want: []string{`if next=2 end=2`, `sql q="SELECT 1;"`, `endif`},
		},
		{
			// \shell arguments: literals, :variables and ::escaped colons.
			name: "shell",
			src:  "\\shell echo :x ::y z\n",
			want: []string{`shell "echo" :x ":y" "z"`},
		},
		{
			// \setshell stores the command's output in a variable.
			name: "setshell",
			src:  "\\setshell v echo 5 :w\n",
			want: []string{`setshell v "echo" "5" :w`},
		},
		{
			// Pipelines.
			name: "pipeline",
			src:  "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n",
			want: []string{`startpipeline`, `sql q="SELECT 1;"`, `syncpipeline`, `sql q="SELECT 2;"`, `endpipeline`},
		},
		{
			// A pipeline opened in a branch is left to the run-time checks.
			name: "conditional pipeline",
			src:  "\\if :p\n\\startpipeline\n\\endif\nSELECT 1 \\gset\n\\if :p\n\\endpipeline\n\\endif\n",
			want: []string{`if next=2 end=2`, `startpipeline`, `endif`, `sql q="SELECT 1 " gset()`, `if next=6 end=6`, `endpipeline`, `endif`},
		},
		{
			// A lone backslash is ignored, as in pgbench.
			name: "lone backslash",
			src:  "SELECT 1;\n\\\nSELECT 2;\n",
			want: []string{`sql q="SELECT 1;"`, `sql q="SELECT 2;"`},
		},
		{
			// Windows line ends.
			name: "crlf",
			src:  "\\set x 1\r\nSELECT :x;\r\n\\sleep 1 ms\r\n",
			want: []string{`set x`, `sql q="SELECT $1;" :x`, `sleep 1 x1000`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			syms := NewSymbols()
			s, err := Parse("t.sql", []byte(tt.src), syms)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := summarize(s, syms); !slices.Equal(got, tt.want) {
				t.Errorf("commands:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestParseText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			// SQL: the first line, trailing spaces kept; meta-commands: the
			// whole command, continuation included.
			name: "first lines",
			src:  "SELECT 1\n, 2;\n\\set x 1 + \\\n 2\nSELECT 3 \\gset\n",
			want: []string{"SELECT 1", "\\set x 1 + \\\n 2", "SELECT 3 "},
		},
		{
			// Leading comments are dropped, comments inside are kept.
			name: "comments",
			src:  "-- lead\n/* block */ SELECT 1 -- tail\n;\n",
			want: []string{"/* block */ SELECT 1 -- tail"},
		},
		{
			// pgbench keeps at most 127 bytes of a SQL command.
			name: "long line",
			src:  "SELECT '" + strings.Repeat("x", 200) + "';\n",
			want: []string{"SELECT '" + strings.Repeat("x", 119)},
		},
		{
			// \r ends the first line too; the meta-command's \r is chomped.
			name: "carriage returns",
			src:  "SELECT 1\r\n;\r\n\\sleep 1\r\n",
			want: []string{"SELECT 1", "\\sleep 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("t.sql", []byte(tt.src), NewSymbols())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, c := range s.Commands {
				got = append(got, c.Text)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Text:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	t.Parallel()
	src := "\\set x 1\n  SELECT 1;  SELECT :x \\gset\n\t\\sleep 1\n"
	s, err := Parse("p.sql", []byte(src), NewSymbols())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.sql:1:1", "p.sql:2:3", "p.sql:2:14", "p.sql:3:2"}
	var got []string
	for _, c := range s.Commands {
		got = append(got, c.Pos.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("positions: got %q, want %q", got, want)
	}
	if s.Name != "p.sql" || s.Weight != 1 {
		t.Errorf("Name, Weight = %q, %d; want p.sql, 1", s.Name, s.Weight)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		wantPos string
		wantMsg string
	}{
		// An empty script is refused, as pgbench refuses it.
		{"empty", "-- nothing\n", "e.sql:1:1", "empty command list"},
		// Unknown meta-commands name themselves.
		{"invalid command", "SELECT 1;\n  \\foo bar\n", "e.sql:2:3", `invalid command \foo`},
		// \endif with no \if.
		{"unmatched endif", "SELECT 1;\n\\endif\n", "e.sql:2:1", `\endif without matching \if`},
		// \else after \else.
		{"else after else", "\\if 1\n\\else\n\\else\n\\endif\n", "e.sql:3:1", `\else after \else`},
		// \elif after \else.
		{"elif after else", "\\if 1\n\\else\n\\elif 0\n\\endif\n", "e.sql:3:1", `\elif after \else`},
		// \elif with no \if.
		{"unmatched elif", "\\elif 1\n", "e.sql:1:1", `\elif without matching \if`},
		// A missing \endif is reported at the \if left open.
		{"missing endif", "\\if 1\n\\if 2\n\\endif\nSELECT 1;\n", "e.sql:1:1", `\if without matching \endif`},
		// \gset must follow SQL.
		{"gset first", "\\gset\n", "e.sql:1:1", `\gset must follow an SQL command`},
		// ... and not a meta-command.
		{"gset after meta", "\\set x 1\n\\gset\n", "e.sql:2:1", `\gset must follow an SQL command`},
		// ... and only once.
		{"double gset", "SELECT 1 \\gset\n\\aset\n", "e.sql:2:1", `\aset must follow an SQL command`},
		// \gset takes at most a prefix.
		{"gset arguments", "SELECT 1 \\gset a b\n", "e.sql:1:18", "too many arguments"},
		// \sleep needs a count.
		{"sleep missing", "\\sleep\n", "e.sql:1:1", "missing argument"},
		// ... an integer one.
		{"sleep not integer", "\\sleep abc\n", "e.sql:1:8", "invalid sleep time"},
		// ... in a known unit.
		{"sleep unit", "SELECT 1;\n\\sleep 10 xs\n", "e.sql:2:11", "unrecognized time unit"},
		// ... glued units are checked too.
		{"sleep glued unit", "\\sleep 10xs\n", "e.sql:1:10", "unrecognized time unit"},
		// ... and nothing more.
		{"sleep extra", "\\sleep 1 ms x\n", "e.sql:1:13", "too many arguments"},
		// \set needs a variable.
		{"set missing", "\\set\n", "e.sql:1:1", "missing argument"},
		// ... a valid name.
		{"set bad name", "\\set 1x 2\n", "e.sql:1:6", "invalid variable name"},
		// Expression errors come from the expression parser, at their column.
		{"bad expression", "SELECT 1;\n\\set x 1 +\n", "e.sql:2:11", "syntax error"},
		// ... also on a continuation line.
		{"bad continued expression", "\\set x 1 + \\\n  (2 *\n", "e.sql:2:7", "syntax error"},
		// \else takes no argument.
		{"else argument", "\\if 1\n\\else x\n\\endif\n", "e.sql:2:7", "unexpected argument"},
		// \shell needs a command.
		{"shell missing", "\\shell\n", "e.sql:1:1", "missing command"},
		// \setshell needs a variable and a command.
		{"setshell missing", "\\setshell v\n", "e.sql:1:1", "missing argument"},
		// Pipelines do not nest.
		{"nested pipeline", "\\startpipeline\n\\startpipeline\n\\endpipeline\n", "e.sql:2:1", "already in pipeline mode"},
		// \endpipeline needs a pipeline.
		{"endpipeline alone", "SELECT 1;\n\\endpipeline\n", "e.sql:2:1", "not in pipeline mode"},
		// \gset cannot be used inside a pipeline.
		{"gset in pipeline", "\\startpipeline\nSELECT 1 \\gset\n\\endpipeline\n", "e.sql:2:10", "not allowed in pipeline mode"},
		// A pipeline left open is reported at its start.
		{"open pipeline", "SELECT 1;\n\\startpipeline\nSELECT 2;\n", "e.sql:2:1", "without \\endpipeline"},
		// Variable names in \shell arguments are checked.
		{"shell bad variable", "\\shell echo :-x\n", "e.sql:1:13", "invalid variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("e.sql", []byte(tt.src), NewSymbols())
			var scriptErr *Error
			if !errors.As(err, &scriptErr) {
				t.Fatalf("Parse error = %v (%T), want *Error", err, err)
			}
			if got := scriptErr.Pos.String(); got != tt.wantPos {
				t.Errorf("position = %s, want %s (error: %v)", got, tt.wantPos, err)
			}
			if !strings.Contains(scriptErr.Msg, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", scriptErr.Msg, tt.wantMsg)
			}
		})
	}
}

func TestCheckExtended(t *testing.T) {
	t.Parallel()
	within := "SELECT " + strings.Repeat(":a,", MaxParams-1) + ":a;\n"
	beyond := "SELECT 1;\nSELECT " + strings.Repeat(":a,", MaxParams) + ":a;\n"
	for _, tt := range []struct {
		src     string
		wantErr string // position of the error, "" for none
	}{
		{within, ""},
		{beyond, "x.sql:2:1"},
	} {
		// Parse accepts both: the simple protocol can send any number.
		s, err := Parse("x.sql", []byte(tt.src), NewSymbols())
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckExtended()
		var scriptErr *Error
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("CheckExtended = %v, want nil", err)
		case tt.wantErr != "" && (!errors.As(err, &scriptErr) || scriptErr.Pos.String() != tt.wantErr):
			t.Errorf("CheckExtended = %v, want an error at %s", err, tt.wantErr)
		}
	}
}

func TestAppendSimple(t *testing.T) {
	t.Parallel()
	syms := NewSymbols()
	s, err := Parse("a.sql", []byte("SELECT :a, ':b', :unset, :a::text, :d;\n"), syms)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewVars(syms)
	a, _ := syms.Lookup("a")
	b, _ := syms.Lookup("b")
	d, _ := syms.Lookup("d")
	vars.SetInt(a, 42)
	vars.SetString(b, "x:y")
	vars.SetValue(d, Value{Type: TypeDouble, Dbl: 1.5})
	got := string(s.Commands[0].SQL.AppendSimple(nil, vars))
	want := "SELECT 42, 'x:y', :unset, 42::text, 1.5;"
	if got != want {
		t.Errorf("AppendSimple = %q, want %q", got, want)
	}
}

func TestAppendSimpleAllocs(t *testing.T) {
	syms := NewSymbols()
	s, err := Builtin("tpcb-like", syms)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewVars(syms)
	for _, name := range []string{"aid", "bid", "tid", "delta"} {
		ref, _ := syms.Lookup(name)
		vars.SetInt(ref, -123456789)
	}
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range s.Commands {
			if c.Kind == KindSQL {
				buf = c.SQL.AppendSimple(buf[:0], vars)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("AppendSimple allocates %.1f times per run, want 0", allocs)
	}
}

func TestDurationMicros(t *testing.T) {
	t.Parallel()
	syms := NewSymbols()
	v := syms.Ref("v")
	tests := []struct {
		name    string
		d       Duration
		set     func(*Vars)
		want    int64
		wantErr bool
	}{
		// Literal seconds, the default unit.
		{"seconds", Duration{Literal: 2, Var: NoVar, Unit: 1_000_000}, nil, 2_000_000, false},
		// Literal milliseconds.
		{"millis", Duration{Literal: 3, Var: NoVar, Unit: 1000}, nil, 3000, false},
		// A variable holding text is read like atoi.
		{"text variable", Duration{Var: v, Unit: 1}, func(x *Vars) { x.SetString(v, "15abc") }, 15, false},
		// A computed integer.
		{"int variable", Duration{Var: v, Unit: 1000}, func(x *Vars) { x.SetInt(v, 7) }, 7000, false},
		// A double is printed, then read up to its point.
		{"double variable", Duration{Var: v, Unit: 1}, func(x *Vars) { x.SetValue(v, Value{Type: TypeDouble, Dbl: 2.9}) }, 2, false},
		// Zero is fine when written as a digit.
		{"zero", Duration{Var: v, Unit: 1}, func(x *Vars) { x.SetString(v, "0") }, 0, false},
		// Text that is no number is an error.
		{"not a number", Duration{Var: v, Unit: 1}, func(x *Vars) { x.SetString(v, "abc") }, 0, true},
		// An unset variable is an error.
		{"unset", Duration{Var: v, Unit: 1}, nil, 0, true},
		// Huge counts saturate instead of wrapping.
		{"saturates", Duration{Literal: 1 << 62, Var: NoVar, Unit: 1_000_000}, nil, 1<<63 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := NewVars(syms)
			if tt.set != nil {
				tt.set(vars)
			}
			got, err := tt.d.Micros(vars)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Micros = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
