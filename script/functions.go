package script

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// funcID identifies a built-in function or operator; operators are
// functions too, as in pgbench's PGBENCH_FUNCTIONS table.
type funcID uint8

const (
	fnAdd funcID = iota
	fnSub
	fnMul
	fnDiv
	fnMod
	fnAbs
	fnLeast
	fnGreatest
	fnDebug
	fnPi
	fnSqrt
	fnLn
	fnExp
	fnInt
	fnDouble
	fnRandom
	fnRandomGaussian
	fnRandomExponential
	fnRandomZipfian
	fnPow
	fnAnd
	fnOr
	fnNot
	fnBitAnd
	fnBitOr
	fnBitXor
	fnShiftLeft
	fnShiftRight
	fnEq
	fnNe
	fnLe
	fnLt
	fnIs
	fnCase
	fnHashMurmur2
	fnHashFnv1a
	fnPermute
)

// funcNames name each function as a user writes it (operators by their
// symbol); exprString uses them.
var funcNames = [...]string{
	fnAdd: "+", fnSub: "-", fnMul: "*", fnDiv: "/", fnMod: "mod",
	fnAbs: "abs", fnLeast: "least", fnGreatest: "greatest", fnDebug: "debug",
	fnPi: "pi", fnSqrt: "sqrt", fnLn: "ln", fnExp: "exp", fnInt: "int", fnDouble: "double",
	fnRandom: "random", fnRandomGaussian: "random_gaussian",
	fnRandomExponential: "random_exponential", fnRandomZipfian: "random_zipfian",
	fnPow: "pow", fnAnd: "and", fnOr: "or", fnNot: "not",
	fnBitAnd: "&", fnBitOr: "|", fnBitXor: "#", fnShiftLeft: "<<", fnShiftRight: ">>",
	fnEq: "=", fnNe: "<>", fnLe: "<=", fnLt: "<", fnIs: "is", fnCase: "case",
	fnHashMurmur2: "hash_murmur2", fnHashFnv1a: "hash_fnv1a", fnPermute: "permute",
}

func (f funcID) String() string {
	if int(f) < len(funcNames) {
		return funcNames[f]
	}
	return "func#" + strconv.Itoa(int(f))
}

// Special arities of callable functions.
const (
	arityVariadic = -1 // least, greatest: at least one argument
	arityHash     = -2 // hash*: value [, seed]; the seed defaults to :default_seed
	arityPermute  = -3 // permute: value, size [, seed]; the seed defaults to :default_seed
)

// callable is a function a script may call by name.
type callable struct {
	id    funcID
	arity int
}

// callables are the functions a script may name, case-insensitively.
// As in pgbench, mod is callable as well as written %.
var callables = map[string]callable{
	"abs":                {fnAbs, 1},
	"debug":              {fnDebug, 1},
	"double":             {fnDouble, 1},
	"exp":                {fnExp, 1},
	"greatest":           {fnGreatest, arityVariadic},
	"hash":               {fnHashMurmur2, arityHash},
	"hash_fnv1a":         {fnHashFnv1a, arityHash},
	"hash_murmur2":       {fnHashMurmur2, arityHash},
	"int":                {fnInt, 1},
	"least":              {fnLeast, arityVariadic},
	"ln":                 {fnLn, 1},
	"mod":                {fnMod, 2},
	"permute":            {fnPermute, arityPermute},
	"pi":                 {fnPi, 0},
	"pow":                {fnPow, 2},
	"power":              {fnPow, 2},
	"random":             {fnRandom, 2},
	"random_exponential": {fnRandomExponential, 3},
	"random_gaussian":    {fnRandomGaussian, 3},
	"random_zipfian":     {fnRandomZipfian, 3},
	"sqrt":               {fnSqrt, 1},
}

func lookupCallable(name string) (callable, bool) {
	c, ok := callables[strings.ToLower(name)]
	return c, ok
}

// maxFuncArgs is pgbench's MAX_FARGS: a call with more arguments fails
// when evaluated.
const maxFuncArgs = 16

