package script

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
)

// The differential tests run the real pgbench on the same expressions and
// compare what its debug() prints, and which expressions it rejects, with
// what ParseExpr and Eval do.
// The random functions, whose values depend on pgbench's seeding of each
// client, are compared per client and transaction by
// TestPgbenchSameRandomValues in db/postgres/pgbenchcmd.

// exprPgbenchDefines are the -D variables of every differential run. As in
// pgbench, they reach expressions as text and are converted on use;
// default_seed is fixed so that one-argument hash() can be compared.
var exprPgbenchDefines = [][2]string{
	{"i", "7"},
	{"neg", "-3"},
	{"d", "2.5"},
	{"big", "9223372036854775807"},
	{"sint", " -42"},
	{"sdbl", "1.5e2"},
	{"shex", "0x10"},
	{"yes", "Y"},
	{"off", "off"},
	{"nul", "null"},
	{"default_seed", "424242"},
}

// exprPgbenchRunner runs scripts through the real pgbench against a throwaway
// server.
type exprPgbenchRunner struct {
	bin  string
	conn []string
	dir  string
	sem  chan struct{}
}

// exprFindPgbench returns the pgbench to compare with: the one beside
// the server binaries a throwaway server runs from, or "".
func exprFindPgbench() string {
	p, _ := postgres.Pgbench()
	return p
}

func newExprPgbenchRunner(t *testing.T) *exprPgbenchRunner {
	t.Helper()
	bin := exprFindPgbench()
	if bin == "" {
		t.Skip("pgbench not found (neither /usr/lib/postgresql/*/bin/pgbench nor on PATH): install postgresql-client to run the differential tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatalf("start a throwaway server for pgbench: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop server: %v", err)
		}
	})
	// Prefer the pgbench that matches the server.
	if own := filepath.Join(inst.BinDir(), "pgbench"); exprFileExists(own) {
		bin = own
	}
	return &exprPgbenchRunner{
		bin:  bin,
		conn: []string{"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User(), inst.Database()},
		dir:  t.TempDir(),
		sem:  make(chan struct{}, 6),
	}
}

func exprFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

var exprScriptSeq struct {
	sync.Mutex
	n int
}

// run runs script once with one client and returns pgbench's stderr and
// whether it exited successfully.
func (r *exprPgbenchRunner) run(t *testing.T, script string) (string, bool) {
	t.Helper()
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	exprScriptSeq.Lock()
	exprScriptSeq.n++
	path := filepath.Join(r.dir, fmt.Sprintf("s%d.sql", exprScriptSeq.n))
	exprScriptSeq.Unlock()
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-n", "-t", "1", "-c", "1", "-f", path}
	for _, d := range exprPgbenchDefines {
		args = append(args, "-D", d[0]+"="+d[1])
	}
	args = append(args, r.conn...)
	cmd := exec.Command(r.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = new(bytes.Buffer)
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run %s: %v", r.bin, err)
		}
	}
	return stderr.String(), err == nil
}

// exprPgbenchEnv is the evaluation environment equivalent to a pgbench client
// with exprPgbenchDefines.
func exprPgbenchEnv(syms *Symbols) *Env {
	vars := NewVars(syms)
	vars.SetInt(syms.Ref(VarScale), 1)
	vars.SetInt(syms.Ref(VarClientID), 0)
	for _, d := range exprPgbenchDefines {
		vars.SetString(syms.Ref(d[0]), d[1])
	}
	return &Env{Vars: vars, Rand: NewRand(1), Debug: exprDiscard{}}
}

// exprOurResult parses and evaluates src; kind is "parse" or "eval" on error.
func exprOurResult(src string) (val string, kind string, err error) {
	syms := NewSymbols()
	e, err := ParseExpr(src, Pos{"d.sql", 1, 1}, syms)
	if err != nil {
		return "", "parse", err
	}
	v, err := e.Eval(exprPgbenchEnv(syms))
	if err != nil {
		return "", "eval", err
	}
	return exprRender(v), "", nil
}

