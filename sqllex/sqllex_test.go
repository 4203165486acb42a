package sqllex

import (
	"fmt"
	"strings"
	"testing"
)

// tokens lexes all of s, each token as "kind:text".
func tokens(d Dialect, s string) []string {
	var out []string
	for i := 0; i < len(s); {
		t := Next(d, s, i)
		mark := ""
		if t.Unterminated {
			mark = "…"
		}
		out = append(out, fmt.Sprintf("%s%s:%s", t.Kind, mark, Text(s, t)))
		i = t.End
	}
	return out
}

func TestNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Dialect
		src  string
		want string // tokens joined by " | ", spaces left out
	}{
		// PostgreSQL's comments nest; MySQL's end at the first */.
		{"pg nested comment", PostgreSQL, "/* a /* b */ c */x", "block comment:/* a /* b */ c */ | word:x"},
		{"mysql flat comment", MySQL, "/* a /* b */ c */", "block comment:/* a /* b */ | word:c | punctuation:* | punctuation:/"},
		{"unterminated comment", PostgreSQL, "/* a", "block comment…:/* a"},
		// -- needs a following blank in MySQL, not in PostgreSQL.
		{"pg dash comment", PostgreSQL, "1--1\n", "number:1 | line comment:--1"},
		{"mysql minus minus", MySQL, "1--1", "number:1 | punctuation:- | punctuation:- | number:1"},
		{"mysql dash comment", MySQL, "1-- x", "number:1 | line comment:-- x"},
		{"mysql dash at end", MySQL, "--", "line comment:--"},
		{"mysql hash comment", MySQL, "# a;\nx", "line comment:# a; | word:x"},
		{"pg hash is punctuation", PostgreSQL, "#x", "punctuation:# | word:x"},
		// Backslashes escape in MySQL's strings and PostgreSQL's E'…', not in '…'.
		{"mysql backslash quote", MySQL, `'it\'s;'x`, `string:'it\'s;' | word:x`},
		{"pg standard string", PostgreSQL, `'a\'x`, `string:'a\' | word:x`},
		{"pg escape string", PostgreSQL, `E'it\'s'x`, `string:E'it\'s' | word:x`},
		{"pg scs off", PostgreSQL | BackslashEscapes, `'it\'s'x`, `string:'it\'s' | word:x`},
		{"doubled quote", PostgreSQL, `'a''b'`, `string:'a''b'`},
		// "…" is a name in PostgreSQL, a string in MySQL; `…` a name in MySQL.
		{"pg double quotes", PostgreSQL, `"a""b"`, `quoted name:"a""b"`},
		{"mysql double quotes", MySQL, `"a\"b"`, `string:"a\"b"`},
		{"mysql backquotes", MySQL, "`a``b`", "quoted name:`a``b`"},
		{"pg backquote", PostgreSQL, "`a`", "punctuation:` | word:a | punctuation:`"},
		// Dollar quotes, parameters and the lone $.
		{"dollar quote", PostgreSQL, "$f$ a; $$ b $f$;", "dollar string:$f$ a; $$ b $f$ | punctuation:;"},
		{"unterminated dollar", PostgreSQL, "$$ a", "dollar string…:$$ a"},
		{"parameter", PostgreSQL, "$12+$1abc", "parameter:$12 | punctuation:+ | parameter:$1abc"},
		{"lone dollar", PostgreSQL, "$ x", "punctuation:$ | word:x"},
		{"mysql dollar word", MySQL, "$a$ b", "word:$a$ | word:b"},
		// Prefixed strings and psql's failed U&.
		{"bit string", PostgreSQL, "B'01'", "string:B'01'"},
		{"unicode name", PostgreSQL, `U&"a"`, `quoted name:U&"a"`},
		{"failed unicode", PostgreSQL, "U&x", "punctuation:U | punctuation:& | word:x"},
		{"number junk", PostgreSQL, "1E'x'", "number:1E | string:'x'"},
		{"number", PostgreSQL, "1.5e-3..2", "number:1.5e-3 | punctuation:. | punctuation:. | number:2"},
		{"mysql digit word", MySQL, "1abc 12", "number:1abc | number:12"},
		// 'a' newline 'b' is one string in PostgreSQL.
		{"continued string", PostgreSQL, "'a' -- c\n 'b'", "string:'a' -- c\n 'b'"},
		{"not continued", PostgreSQL, "'a' 'b'", "string:'a' | string:'b'"},
		// \v is whitespace only in MySQL.
		{"vertical tab", PostgreSQL, "\v", "punctuation:\v"},
		{"mysql vertical tab", MySQL, "\v", ""},
	}
	for _, tt := range tests {
		var got []string
		for _, tok := range tokens(tt.d, tt.src) {
			if !strings.HasPrefix(tok, "space:") {
				got = append(got, tok)
			}
		}
		if g := strings.Join(got, " | "); g != tt.want {
			t.Errorf("%s: %q lexes as\n  %s\nwant\n  %s", tt.name, tt.src, g, tt.want)
		}
	}
}

func TestUnquote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d          Dialect
		text, want string
	}{
		{PostgreSQL, `'a''b'`, `a'b`},
		{PostgreSQL, `'a\n'`, `a\n`},   // standard strings keep backslashes
		{PostgreSQL, `E'a\'b'`, `a'b`}, // E'…' takes the escaped byte as it is
		{PostgreSQL, `"A""b"`, `A"b`},
		{PostgreSQL, "'a'\n  'b'", "ab"}, // a continued string
		{PostgreSQL, `'open`, `open`},
		{MySQL, `"a\"b"`, `a"b`},
		{MySQL, "`a``b`", "a`b"},
		{MySQL, "`a\\`", "a\\"}, // no escapes in names
	}
	for _, tt := range tests {
		if got := Unquote(tt.d, tt.text); got != tt.want {
			t.Errorf("Unquote(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestExecutableOpening(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"/*!50001 x*/": 8, "/*M! x */": 4, "/*!1234567": 9, "/* x */": 0, "/*": 0} {
		if got := ExecutableOpening(s); got != want {
			t.Errorf("ExecutableOpening(%q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzNext checks that tokens tile any text in every dialect, that the
// string and byte forms agree, and that a closed quote ends with a quote.
func FuzzNext(f *testing.F) {
	for _, s := range []string{"SELECT 'a''b', E'\\'' FROM \"t\" -- c\n;", "$f$ x $f$ $1 $", "/* /* */ */ # x\n`a` \"b\\\"\"",
		"'a'\n'b'", "U&'x' U&\"y\" U&z B'1' 1e5x", "--\x01", "/*!50001 SET */"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range []Dialect{PostgreSQL, MySQL, PostgreSQL | BackslashEscapes, 0} {
			b := []byte(s)
			for i := 0; i < len(s); {
				tok := Next(d, s, i)
				if tok.Start != i || tok.End <= i || tok.End > len(s) {
					t.Fatalf("dialect %b: token %+v at %d of %q", d, tok, i, s)
				}
				if bt := Next(d, b, i); bt != tok {
					t.Fatalf("dialect %b: %q at %d: string gives %+v, bytes %+v", d, s, i, tok, bt)
				}
				text := s[tok.Start:tok.End]
				if (tok.Kind == String || tok.Kind == QuotedName) && !tok.Unterminated {
					if last := text[len(text)-1]; last != '\'' && last != '"' && last != '`' {
						t.Fatalf("dialect %b: closed %s %q does not end with a quote", d, tok.Kind, text)
					}
					_ = Unquote(d, text)
				}
				i = tok.End
			}
		}
	})
}
