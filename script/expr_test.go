package script

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseExprPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
	}{
		// * binds tighter than +, both left-associative.
		{"1 + 2 * 3", "(+ i:1 (* i:2 i:3))"},
		{"1 - 2 - 3", "(- (- i:1 i:2) i:3)"},
		{"8 / 4 % 3", "(mod (/ i:8 i:4) i:3)"},
		// Unary minus is 0 - x and binds tighter than *.
		{"-2 * 3", "(* (- i:0 i:2) i:3)"},
		{"- - 5", "(- i:0 (- i:0 i:5))"},
		// Unary plus disappears.
		{"+5", "i:5"},
		// The most negative bigint is a constant only right after a minus.
		{"-9223372036854775808", "i:-9223372036854775808"},
		{"- 9223372036854775808 * 2", "(* i:-9223372036854775808 i:2)"},
		// ~x is (-1 # x) and takes its operand at the bitwise level.
		{"~1 + 2", "(# i:-1 (+ i:1 i:2))"},
		{"~1 & 2", "(& (# i:-1 i:1) i:2)"},
		{"~1 = 2", "(= (# i:-1 i:1) i:2)"},
		// The bitwise operators share one left-associative level below +.
		{"1 | 2 & 3", "(& (| i:1 i:2) i:3)"},
		{"1 << 2 + 3", "(<< i:1 (+ i:2 i:3))"},
		{"1 # 2 >> 3", "(>> (# i:1 i:2) i:3)"},
		// Comparisons sit below the bitwise operators; > and >= swap operands.
		{"1 & 2 = 3", "(= (& i:1 i:2) i:3)"},
		{"1 > 2", "(< i:2 i:1)"},
		{"1 >= 2", "(<= i:2 i:1)"},
		{"1 != 2", "(<> i:1 i:2)"},
		{"1 <> 2", "(<> i:1 i:2)"},
		// NOT binds looser than comparisons and IS, tighter than AND.
		{"NOT 1 = 2", "(not (= i:1 i:2))"},
		{"not true and false", "(and (not true) false)"},
		{"NOT :a IS NULL", "(not (is :a NULL))"},
		// A prefix operator keeps its own precedence inside a tighter context.
		{"1 * NOT 2 + 3", "(* i:1 (not (+ i:2 i:3)))"},
		{"1 * NOT 2 AND 3", "(and (* i:1 (not i:2)) i:3)"},
		// AND binds tighter than OR.
		{"true or false and false", "(or true (and false false))"},
		{"true and false or false", "(or (and true false) false)"},
		// IS and its spellings are postfix operators above NOT.
		{":x isnull", "(is :x NULL)"},
		{":x NotNull", "(not (is :x NULL))"},
		{":x is not null", "(not (is :x NULL))"},
		{":x is true", "(is :x true)"},
		{":x IS NOT FALSE", "(not (is :x false))"},
		{":x is null is null", "(is (is :x NULL) NULL)"},
		{"1 = 2 is null", "(is (= i:1 i:2) NULL)"},
		{":x is null = true", "(= (is :x NULL) true)"},
		{"1 + 2 is null", "(is (+ i:1 i:2) NULL)"},
		// Literals.
		{"1.5e3", "d:1500"},
		{".5", "d:0.5"},
		{"1.", "d:1"},
		{"1E-2", "d:0.01"},
		{"NULL", "NULL"},
		{"TRUE", "true"},
		{"False", "false"},
		{"9223372036854775807", "i:9223372036854775807"},
		// Function names are case-insensitive; hash and permute get :default_seed.
		{"ABS(-1)", "(abs (- i:0 i:1))"},
		{"hash(1)", "(hash_murmur2 i:1 :default_seed)"},
		{"hash_fnv1a(1, 2)", "(hash_fnv1a i:1 i:2)"},
		{"permute(1, 10)", "(permute i:1 i:10 :default_seed)"},
		{"mod(7, 3)", "(mod i:7 i:3)"},
		{"power(2, 3)", "(pow i:2 i:3)"},
		{"pi()", "(pi)"},
		// The grammar's elist allows one leading comma.
		{"abs(, -1)", "(abs (- i:0 i:1))"},
		{"least(1, 2.5, :y)", "(least i:1 d:2.5 :y)"},
		{"random(1, 100000 * :scale)", "(random i:1 (* i:100000 :scale))"},
		// CASE, with and without ELSE.
		{"case when :x then 1 end", "(case :x i:1 else NULL)"},
		{"CASE WHEN 1 THEN 2 WHEN 3 THEN 4 ELSE 5 END + 1", "(+ (case i:1 i:2 i:3 i:4 else i:5) i:1)"},
		// Variables may start with a digit; a backslash-newline is white space.
		{":1x + :_y", "(+ :1x :_y)"},
		{"1 +\\\n 2", "(+ i:1 i:2)"},
		{"(1 + 2) * 3", "(* (+ i:1 i:2) i:3)"},
		// Keywords are whole words: "andy" would be a function name.
		{"1 = 1 AND(true)", "(and (= i:1 i:1) true)"},
	}
	for _, tt := range tests {
		e, err := ParseExpr(tt.src, Pos{"t.sql", 1, 1}, NewSymbols())
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tt.src, err)
			continue
		}
		if got := exprString(e); got != tt.want {
			t.Errorf("ParseExpr(%q) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestParseExprErrors(t *testing.T) {
	t.Parallel()
	at := Pos{"x.sql", 3, 10}
	tests := []struct {
		src     string
		line    int
		col     int
		message string
	}{
		// Input ends after an operator: the error is at the end.
		{"1 +", 3, 13, "syntax error at end of expression"},
		// An unknown character.
		{"1 + $", 3, 14, `unexpected character "$"`},
		// pgbench has neither == nor a lone !.
		{"1 == 1", 3, 13, `syntax error at "="`},
		{"!true", 3, 10, `unexpected character "!"`},
		// Comparisons do not chain.
		{"1 < 2 < 3", 3, 16, `syntax error at "<"`},
		{"1 = 2 <> 3", 3, 16, `syntax error at "<>"`},
		// Integer literals must fit in an int64; 2^63 only after a minus.
		{"99999999999999999999", 3, 10, "bigint constant overflow"},
		{"9223372036854775808", 3, 10, `syntax error at "9223372036854775808"`},
		{"1 - 9223372036854775808", 3, 14, `syntax error at "9223372036854775808"`},
		{"-(9223372036854775808)", 3, 12, `syntax error at "9223372036854775808"`},
		// Doubles that overflow or underflow, as strtod's ERANGE.
		{"1e400", 3, 10, "double constant overflow"},
		{"1e-310", 3, 10, "double constant overflow"},
		// Function names and arity.
		{"foo(1)", 3, 10, `unexpected function name "foo"`},
		{"1 + abs(1, 2)", 3, 14, "unexpected number of arguments (abs)"},
		{"hash()", 3, 10, "unexpected number of arguments (hash)"},
		{"hash(1, 2, 3)", 3, 10, "unexpected number of arguments (hash)"},
		{"permute(1)", 3, 10, "unexpected number of arguments (permute)"},
		{"least()", 3, 10, "at least one argument expected (least)"},
		{"pi", 3, 12, "syntax error at end of expression"},
		{"random(1,)", 3, 19, `syntax error at ")"`},
		{"random(,)", 3, 18, `syntax error at ")"`},
		{"random(,,1)", 3, 18, `syntax error at ","`},
		// Errors on a continuation line count lines and columns from there.
		{"1 +\\\n  2 +\\\n )", 5, 2, `syntax error at ")"`},
		// A bare newline ends the expression.
		{"1 +\n2", 3, 13, "syntax error at end of line"},
		{"1\n+ 2", 4, 1, "expression continues after the end of the line"},
		// IS takes only NULL, TRUE or FALSE.
		{"1 is 1", 3, 15, `syntax error at "1"`},
		{"case 1 end", 3, 15, `syntax error at "1"`},
		{"case when 1 then 2", 3, 28, "syntax error at end of expression"},
		{": x", 3, 10, `unexpected character ":"`},
		{"1e", 3, 11, `syntax error at "e"`},
		{"(1", 3, 12, "syntax error at end of expression"},
		{"", 3, 10, "syntax error at end of expression"},
		// A bare word is a function name.
		{"NOT a IS NULL", 3, 14, `unexpected function name "a"`},
	}
	for _, tt := range tests {
		_, err := ParseExpr(tt.src, at, NewSymbols())
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("ParseExpr(%q) error = %v, want *Error", tt.src, err)
			continue
		}
		if perr.Pos.File != "x.sql" || perr.Pos.Line != tt.line || perr.Pos.Col != tt.col || !strings.Contains(perr.Msg, tt.message) {
			t.Errorf("ParseExpr(%q) error = %v, want x.sql:%d:%d: …%s…", tt.src, err, tt.line, tt.col, tt.message)
		}
	}
}

