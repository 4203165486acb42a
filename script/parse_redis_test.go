package script

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// summarizeRedis renders a parsed Redis script one command a line: a
// Redis command as its arguments ("{id}" for a variable), the other
// commands as summarize renders them.
func summarizeRedis(s *Script, syms *Symbols) []string {
	var out []string
	for _, c := range s.Commands {
		if c.Kind != KindRedis {
			out = append(out, summarize(&Script{Commands: []*Command{c}}, syms)...)
			continue
		}
		var b strings.Builder
		b.WriteString("redis")
		for _, a := range c.Redis.Args {
			b.WriteString(" ")
			if a.Parts == nil {
				fmt.Fprintf(&b, "%q", a.Literal)
				continue
			}
			var arg strings.Builder
			for _, part := range a.Parts {
				if part.Var != NoVar {
					fmt.Fprintf(&arg, "{%s}", syms.Name(part.Var))
				} else {
					arg.WriteString(part.Text)
				}
			}
			fmt.Fprintf(&b, "%q", arg.String())
		}
		if c.Redis.Gset != nil {
			b.WriteString(" gset(")
			for i, r := range c.Redis.Gset {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(syms.Name(r))
			}
			b.WriteString(")")
		}
		out = append(out, b.String())
	}
	return out
}

func TestParseRedisConstructs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			// One command, split on spaces.
			name: "plain command",
			src:  "SET key value\n",
			want: []string{`redis "SET" "key" "value"`},
		},
		{
			// The examples: a doubled colon after a name is a
			// literal colon and a variable; a single one is literal.
			name: "colons in keys",
			src:  "SET user::id :payload\nINCRBY chat::cid:members 1\n",
			want: []string{
				`redis "SET" "user:{id}" "{payload}"`,
				`redis "INCRBY" "chat:{cid}:members" "1"`,
			},
		},
		{
			// The common key shape needs no escaping at all.
			name: "literal colons",
			src:  "GET chat:42:members\nGET a:b:c: :\n",
			want: []string{`redis "GET" "chat:42:members"`, `redis "GET" "a:b:c:" ":"`},
		},
		{
			// Two variables side by side: the second colon is doubled.
			name: "adjacent variables",
			src:  "SET :a::b {:c}x:d\n",
			want: []string{`redis "SET" "{a}:{b}" "{{c}}x:d"`},
		},
		{
			// \: and single quotes keep a colon literal where it would
			// start a variable; double quotes substitute.
			name: "escaping a colon",
			src:  "SET \\:lit ':also' \":sub\" \"\\:no\"\n",
			want: []string{`redis "SET" ":lit" ":also" "{sub}" ":no"`},
		},
		{
			// redis-cli's quoting: spaces, escapes, empty arguments.
			name: "quotes",
			src:  "SET \"a b\" \"x\\n\\t\\x41\\\"\\\\\" 'it\\'s \\n' \"\"\n",
			want: []string{`redis "SET" "a b" "x\n\tA\"\\" "it's \\n" ""`},
		},
		{
			// A quoted part can follow unquoted text in one argument.
			name: "quote inside a word",
			src:  "SET key\"with space\" v\n",
			want: []string{`redis "SET" "keywith space" "v"`},
		},
		{
			// Comments, blank lines, CRLF and indentation are skipped.
			name: "comments and blank lines",
			src:  "# a comment\n\n  -- another\r\n\tPING\r\n",
			want: []string{`redis "PING"`},
		},
		{
			// Meta-commands work as in pgbench, and \gset names its
			// variables, on the next line or the same one.
			name: "meta-commands",
			src: "\\set id random(1, 10)\n\\if :id > 5\nGET user::id\n\\gset v\n\\else\nHMGET h a b \\gset x y\n\\endif\n" +
				"\\sleep 1 ms\n\\startpipeline\nSET a 1\nGET a\n\\endpipeline\n\\shell true\n",
			want: []string{
				"set id",
				"if next=3 end=5",
				`redis "GET" "user:{id}" gset(v)`,
				"else end=5",
				`redis "HMGET" "h" "a" "b" gset(x,y)`,
				"endif",
				"sleep 1 x1000",
				"startpipeline",
				`redis "SET" "a" "1"`,
				`redis "GET" "a"`,
				"endpipeline",
				`shell "true"`,
			},
		},
		{
			// The last line needs no newline; a lone backslash is a no-op.
			name: "no final newline",
			src:  "\\\nPING",
			want: []string{`redis "PING"`},
		},
		{
			// A backslash inside a word, or not before a letter, is text.
			name: "literal backslashes",
			src:  "SET a\\b \\1\n",
			want: []string{`redis "SET" "a\\b" "\\1"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			syms := NewSymbols()
			s, err := ParseDialect("t.redis", []byte(tc.src), syms, Redis)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := summarizeRedis(s, syms); !slices.Equal(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestParseRedisErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // the whole error: file:line:col: message
	}{
		{"empty", "# nothing\n", "t.redis:1:1: empty command list for script"},
		{"unterminated double quote", "PING\nSET k \"abc\n", "t.redis:2:7: unterminated quoted string: the double quote opened here is not closed on its line"},
		{"unterminated single quote", "SET k 'abc", "t.redis:1:7: unterminated quoted string: the single quote opened here is not closed on its line"},
		{"text after a closing quote", "SET \"a\"b c\n", "t.redis:1:8: a closing quote must be followed by a space or the end of the line (as in redis-cli)"},
		{"gset without a name", "GET k\n\\gset\n", `t.redis:2:1: missing variable name in command "gset": a Redis reply has no column names, so \gset names the variable to store it in (one per element of an array reply)`},
		{"gset first", "\\gset v\n", `t.redis:1:1: \gset must follow a Redis command`},
		{"gset after a meta-command", "\\set x 1\n\\gset v\n", `t.redis:2:1: \gset must follow a Redis command (the command before it is "\\set x 1" at line 1)`},
		{"gset twice", "GET k \\gset a\n\\gset b\n", `t.redis:2:1: \gset must follow a Redis command ("GET k" already has a \gset)`},
		{"gset bad name", "GET k\n\\gset 1x\n", `t.redis:2:7: invalid variable name "1x" in command "gset"`},
		{"aset", "GET k\n\\aset\n", `t.redis:2:1: \aset has no meaning in a Redis script: use \gset with a variable for each element of the reply`},
		{"syncpipeline", "\\startpipeline\nGET k\n\\syncpipeline\n", `t.redis:3:1: \syncpipeline has no meaning in a Redis script: a pipeline's replies are all read at \endpipeline`},
		{"gset in a pipeline", "\\startpipeline\nGET k\n\\gset v\n\\endpipeline\n", `t.redis:3:1: \gset is not allowed in pipeline mode (pipeline started at line 1): its reply is read only at \endpipeline`},
		{"open pipeline", "\\startpipeline\nGET k\n", `t.redis:1:1: \startpipeline without \endpipeline (the script ends with the pipeline open)`},
		{"unknown meta-command", "GET k \\foo\n", `t.redis:1:7: invalid command \foo`},
		{"bad expression", "\\set x 1 +\n", `t.redis:1:11: syntax error at end of expression in command "set"`},
		{"unmatched if", "\\if 1\nPING\n", `t.redis:1:1: \if without matching \endif`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDialect("t.redis", []byte(tc.src), NewSymbols(), Redis)
			if err == nil {
				t.Fatalf("parsed without error, want %q", tc.want)
			}
			var scriptErr *Error
			if !errors.As(err, &scriptErr) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tc.want)
			}
		})
	}
}