// Parameter limits of the random distributions, as pgbench.h defines them.
const (
	minGaussianParam = 2.0
	minZipfianParam  = 1.001
	maxZipfianParam  = 1000.0
)

// Hashing constants of pgbench's hash functions.
const (
	fnvPrime        = 0x100000001b3
	fnvOffsetBasis  = 0xcbf29ce484222325
	murmur2Mul      = 0xc6a4a7935bd1e995
	murmur2MulTimes = 0x35253c9ade8f4ca8 // murmur2Mul * 8 (the key length)
	murmur2Rot      = 47
)

// Errors with fixed text are preallocated; their words are pgbench's.
var (
	errAddOverflow   = errors.New("bigint add out of range")
	errSubOverflow   = errors.New("bigint sub out of range")
	errMulOverflow   = errors.New("bigint mul out of range")
	errDivOverflow   = errors.New("bigint div out of range")
	errDivByZero     = errors.New("division by zero")
	errEmptyRange    = errors.New("empty range given to random")
	errRangeTooLarge = errors.New("random range is too large")
	errPermuteSize   = errors.New("permute size parameter must be greater than zero")
	errTooManyArgs   = fmt.Errorf("too many function arguments, maximum is %d", maxFuncArgs)
)

// valueTypeName is pgbench's valueTypeName.
func valueTypeName(t ValueType) string {
	switch t {
	case TypeNull:
		return "null"
	case TypeInt:
		return "int"
	case TypeDouble:
		return "double"
	case TypeBool:
		return "boolean"
	}
	return "none"
}