// exprEvalString parses and evaluates src with a few variables set, returning
// the debug()-style rendering of the value or the error text.
func exprEvalString(t *testing.T, src string) string {
	t.Helper()
	syms := NewSymbols()
	e, err := ParseExpr(src, Pos{"t.sql", 1, 1}, syms)
	if err != nil {
		return "parse error: " + err.Error()
	}
	env := exprTestEnv(syms)
	v, err := e.Eval(env)
	if err != nil {
		return "error: " + err.Error()
	}
	return exprRender(v)
}

func exprTestEnv(syms *Symbols) *Env {
	vars := NewVars(syms)
	vars.SetInt(syms.Ref(VarScale), 10)
	vars.SetInt(syms.Ref(VarDefaultSeed), 12345)
	vars.SetInt(syms.Ref("i"), 7)
	vars.SetValue(syms.Ref("d"), doubleValue(2.5))
	vars.SetValue(syms.Ref("n"), Value{Type: TypeNull})
	vars.SetValue(syms.Ref("t"), boolValue(true))
	vars.SetString(syms.Ref("s_int"), " -42")
	vars.SetString(syms.Ref("s_dbl"), "1.5e2")
	vars.SetString(syms.Ref("s_yes"), "Y")
	vars.SetString(syms.Ref("s_bad"), "12 ")
	vars.SetString(syms.Ref("s_null"), "NULL")
	return &Env{Vars: vars, Rand: NewRand(1), Debug: new(bytes.Buffer)}
}