// deterministicExprs cover every deterministic function and operator.
var deterministicExprs = []string{
	// literals and double formatting
	"1", "-1", "0", "9223372036854775807", "-9223372036854775808", "- 9223372036854775808",
	"1.5e3", ".5", "1.", "1E-2", "1e20", "1e15", "1e14", "123456789012345", "1234567890123456.0",
	"123456789012345678.0", "0.1 + 0.2", "1e-5", "0.0001", "1.0 / 3", "2.0 / 3", "1e300 * 1e10",
	"-1e300 * 1e10", "0.0 / 0", "0.0 * -1", "-0.0", "1e-300 * 1e-300", "true", "false", "null",
	"TRUE", "Null", "4.9e-308 * 0 + 1",
	// integer arithmetic
	"7 / 2", "-7 / 2", "7 / -2", "-7 % 3", "7 % -3", "-7 % -3", "mod(-7, 3)", "mod(7, -3)",
	"9223372036854775807 % -1", "-9223372036854775808 % -1", "-9223372036854775808 / 2",
	"3037000499 * 3037000499", "-3037000499 * 3037000499", "-4611686018427387904 * 2",
	"9223372036854775806 + 1", "-9223372036854775807 - 1", "2 + 3 * 4 - 5", "(2 + 3) * (4 - 5)",
	"- - 5", "--5", "+-+5", "1 - -1",
	// double arithmetic and promotion
	"7 / 2.0", "7.0 / 2", "7.5 % 2", "8.5 % 3", "-7.5 % 2", "1 + 0.5", "1.5 * 4", "10 - 0.25",
	"1e308 + 1e308", "1.0 / 0", "-1.0 / 0", "9007199254740993 + 0.0", "9223372036854775807 + 0.0",
	// comparisons
	"1 = 1", "1 = 1.0", "1 <> 2", "1 != 1", "1 < 2", "2 <= 2", "3 > 2", "2 >= 3", "1.5 < 2",
	"0.0/0 = 0.0/0", "0.0/0 <> 0.0/0", "0.0/0 < 1", "1 = null", "null <> null",
	"9007199254740993 = 9007199254740992.0",
	// bitwise
	"5 & 3", "5 | 3", "5 # 3", "~5", "~-1", "~0", "1 << 62", "1 << 63", "1 << 64", "1 << 65",
	"-8 >> 1", "-8 >> 66", "1 << -1", "12345 >> 3", "1.6 & 3", "2.5 | 0", "3.5 # 0",
	"1 | 2 & 3", "1 # 2 << 3", "~1 + 2", "~1 & 2", "1 << 2 + 3",
	// logic and NULL
	"true and false", "true or false", "not true", "not false", "null and true", "null or true",
	"true and null", "false and null", "false or null", "true or null", "not null",
	"null and 1/0 = 0", "false and 1/0 = 0", "true or 1/0 = 0", "NOT 1 = 2", "not true and false",
	"true or false and false", "true and false or true",
	"null is null", "1 is null", "1 isnull", "null notnull", "1 notnull", "1 is not null",
	"true is true", "true is false", "false is not true", "1 is true", "null is true",
	"null is not false", "1 = 2 is null", "(1 = 1) is true", "1 + 2 is null",
	// CASE
	"case when true then 1 end", "case when false then 1 end", "case when 0 then 1 else 2 end",
	"case when 2 then 'x' end", "case when null then 1 else 2 end", "case when 0.0 then 1 else 2.5 end",
	"case when 1 > 2 then 1 when 2 > 1 then 2 else 3 end", "case when true then 1 else 1/0 end",
	"CASE WHEN :i > 5 THEN :i * 2 ELSE :d END",
	// functions
	"abs(-3)", "abs(3)", "abs(-3.5)", "abs(-0.0)", "abs(-9223372036854775808)", "abs(null)",
	"least(3, 1, 2)", "least(3, 1.5, 2)", "greatest(3, 1, 2)", "greatest(1, 2.5, 2)", "least(1)",
	"greatest(-1.0)", "least(1, null)", "least(0.0/0, 1)", "least(1, 0.0/0)", "greatest(0.0/0, 1)",
	"least(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)",
	"int(2.5)", "int(3.5)", "int(-2.5)", "int(-2.7)", "int(2.4999)", "int(1e18)", "int(-9.2e18)",
	"int(5)", "double(3)", "double(-0.5)", "double(9223372036854775807)",
	"sqrt(2)", "sqrt(0)", "sqrt(-1)", "sqrt(1e10)", "exp(1)", "exp(0)", "exp(-1)", "exp(710)",
	"exp(-1000)", "exp(0.5)", "exp(10)", "ln(1)", "ln(0)", "ln(-1)", "ln(10)", "ln(2.5)",
	"pow(2, 10)", "pow(2, 0.5)", "power(2, -1)", "pow(-8, 1.0 / 3)", "pow(0, 0)", "pow(0, -1)",
	"pow(-2, 3)", "pow(10, 308)", "pow(1.0001, 10000)", "pi()", "PI() * 2", "mod(10, 3)",
	"hash(0, 0)", "hash(1, 0)", "hash(-1, 0)", "hash(42, 12345)", "hash(9223372036854775807, -1)",
	"hash_murmur2(5, 7)", "hash_fnv1a(0, 0)", "hash_fnv1a(1, 0)", "hash_fnv1a(-1, 0)",
	"hash_fnv1a(42, 12345)", "hash_fnv1a(-9223372036854775808, 9223372036854775807)",
	"hash(7)", "hash_fnv1a(7)", "hash_murmur2(7)", "hash(2.5, 1)",
	"permute(0, 1, 5)", "permute(0, 2, 5)", "permute(1, 2, 5)", "permute(0, 3, 1)", "permute(2, 3, 1)",
	"permute(5, 10, 42)", "permute(15, 10, 42)", "permute(-1, 10, 42)", "permute(123, 1000, -7)",
	"permute(99999, 100000, 12345)", "permute(7, 9223372036854775807, 3)", "permute(3, 1000)",
	"permute(0, 4, 0)", "permute(1, 4, 0)", "permute(2, 4, 0)", "permute(3, 4, 0)",
	"random(5, 5)", "random_exponential(3, 3, 1.5)", "random_gaussian(4, 4, 3)", "random_zipfian(6, 6, 1.5)",
	// variables given as text
	":i", ":neg", ":d", ":big", ":sint", ":sdbl", ":shex", ":yes", ":off", ":nul", ":default_seed",
	":i + :d", ":sint * 2", ":big - 1", ":yes and true", ":nul is null", ":scale",
	// precedence and spellings
	"1 + 2 * 3 - 4 / 2 % 3", "1 * NOT 2 = 3 and true", "2 * 3 = 6 or false", "1 < 2 = true",
	"case when 1 < 2 then 1 end + 1", "-2 * -3", "- (2 + 3)", "hash(1 + 2, 3 * 4)",
}