func TestRedisArgAppend(t *testing.T) {
	syms := NewSymbols()
	s, err := ParseDialect("t.redis", []byte("SET user::id:name :v 'lit'\n"), syms, Redis)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewVars(syms)
	args := s.Commands[0].Redis.Args
	id, _ := syms.Lookup("id")
	vars.SetInt(id, 42)

	// An unset variable is reported, by slot.
	_, unset := args[2].Append(nil, vars)
	if got := syms.Name(unset); got != "v" {
		t.Fatalf("unset = %q, want v", got)
	}
	v, _ := syms.Lookup("v")
	vars.SetString(v, "payload")
	var got []string
	for i := range args {
		b, unset := args[i].Append(nil, vars)
		if unset != NoVar {
			t.Fatalf("arg %d: unset %s", i, syms.Name(unset))
		}
		got = append(got, string(b))
	}
	if want := []string{"SET", "user:42:name", "payload", "lit"}; !slices.Equal(got, want) {
		t.Fatalf("args %q, want %q", got, want)
	}
	if name := s.Commands[0].Redis.Name; name != "SET" {
		t.Fatalf("Name = %q", name)
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		for i := range args {
			buf, _ = args[i].Append(buf[:0], vars)
		}
	}); n != 0 {
		t.Fatalf("Append allocates %.1f times per command", n)
	}
}

// A script that is not text is refused where the junk starts, whatever
// the dialect; a Redis command's name must look like one.
func TestParseRefusesJunk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dialect Dialect
		src     string
		want    string // the error's start; "" parses
	}{
		// A NUL byte: a binary file named by mistake.
		{"nul-redis", Redis, "GET k\nSET k \x00v\n", "j:2:7: a NUL byte"},
		{"nul-postgres", PostgreSQL, "SELECT 1;\n\x01\x00;\n", "j:2:2: a NUL byte"},
		{"nul-mysql", MySQL, "\x00", "j:1:1: a NUL byte"},
		// Bytes that name no command.
		{"binary-name", Redis, "PING\n  \x01\xff\xfeGET k\n", `j:2:3: "\x01\xff\xfeGET" is not a Redis command name`},
		{"quoted-empty-name", Redis, "\"\" k\n", `j:1:1: "" is not a Redis command name`},
		// What Redis names commands with parses; a variable may name one.
		{"module", Redis, "JSON.SET firedrill:k $ 1\nFT._LIST\n", ""},
		{"variable", Redis, "\\set c 1\n:c k\n", ""},
		// Binary values are written as escapes.
		{"escaped-nul", Redis, "SET k \"\\x00\\xff\"\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDialect("j", []byte(tt.src), NewSymbols(), tt.dialect)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%q: %v", tt.src, err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("%q: error %v, want prefix %s", tt.src, err, tt.want)
			}
		})
	}
}