// exprRender prints a value as pgbench's debug() does, without the prefix.
func exprRender(v Value) string {
	switch v.Type {
	case TypeNull:
		return "null"
	case TypeBool:
		return "boolean " + string(v.AppendText(nil))
	case TypeInt:
		return "int " + string(v.AppendText(nil))
	default:
		return "double " + string(v.AppendText(nil))
	}
}

func TestEvalExpr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
	}{
		// Integer arithmetic truncates toward zero; % takes the dividend's sign.
		{"7 / 2", "int 3"},
		{"-7 / 2", "int -3"},
		{"-7 % 3", "int -1"},
		{"7 % -3", "int 1"},
		{"mod(-9223372036854775808, -1)", "int 0"},
		// A double on either side makes a double, except for %.
		{"7 / 2.0", "double 3.5"},
		{"7.5 % 2", "int 0"}, // rint(7.5) = 8
		{"1 + 0.5", "double 1.5"},
		{"0.1 + 0.2", "double 0.3"},
		{"1.0 / 0", "double Infinity"},
		{"-1.0 / 0", "double -Infinity"},
		{"0.0 / 0", "double NaN"},
		{"0.0 * -1", "double -0"},
		{"1e20", "double 1e+20"},
		{"123456789012345678.0", "double 1.23456789012346e+17"},
		{"1e-5", "double 1e-05"},
		// Overflow and division by zero are errors, in pgbench's words.
		{"9223372036854775807 + 1", "error: bigint add out of range"},
		{"-9223372036854775808 - 1", "error: bigint sub out of range"},
		{"-(-9223372036854775808)", "error: bigint sub out of range"},
		{"4611686018427387904 * 2", "error: bigint mul out of range"},
		{"-4611686018427387904 * 2", "int -9223372036854775808"},
		{"-9223372036854775808 * -1", "error: bigint mul out of range"},
		{"-9223372036854775808 / -1", "error: bigint div out of range"},
		{"1 / 0", "error: division by zero"},
		{"1 % 0", "error: division by zero"},
		{"1.5 % 0", "error: division by zero"},
		// Comparisons, with int/double promotion.
		{"1 = 1.0", "boolean true"},
		{"2 > 1", "boolean true"},
		{"2 >= 3", "boolean false"},
		{"1 <> 1", "boolean false"},
		{"true = true", "error: cannot coerce boolean to int"},
		{"true = 1.0", "error: cannot coerce boolean to double"},
		// Bitwise operators; shifts use the count modulo 64 as pgbench on x86-64.
		{"5 & 3", "int 1"},
		{"5 | 3", "int 7"},
		{"5 # 3", "int 6"},
		{"~5", "int -6"},
		{"1 << 65", "int 2"},
		{"-8 >> 66", "int -2"},
		{"-8 >> 1", "int -4"},
		{"1.6 & 3", "int 2"},
		// NULL propagates through functions and operators.
		{"1 + null", "null"},
		{"abs(:n)", "null"},
		{"null = null", "null"},
		{"not null", "null"},
		{"least(1, null)", "null"},
		// AND/OR are lazy and NULL on the left wins.
		{"null and 1/0", "null"},
		{"false and 1/0", "boolean false"},
		{"true or 1/0", "boolean true"},
		{"true and null", "null"},
		{"false or null", "null"},
		{"true and false", "boolean false"},
		{"1 and true", "error: cannot coerce int to boolean"},
		{"true and 1", "error: cannot coerce int to boolean"},
		{"not 1", "error: cannot coerce int to boolean"},
		// IS compares type and boolean value.
		{"null is null", "boolean true"},
		{":n isnull", "boolean true"},
		{"1 is null", "boolean false"},
		{"1 notnull", "boolean true"},
		{"true is true", "boolean true"},
		{"1 is true", "boolean false"},
		{"false is not true", "boolean true"},
		// CASE uses truth values, so numbers work as conditions.
		{"case when 0 then 1 when 2 then 3 end", "int 3"},
		{"case when null then 1 else 2 end", "int 2"},
		{"case when false then 1 end", "null"},
		{"case when true then 1 else 1/0 end", "int 1"},
		{"case when 0.0 then 1 else 2 end", "int 2"},
		// Functions with mixed types.
		{"abs(-3)", "int 3"},
		{"abs(-3.5)", "double 3.5"},
		{"abs(-9223372036854775808)", "int -9223372036854775808"},
		{"abs(true)", "error: cannot coerce boolean to double"}, // pgbench: undefined behaviour
		{"least(3, 1.5, 2)", "double 1.5"},
		{"greatest(3, 1, 2)", "int 3"},
		{"greatest(1, true)", "error: cannot coerce boolean to int"},
		{"least(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)", "int 1"},
		{"least(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)", "error: too many function arguments, maximum is 16"},
		{"int(2.5)", "int 2"},
		{"int(3.5)", "int 4"},
		{"int(-2.7)", "int -3"},
		{"int(1e19)", "error: double to int overflow for 10000000000000000000.000000"},
		{"int(0.0/0)", "error: double to int overflow for NaN"},
		{"int(true)", "error: cannot coerce boolean to int"},
		{"double(3)", "double 3"},
		{"sqrt(2)", "double 1.4142135623731"},
		{"sqrt(-1)", "double NaN"},
		{"ln(0)", "double -Infinity"},
		{"exp(1)", "double 2.71828182845905"},
		{"pow(2, 10)", "double 1024"},
		{"pi()", "double 3.14159265358979"},
		// Hashes and permute are deterministic for a given seed.
		{"hash(1, 0) = hash_murmur2(1, 0)", "boolean true"},
		{"hash(1) = hash(1, :default_seed)", "boolean true"},
		{"permute(0, 1)", "int 0"},
		{"permute(5, 0)", "error: permute size parameter must be greater than zero"},
		// Random functions check their arguments.
		{"random(2, 1)", "error: empty range given to random"},
		{"random(-9223372036854775808, 9223372036854775807)", "error: random range is too large"},
		{"random(0, 9223372036854775807)", "error: random range is too large"},
		{"random(5, 5)", "int 5"},
		{"random_gaussian(1, 10, 1.9)", "error: gaussian parameter must be at least 2.000000 (not 1.900000)"},
		{"random_zipfian(1, 10, 1.0)", "error: zipfian parameter must be in range [1.001, 1000] (not 1.000000)"},
		{"random_zipfian(1, 10, 1001)", "error: zipfian parameter must be in range [1.001, 1000] (not 1001.000000)"},
		{"random_exponential(1, 10, 0)", "error: exponential parameter must be greater than zero (not 0.000000)"},
		{"random_exponential(1, 1, 5)", "int 1"},
		// Variables: typed, and text converted as makeVariableValue does.
		{":i * :d", "double 17.5"},
		{":s_int + 1", "int -41"},
		{":s_dbl", "double 150"},
		{":s_yes", "boolean true"},
		{":s_null", "null"},
		{":s_bad", `error: malformed variable "s_bad" value: "12 "`},
		{":nope", `error: undefined variable "nope"`},
		{"debug(:t)", "boolean true"},
	}
	for _, tt := range tests {
		if got := exprEvalString(t, tt.src); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestDebugOutput(t *testing.T) {
	t.Parallel()
	syms := NewSymbols()
	e, err := ParseExpr("debug(1) + debug(2.5) + debug(null) + debug(1 = 1)", Pos{"t.sql", 1, 1}, syms)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := &Env{Vars: NewVars(syms), Rand: NewRand(1), Debug: &out, Script: 2, Command: 4}
	if _, err := e.Eval(env); err != nil {
		t.Fatal(err)
	}
	want := "debug(script=2,command=5): int 1\n" +
		"debug(script=2,command=5): double 2.5\n" +
		"debug(script=2,command=5): null\n" +
		"debug(script=2,command=5): boolean true\n"
	if out.String() != want {
		t.Errorf("debug output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestValueTruth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Value
		want bool
	}{
		{Value{Type: TypeNull}, false},             // NULL is false
		{boolValue(true), true},                    // booleans are themselves
		{boolValue(false), false},                  // …
		{intValue(0), false},                       // zero is false
		{intValue(-3), true},                       // any other number is true
		{doubleValue(0), false},                    // 0.0 is false
		{doubleValue(math.Copysign(0, -1)), false}, // so is -0.0
		{doubleValue(math.NaN()), true},            // NaN != 0
	}
	for _, tt := range tests {
		got, err := tt.v.Truth()
		if err != nil || got != tt.want {
			t.Errorf("%+v.Truth() = %v, %v; want %v", tt.v, got, err, tt.want)
		}
	}
	if _, err := (Value{Type: 99}).Truth(); err == nil {
		t.Error("Truth of an unknown type: no error")
	}
}

func TestVariableText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want string // exprRender, or "error"
	}{
		{"null", "null"},                 // case-insensitive NULL
		{"t", "boolean true"},            // prefixes of true/yes
		{"YE", "boolean true"},           // …
		{"on", "boolean true"},           // on exactly
		{"o", "error"},                   // "o" is ambiguous
		{"of", "boolean false"},          // of and off
		{"n", "boolean false"},           // prefixes of no/false
		{"1", "int 1"},                   // 0/1 are ints, coerced later
		{"  +12", "int 12"},              // leading space and sign
		{"12 ", "error"},                 // no trailing space (is_an_int, strtod)
		{"-", "error"},                   // is_an_int accepts it, strtoint64 does not
		{"9223372036854775808", "error"}, // int overflow
		{"1.5", "double 1.5"},
		{" 2e3", "double 2000"},
		{"0x10", "double 16"},      // strtod hex without exponent
		{"inf", "double Infinity"}, // strtod's spellings
		{"-Infinity", "double -Infinity"},
		{"nan", "double NaN"},
		{"1e-320", "error"},  // subnormal: ERANGE
		{"1e999", "error"},   // overflow: ERANGE
		{"1_000.5", "error"}, // Go's digit separators are not C's
		{"abc", "error"},
		{"", "error"},
	}
	for _, tt := range tests {
		v, err := parseVariableText(tt.text)
		got := "error"
		if err == nil {
			got = exprRender(v)
		}
		if got != tt.want {
			t.Errorf("parseVariableText(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
}

// TestEvalAllocs checks that evaluating the expressions of ordinary
// scripts allocates nothing.
func TestEvalAllocs(t *testing.T) {
	for _, src := range []string{
		"random(1, 100000 * :scale)",
		"random_gaussian(1, 100000 * :scale, 2.5)",
		"random_exponential(1, 100000, 3.0)",
		"random_zipfian(1, 100000, 1.07)",
		"permute(random(1, 1000), 1000) + hash(:i) % 10",
		"case when :i > 5 and not :t then abs(-:d) else least(:i, 3, :d) end",
		":s_int + :s_dbl * 2 <> pi() or :n is null",
		"debug(:i)",
	} {
		syms := NewSymbols()
		e, err := ParseExpr(src, Pos{"t.sql", 1, 1}, syms)
		if err != nil {
			t.Fatal(err)
		}
		env := exprTestEnv(syms)
		env.Debug = exprDiscard{}
		if _, err := e.Eval(env); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if n := testing.AllocsPerRun(1000, func() { _, _ = e.Eval(env) }); n != 0 {
			t.Errorf("%s: %v allocations per evaluation, want 0", src, n)
		}
	}
}

type exprDiscard struct{}

func (exprDiscard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkEvalRandom(b *testing.B) {
	syms := NewSymbols()
	e, err := ParseExpr("random(1, 100000 * :scale)", Pos{"t.sql", 1, 1}, syms)
	if err != nil {
		b.Fatal(err)
	}
	vars := NewVars(syms)
	vars.SetInt(syms.Ref(VarScale), 10)
	env := &Env{Vars: vars, Rand: NewRand(1)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalTPCB(b *testing.B) {
	syms := NewSymbols()
	var exprs []Expr
	for _, src := range []string{
		"random(1, 100000 * :scale)",
		"random(1, 1 * :scale)",
		"random(1, 10 * :scale)",
		"random(-5000, 5000)",
	} {
		e, err := ParseExpr(src, Pos{"t.sql", 1, 1}, syms)
		if err != nil {
			b.Fatal(err)
		}
		exprs = append(exprs, e)
	}
	vars := NewVars(syms)
	vars.SetInt(syms.Ref(VarScale), 10)
	env := &Env{Vars: vars, Rand: NewRand(1)}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range exprs {
			if _, err := e.Eval(env); err != nil {
				b.Fatal(err)
			}
		}
	}
}