// formatCFloat formats like pgbench's "%f": six decimals, with PostgreSQL's
// snprintf spelling of the special values.
func formatCFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// asInt is pgbench's coerceToInt: a double is rounded to the nearest
// integer (ties to even, as rint) and must fit in an int64.
func (v Value) asInt() (int64, error) {
	switch v.Type {
	case TypeInt:
		return v.Int, nil
	case TypeDouble:
		d := math.RoundToEven(v.Dbl)
		if math.IsNaN(d) || d < -0x1p63 || d >= 0x1p63 {
			return 0, fmt.Errorf("double to int overflow for %s", formatCFloat(d))
		}
		return int64(d), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to int", valueTypeName(v.Type))
}

// asDouble is pgbench's coerceToDouble.
func (v Value) asDouble() (float64, error) {
	switch v.Type {
	case TypeDouble:
		return v.Dbl, nil
	case TypeInt:
		return float64(v.Int), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to double", valueTypeName(v.Type))
}

// asBool is pgbench's coerceToBool: only a boolean is one.
func (v Value) asBool() (bool, error) {
	if v.Type == TypeBool {
		return v.Int != 0, nil
	}
	return false, fmt.Errorf("cannot coerce %s to boolean", valueTypeName(v.Type))
}

// Truth says whether a value counts as true in a condition (\if, CASE
// WHEN), as pgbench's valueTruth: NULL and zero are false, non-zero
// numbers are true. The error is only for a Value of no known type.
func (v Value) Truth() (bool, error) {
	switch v.Type {
	case TypeNull:
		return false, nil
	case TypeBool, TypeInt:
		return v.Int != 0, nil
	case TypeDouble:
		return v.Dbl != 0, nil
	}
	return false, fmt.Errorf("cannot use a value of type %d as a condition", v.Type)
}

func intValue(i int64) Value      { return Value{Type: TypeInt, Int: i} }
func doubleValue(f float64) Value { return Value{Type: TypeDouble, Dbl: f} }

func boolValue(b bool) Value {
	if b {
		return Value{Type: TypeBool, Int: 1}
	}
	return Value{Type: TypeBool}
}

// cInt64 converts as C's (int64) cast does on x86-64: toward zero, and a
// NaN or out-of-range value gives INT64_MIN (cvttsd2si's "indefinite"),
// the same on every platform Go runs on.
func cInt64(f float64) int64 {
	if f != f || f < -0x1p63 || f >= 0x1p63 {
		return math.MinInt64
	}
	return int64(f)
}

// applyFunc evaluates a non-lazy function on evaluated arguments, as
// pgbench's evalStandardFunc.
func applyFunc(env *Env, fn funcID, args []Value) (Value, error) {
	if fn != fnIs && fn != fnDebug {
		for i := range args {
			if args[i].Type == TypeNull {
				return Value{}, nil
			}
		}
	}
	switch fn {
	case fnAdd, fnSub, fnMul, fnDiv, fnMod, fnEq, fnNe, fnLe, fnLt:
		return applyArith(fn, args[0], args[1])

	case fnBitAnd, fnBitOr, fnBitXor, fnShiftLeft, fnShiftRight:
		l, err := args[0].asInt()
		if err != nil {
			return Value{}, err
		}
		r, err := args[1].asInt()
		if err != nil {
			return Value{}, err
		}
		switch fn {
		case fnBitAnd:
			return intValue(l & r), nil
		case fnBitOr:
			return intValue(l | r), nil
		case fnBitXor:
			return intValue(l ^ r), nil
		case fnShiftLeft:
			// C leaves shifts by more than 63 undefined; pgbench on x86-64
			// uses the count modulo 64, and so do we.
			return intValue(l << (uint64(r) & 63)), nil
		default:
			return intValue(l >> (uint64(r) & 63)), nil
		}

	case fnNot:
		b, err := args[0].asBool()
		if err != nil {
			return Value{}, err
		}
		return boolValue(!b), nil

	case fnPi:
		return doubleValue(math.Pi), nil

	case fnAbs:
		switch a := args[0]; a.Type {
		case TypeInt:
			if a.Int < 0 {
				return intValue(-a.Int), nil
			}
			return a, nil
		case TypeDouble:
			if a.Dbl < 0 {
				return doubleValue(-a.Dbl), nil
			}
			return a, nil
		default:
			// pgbench reads a boolean's storage as a double here (a union
			// member it never set: undefined, in practice leftover bytes).
			// Refusing is the only reproducible answer.
			return Value{}, fmt.Errorf("cannot coerce %s to double", valueTypeName(a.Type))
		}

	case fnDebug:
		env.debug(args[0])
		return args[0], nil

	case fnDouble, fnSqrt, fnLn, fnExp:
		d, err := args[0].asDouble()
		if err != nil {
			return Value{}, err
		}
		switch fn {
		case fnSqrt:
			d = math.Sqrt(d)
		case fnLn:
			d = cLog(d)
		case fnExp:
			d = cExp(d)
		}
		return doubleValue(d), nil

	case fnInt:
		i, err := args[0].asInt()
		if err != nil {
			return Value{}, err
		}
		return intValue(i), nil

	case fnLeast, fnGreatest:
		return applyExtremum(fn, args)

	case fnRandom, fnRandomExponential, fnRandomGaussian, fnRandomZipfian:
		return applyRandom(env, fn, args)

	case fnPow:
		l, err := args[0].asDouble()
		if err != nil {
			return Value{}, err
		}
		r, err := args[1].asDouble()
		if err != nil {
			return Value{}, err
		}
		return doubleValue(cPow(l, r)), nil

	case fnIs:
		// The right operand is NULL, TRUE or FALSE: the same type, and for
		// booleans the same value.
		a, b := args[0], args[1]
		return boolValue(a.Type == b.Type && (a.Type != TypeBool || a.Int == b.Int)), nil

	case fnHashMurmur2, fnHashFnv1a:
		val, err := args[0].asInt()
		if err != nil {
			return Value{}, err
		}
		seed, err := args[1].asInt()
		if err != nil {
			return Value{}, err
		}
		if fn == fnHashMurmur2 {
			return intValue(hashMurmur2(val, uint64(seed))), nil
		}
		return intValue(hashFnv1a(val, uint64(seed))), nil

	case fnPermute:
		val, err := args[0].asInt()
		if err != nil {
			return Value{}, err
		}
		size, err := args[1].asInt()
		if err != nil {
			return Value{}, err
		}
		seed, err := args[2].asInt()
		if err != nil {
			return Value{}, err
		}
		if size <= 0 {
			return Value{}, errPermuteSize
		}
		return intValue(permute(val, size, seed)), nil
	}
	return Value{}, fmt.Errorf("internal error: function %s is not evaluable here", fn)
}

// applyArith is the overloaded arithmetic and comparison of pgbench: double
// if either side is a double (except %), else int64 with overflow checks.
func applyArith(fn funcID, a, b Value) (Value, error) {
	if (a.Type == TypeDouble || b.Type == TypeDouble) && fn != fnMod {
		l, err := a.asDouble()
		if err != nil {
			return Value{}, err
		}
		r, err := b.asDouble()
		if err != nil {
			return Value{}, err
		}
		switch fn {
		case fnAdd:
			return doubleValue(l + r), nil
		case fnSub:
			return doubleValue(l - r), nil
		case fnMul:
			return doubleValue(l * r), nil
		case fnDiv:
			return doubleValue(l / r), nil
		case fnEq:
			return boolValue(l == r), nil
		case fnNe:
			return boolValue(l != r), nil
		case fnLe:
			return boolValue(l <= r), nil
		default:
			return boolValue(l < r), nil
		}
	}
	l, err := a.asInt()
	if err != nil {
		return Value{}, err
	}
	r, err := b.asInt()
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fnAdd:
		s := l + r
		if (s > l) != (r > 0) {
			return Value{}, errAddOverflow
		}
		return intValue(s), nil
	case fnSub:
		d := l - r
		if (d < l) != (r > 0) {
			return Value{}, errSubOverflow
		}
		return intValue(d), nil
	case fnMul:
		hi, lo := bits.Mul64(uint64(abs64(l)), uint64(abs64(r)))
		neg := (l < 0) != (r < 0)
		if hi != 0 || lo > math.MaxInt64 && !(neg && lo == 1<<63) {
			return Value{}, errMulOverflow
		}
		if neg {
			return intValue(-int64(lo)), nil
		}
		return intValue(int64(lo)), nil
	case fnEq:
		return boolValue(l == r), nil
	case fnNe:
		return boolValue(l != r), nil
	case fnLe:
		return boolValue(l <= r), nil
	case fnLt:
		return boolValue(l < r), nil
	}
	// fnDiv, fnMod
	if r == 0 {
		return Value{}, errDivByZero
	}
	if r == -1 {
		if fn == fnMod {
			return intValue(0), nil
		}
		if l == math.MinInt64 {
			return Value{}, errDivOverflow
		}
		return intValue(-l), nil
	}
	if fn == fnDiv {
		return intValue(l / r), nil
	}
	return intValue(l % r), nil
}

// abs64 is |x| with math.MinInt64 mapping to itself (its magnitude is
// still right when read as uint64).
func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// applyExtremum is least and greatest: double if any argument is one.
func applyExtremum(fn funcID, args []Value) (Value, error) {
	haveDouble := false
	for i := range args {
		if args[i].Type == TypeDouble {
			haveDouble = true
			break
		}
	}
	if haveDouble {
		ext, err := args[0].asDouble()
		if err != nil {
			return Value{}, err
		}
		for i := 1; i < len(args); i++ {
			d, err := args[i].asDouble()
			if err != nil {
				return Value{}, err
			}
			// pgbench's Min/Max macros, NaN handling included.
			if fn == fnLeast {
				if !(ext < d) {
					ext = d
				}
			} else if !(ext > d) {
				ext = d
			}
		}
		return doubleValue(ext), nil
	}
	ext, err := args[0].asInt()
	if err != nil {
		return Value{}, err
	}
	for i := 1; i < len(args); i++ {
		n, err := args[i].asInt()
		if err != nil {
			return Value{}, err
		}
		if fn == fnLeast {
			ext = min(ext, n)
		} else {
			ext = max(ext, n)
		}
	}
	return intValue(ext), nil
}

// applyRandom is random, random_exponential, random_gaussian and
// random_zipfian, with pgbench's argument checks.
func applyRandom(env *Env, fn funcID, args []Value) (Value, error) {
	lo, err := args[0].asInt()
	if err != nil {
		return Value{}, err
	}
	hi, err := args[1].asInt()
	if err != nil {
		return Value{}, err
	}
	if lo > hi {
		return Value{}, errEmptyRange
	}
	if delta := hi - lo; delta < 0 || delta == math.MaxInt64 {
		return Value{}, errRangeTooLarge
	}
	if env.Rand == nil {
		return Value{}, errors.New("no random number generator for this evaluation")
	}
	if fn == fnRandom {
		return intValue(env.Rand.Uniform(lo, hi)), nil
	}
	param, err := args[2].asDouble()
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fnRandomGaussian:
		if param < minGaussianParam {
			return Value{}, fmt.Errorf("gaussian parameter must be at least %s (not %s)",
				formatCFloat(minGaussianParam), formatCFloat(param))
		}
		return intValue(env.Rand.Gaussian(lo, hi, param)), nil
	case fnRandomZipfian:
		// A NaN passes pgbench's check and then loops forever; refuse it.
		if !(param >= minZipfianParam && param <= maxZipfianParam) {
			return Value{}, fmt.Errorf("zipfian parameter must be in range [%.3f, %.0f] (not %s)",
				minZipfianParam, maxZipfianParam, formatCFloat(param))
		}
		return intValue(env.Rand.Zipfian(lo, hi, param)), nil
	default:
		if param <= 0 {
			return Value{}, fmt.Errorf("exponential parameter must be greater than zero (not %s)",
				formatCFloat(param))
		}
		return intValue(env.Rand.Exponential(lo, hi, param)), nil
	}
}