// TestPgbenchDifferential compares our parsing and evaluation with the
// real pgbench's, on hand-written and generated expressions: values
// printed by debug(), the messages of runtime errors, and which
// expressions are rejected when the script loads.
func TestPgbenchDifferential(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("differential test against pgbench skipped in -short mode")
	}
	runner := newExprPgbenchRunner(t)

	var ok []string  // expressions we evaluate: their values are compared
	var bad []string // expressions we fail to evaluate: their errors are compared
	gen := &exprGen{r: rand.New(rand.NewPCG(2024, 7))}
	candidates := slices.Clone(deterministicExprs)
	for range 700 {
		candidates = append(candidates, gen.expr(4))
	}
	for _, src := range candidates {
		_, kind, _ := exprOurResult(src)
		switch kind {
		case "":
			ok = append(ok, src)
		case "eval":
			bad = append(bad, src)
		case "parse":
			// Parse agreement is checked in TestPgbenchParseAgreement.
		}
	}
	// Hand-picked runtime errors, one pgbench run each.
	bad = append(bad,
		"9223372036854775807 + 1", "-9223372036854775808 - 1", "-(-9223372036854775808)",
		"4611686018427387904 * 2", "-9223372036854775808 * -1", "-9223372036854775808 / -1",
		"1 / 0", "1 % 0", "1.5 % 0", "mod(5, 0)", "int(1e19)", "int(-1e19)", "int(0.0 / 0)",
		"int(1.0 / 0)", "true = true", "true + 1.0", "not 1", "1 and true", "false or 1",
		"random(2, 1)", "random(-9223372036854775808, 9223372036854775807)",
		"random(0, 9223372036854775807)", "random_gaussian(1, 10, 1.9)", "random_zipfian(1, 10, 1.0)",
		"random_zipfian(1, 10, 1001)", "random_exponential(1, 10, 0)", "random_exponential(1, 10, -1)",
		"permute(1, 0, 1)", "permute(1, -5)", ":undefined_var + 1", "least(1, true)",
		"greatest(1.5, false)", "sqrt(true)", "hash(true)", "int(null) + int(true)",
		"least(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)", "1 << true",
		"case when true then 1 / 0 end", "debug(1 / 0)",
	)

	t.Run("values", func(t *testing.T) {
		const batch = 150
		for start := 0; start < len(ok); start += batch {
			exprs := ok[start:min(start+batch, len(ok))]
			t.Run(fmt.Sprintf("batch%d", start/batch), func(t *testing.T) {
				t.Parallel()
				compareExprValues(t, runner, exprs)
			})
		}
	})
	t.Run("errors", func(t *testing.T) {
		for i, src := range bad {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				compareExprError(t, runner, src)
			})
		}
	})
	parsed := 0
	t.Run("parsing", func(t *testing.T) { parsed = compareParsing(t, runner) })
	t.Logf("compared with %s: %d values, %d runtime errors, %d accept/reject decisions", runner.bin, len(ok), len(bad), parsed)
}

