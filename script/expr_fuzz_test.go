package script

import (
	"errors"
	"io"
	"testing"
)

// exprFuzzSeeds are representative expressions for both fuzzers' corpus.
var exprFuzzSeeds = []string{
	"random(1, 100000 * :scale)",
	"random_gaussian(1, 10, 2.5) + random_exponential(1, 10, 3.0) * random_zipfian(1, 10, 1.5)",
	"permute(:i, 1000) + hash(:i) - hash_fnv1a(:i, 7) # hash_murmur2(1, 2)",
	"case when :i > 5 and not :t then abs(-:d) when :n is null then 1 else least(:i, 3, :d) end",
	"greatest(1, 2.5, :s) <> pi() or :n isnull or :x notnull",
	"-9223372036854775808 / -1",
	"1.5e3 % 2 << 3 >> 1 & ~7 | 9 # 3",
	"int(sqrt(2) * exp(1) / ln(10)) = pow(2, 10) is not true",
	"debug(double(:i) + mod(7, -3))",
	"(1 +\\\n 2) * 3",
	"1 < 2 < 3",
	"f(,1)",
	"9223372036854775808",
	"1e400",
	":é + 1",
}

func FuzzParseExpr(f *testing.F) {
	for _, s := range exprFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		at := Pos{"f.sql", 2, 7}
		e, err := ParseExpr(src, at, NewSymbols())
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("ParseExpr(%q) error %T, want *Error", src, err)
			}
			if perr.Pos.File != at.File || perr.Pos.Line < at.Line || perr.Pos.Col < 1 {
				t.Fatalf("ParseExpr(%q) error position %v", src, perr.Pos)
			}
			return
		}
		if e == nil {
			t.Fatalf("ParseExpr(%q) = nil, nil", src)
		}
		_ = exprString(e)
	})
}

func FuzzEvalExpr(f *testing.F) {
	for _, s := range exprFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		syms := NewSymbols()
		e, err := ParseExpr(src, Pos{"f.sql", 1, 1}, syms)
		if err != nil {
			return
		}
		vars := NewVars(syms)
		vars.SetInt(syms.Ref(VarScale), 3)
		vars.SetInt(syms.Ref(VarDefaultSeed), -77)
		vars.SetInt(syms.Ref("i"), 7)
		vars.SetValue(syms.Ref("d"), doubleValue(-2.5))
		vars.SetValue(syms.Ref("t"), boolValue(true))
		vars.SetValue(syms.Ref("n"), Value{Type: TypeNull})
		vars.SetString(syms.Ref("s"), "1e3")
		vars.SetString(syms.Ref("x"), "nonsense")
		env := &Env{Vars: vars, Rand: NewRand(42), Debug: io.Discard}
		v, err := e.Eval(env)
		if err == nil {
			_, _ = v.Truth()
			_ = v.AppendText(nil)
		}
	})
}
