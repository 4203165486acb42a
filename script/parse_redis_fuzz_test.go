package script

import (
	"bytes"
	"errors"
	"testing"
)

// redisFuzzSeeds reach every path of the Redis dialect's lexer.
var redisFuzzSeeds = []string{
	"SET user::id :payload\nINCRBY chat::cid:members 1\n",
	"SET \"a b\" \"x\\n\\t\\x41\\\"\\\\:v\\:\" 'it\\'s :no' \"\"\n",
	"GET chat:42:members \\gset v\n\\if :v = ''\nSET k 1\n\\else\nHMGET h a b\n\\gset x y\n\\endif\n",
	"\\set n random(1, 10)\n\\startpipeline\nSET a :n\nGET a\n\\endpipeline\n\\sleep :n ms\n",
	"# comment\r\n-- comment\r\n\tPING\r\n",
	"SET \"unterminated\nSET 'x\n",
	"SET \"a\"b\n\\gset\n\\aset\n\\syncpipeline\n\\foo\n",
	"\\\nPING",
	"SET a\\b \\1 \\:x {:y}z\n",
	"\\shell echo :x ::y\n\\setshell v echo 1\n",
}

func FuzzParseRedis(f *testing.F) {
	for _, s := range redisFuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		syms := NewSymbols()
		s, err := ParseDialect("fuzz.redis", src, syms, Redis)
		if err != nil {
			var scriptErr *Error
			if !errors.As(err, &scriptErr) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if p := scriptErr.Pos; p.File != "fuzz.redis" || p.Line < 1 || p.Col < 1 {
				t.Fatalf("error position %v out of range: %v", p, err)
			}
			return
		}
		if len(s.Commands) == 0 {
			t.Fatal("parsed with no commands")
		}
		vars := NewVars(syms)
		for r := VarRef(0); int(r) < syms.Len(); r++ {
			vars.SetInt(r, int64(r))
		}
		for i, c := range s.Commands {
			if c.Pos.Line < 1 || c.Pos.Col < 1 {
				t.Fatalf("command %d at %v", i, c.Pos)
			}
			switch c.Kind {
			case KindSQL:
				t.Fatalf("command %d is SQL in a Redis script", i)
			case KindSyncPipeline:
				t.Fatalf("command %d is \\syncpipeline in a Redis script", i)
			case KindRedis:
				if len(c.Redis.Args) == 0 {
					t.Fatalf("command %d (%q) has no arguments", i, c.Text)
				}
				if c.Text == "" || bytes.ContainsAny([]byte(c.Text), "\n") {
					t.Fatalf("command %d: text %q", i, c.Text)
				}
				// With every variable set, every argument can be sent.
				for j := range c.Redis.Args {
					if _, unset := c.Redis.Args[j].Append(nil, vars); unset != NoVar {
						t.Fatalf("command %d arg %d: variable %s unset", i, j, syms.Name(unset))
					}
				}
			}
		}
	})
}