var exprDebugLine = regexp.MustCompile(`^debug\(script=0,command=(\d+)\): (.*)$`)

// compareExprValues runs \set rN <expr> and \set dN debug(:rN) for each
// expression and compares the printed values with ours.
func compareExprValues(t *testing.T, runner *exprPgbenchRunner, exprs []string) {
	var script strings.Builder
	for i, src := range exprs {
		fmt.Fprintf(&script, "\\set r%d %s\n\\set d%d debug(:r%d)\n", i, src, i, i)
	}
	stderr, success := runner.run(t, script.String())
	if !success {
		t.Fatalf("pgbench failed on a script we evaluate without error:\n%s", exprTail(stderr, 20))
	}
	got := make(map[int]string)
	for line := range strings.SplitSeq(stderr, "\n") {
		m := exprDebugLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cmd, _ := strconv.Atoi(m[1]) // 1-based; the debug of expression i is command 2i+2
		if cmd%2 == 0 {
			got[cmd/2-1] = m[2]
		}
	}
	for i, src := range exprs {
		want, _, err := exprOurResult(src)
		if err != nil {
			t.Errorf("%s: we fail: %v", src, err)
			continue
		}
		if g, found := got[i]; !found {
			t.Errorf("%s: pgbench printed no value", src)
		} else if g != want {
			t.Errorf("%s: pgbench %q, we %q", src, g, want)
		}
	}
}

var exprPgbenchError = regexp.MustCompile(`(?m)^pgbench: error: (.*)$`)