// hashFnv1a is pgbench's FNV-1a over the 8 bytes of val, low byte first.
func hashFnv1a(val int64, seed uint64) int64 {
	result := uint64(fnvOffsetBasis) ^ seed
	for i := 0; i < 8; i++ {
		result ^= uint64(val & 0xff)
		val >>= 8
		result *= fnvPrime
	}
	return int64(result)
}

// hashMurmur2 is pgbench's 64-bit MurmurHash2 of one 8-byte key.
func hashMurmur2(val int64, seed uint64) int64 {
	result := seed ^ murmur2MulTimes
	k := uint64(val)
	k *= murmur2Mul
	k ^= k >> murmur2Rot
	k *= murmur2Mul
	result ^= k
	result *= murmur2Mul
	result ^= result >> murmur2Rot
	result *= murmur2Mul
	result ^= result >> murmur2Rot
	return int64(result)
}

// permute is pgbench's pseudorandom permutation of [0, size): six rounds
// of keyed bijections on overlapping power-of-two halves plus a random
// offset, driven by a generator seeded with seed.
func permute(val, isize, seed int64) int64 {
	if isize < 2 {
		return 0
	}
	var rng Rand
	rng.Seed(uint64(seed))
	size := uint64(isize)
	v := uint64(val) % size
	masklen := bits.Len64(size) - 1
	mask := uint64(1)<<masklen - 1
	for i := 0; i < 6; i++ {
		m := rng.Uint64()&mask | 1
		r := rng.Uint64() & mask
		if v <= mask {
			v = (v*m ^ r) & mask
			v = (v<<1)&mask | v>>(masklen-1)
		}
		m = rng.Uint64()&mask | 1
		r = rng.Uint64() & mask
		t := size - 1 - v
		if t <= mask {
			t = (t*m ^ r) & mask
			t = (t<<1)&mask | t>>(masklen-1)
			v = size - 1 - t
		}
		r = rng.Uint64Range(0, size-1)
		v = (v + r) % size
	}
	return int64(v)
}