// compareExprError runs one expression that we fail to evaluate and checks
// that pgbench aborts the client with the same message.
func compareExprError(t *testing.T, runner *exprPgbenchRunner, src string) {
	_, kind, ourErr := exprOurResult(src)
	if kind != "eval" {
		t.Fatalf("%s: want an evaluation error from us, got kind %q (%v)", src, kind, ourErr)
	}
	stderr, _ := runner.run(t, "\\set x "+src+"\n")
	if !strings.Contains(stderr, "aborted in command 0 (set) of script 0; evaluation of meta-command failed") {
		t.Fatalf("%s: pgbench did not abort the client (we: %v):\n%s", src, ourErr, exprTail(stderr, 10))
	}
	m := exprPgbenchError.FindStringSubmatch(stderr)
	if m == nil || m[1] != ourErr.Error() {
		t.Errorf("%s: pgbench says %q, we say %q", src, m, ourErr.Error())
	}
}

// compareParsing checks that we reject exactly the expressions pgbench
// rejects when it loads a script.
func compareParsing(t *testing.T, runner *exprPgbenchRunner) int {
	cases := []string{
		"1 +", "1 == 1", "!true", "1 < 2 < 3", "1 = 2 <> 3", "1 <= 2 >= 3", "99999999999999999999",
		"9223372036854775808", "1 - 9223372036854775808", "-(9223372036854775808)",
		"- 9223372036854775808", "1e400", "1e-310", "1e-300", "2.2250738585072014e-308", "foo(1)",
		"abs(1, 2)", "hash()", "hash(1, 2, 3)", "permute(1)", "permute(1, 2, 3, 4)", "least()",
		"pi", "pi(1)", "random(1,)", "1 is 1", "case 1 end", "case when 1 then 2", "case else 1 end",
		": x", "1e", "1e+", "(1", "1)", "", "NOT a IS NULL", "1 is null is null", "1 isnull notnull",
		"1 is not not null", "not not true", "1..2", ".", "1.2.3", ":", "::x", "$1", "'a'", "1 ~ 2",
		"~ ~ 1", "andy(1)", "1 and", "is null", "1 <=> 2", "1 <<= 2", "1 >>> 2", "1 # # 2",
		"MOD(1,2)", "Random(1, 2)", "random_Zipfian(1, 2, 1.5)", "hash_fnv1A(1)", "POWER(2,2)",
		"1 = (2 = 3)", "(1 < 2) < 3", "1 < 2 is null < 3", "case when 1 then 2 else 3 else 4 end",
		"case when 1 then 2 end end", "least(1,,2)", "least(,1)", "least(,,1)", "abs(,)", ":x:y", ":é", "é(1)", "1 2",
		"-", "+", "()", "abs()", "abs((1))", "1 NOTNULL = true", "1 ISNULL ISNULL",
	}
	gen := &exprGen{r: rand.New(rand.NewPCG(99, 1))}
	for range 150 {
		cases = append(cases, gen.tokenSoup())
	}
	for i, src := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			_, kind, ourErr := exprOurResult(src)
			weReject := kind == "parse"
			stderr, _ := runner.run(t, "\\set x "+src+"\n")
			theyReject := strings.Contains(stderr, `in command "set"`)
			if weReject != theyReject {
				t.Errorf("%q: we reject: %v (%v); pgbench rejects: %v\n%s", src, weReject, ourErr, theyReject, exprTail(stderr, 4))
			}
		})
	}
	return len(cases)
}

func exprTail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// exprGen generates random expressions over pgbench's deterministic
// functions and operators.
type exprGen struct{ r *rand.Rand }

func (g *exprGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *exprGen) leaf() string {
	switch g.r.IntN(12) {
	case 0, 1, 2:
		return strconv.Itoa(g.r.IntN(21) - 10)
	case 3:
		return strconv.FormatInt(g.r.Int64()>>uint(g.r.IntN(64)), 10)
	case 4:
		return g.pick("9223372036854775807", "-9223372036854775808", "4611686018427387904", "3037000500")
	case 5, 6:
		return g.pick("1.5", "0.5", ".25", "2.", "1e3", "2.5e-3", "1E2", "0.1", "3.75", "1e18", "1e-7", "0.0")
	case 7:
		return g.pick("true", "false", "null")
	case 8, 9:
		return g.pick(":i", ":neg", ":d", ":big", ":sint", ":sdbl", ":shex", ":yes", ":off", ":nul", ":scale")
	case 10:
		return "pi()"
	default:
		return strconv.Itoa(g.r.IntN(1000))
	}
}

func (g *exprGen) expr(depth int) string {
	if depth <= 0 || g.r.IntN(5) == 0 {
		return g.leaf()
	}
	sub := func() string { return g.expr(depth - 1) }
	var s string
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		op := g.pick("+", "-", "*", "/", "%", "=", "<>", "!=", "<", "<=", ">", ">=",
			"&", "|", "#", "<<", ">>", "and", "or", "AND", "OR")
		s = sub() + " " + op + " " + sub()
	case 4:
		s = g.pick("-", "+", "~", "not ", "NOT ", "- ") + sub()
	case 5:
		s = sub() + g.pick(" is null", " is not null", " isnull", " notnull", " is true", " is not false", " IS FALSE")
	case 6, 7:
		switch g.r.IntN(12) {
		case 0:
			arg := sub()
			fn := g.pick("abs", "int", "double", "sqrt", "exp", "ln")
			if v, _, _ := exprOurResult(arg); fn == "abs" && strings.HasPrefix(v, "boolean") {
				fn = "int" // pgbench's abs reads a boolean's storage as a double: undefined
			}
			s = fn + "(" + arg + ")"
		case 1:
			s = g.pick("pow", "power", "mod") + "(" + sub() + ", " + sub() + ")"
		case 2, 3:
			n := 1 + g.r.IntN(4)
			args := make([]string, n)
			for i := range args {
				args[i] = sub()
			}
			s = g.pick("least", "greatest") + "(" + strings.Join(args, ", ") + ")"
		case 4, 5:
			s = g.pick("hash", "hash_fnv1a", "hash_murmur2") + "(" + sub() + ", " + sub() + ")"
		case 6:
			s = g.pick("hash", "hash_fnv1a", "hash_murmur2") + "(" + sub() + ")"
		case 7, 8:
			s = "permute(" + sub() + ", " + g.pick("1", "2", "3", "10", "1000", "123457", "9223372036854775807", sub()) + ", " + sub() + ")"
		case 9:
			s = "mod(" + sub() + ", " + g.pick("3", "-3", "7") + ")"
		default:
			s = "int(" + sub() + ")"
		}
	case 8:
		s = "case when " + sub() + " then " + sub()
		if g.r.IntN(2) == 0 {
			s += " when " + sub() + " then " + sub()
		}
		if g.r.IntN(2) == 0 {
			s += " else " + sub()
		}
		s += " end"
	default:
		s = "(" + sub() + ")"
	}
	if g.r.IntN(3) == 0 {
		s = "(" + s + ")"
	}
	return s
}

// tokenSoup is a short random sequence of tokens, mostly invalid, to see
// that we reject what pgbench rejects.
func (g *exprGen) tokenSoup() string {
	tokens := []string{"1", "2.5", "-", "+", "*", "/", "%", "(", ")", ",", "=", "<", ">", "<=", ">=",
		"<>", "!=", "&", "|", "#", "~", "<<", ">>", "and", "or", "not", "is", "null", "true", "false",
		"isnull", "notnull", "case", "when", "then", "else", "end", ":i", "abs", "least", "hash",
		"9223372036854775808", "!", "==", "1e", ".5"}
	n := 1 + g.r.IntN(6)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = tokens[g.r.IntN(len(tokens))]
	}
	return strings.Join(parts, " ")
}
