package script

import (
	"math"
	"math/bits"
)

// Rand is one client's pseudorandom generator: PostgreSQL's pg_prng
// (xoroshiro128** seeded through splitmix64) with pgbench's algorithms for
// the distributions, so the same seed gives the same draws as pg_prng
// would. It is not safe for concurrent use; each client owns one.
type Rand struct {
	s0, s1 uint64
}

// NewRand returns a generator seeded as pg_prng_seed(seed) does.
func NewRand(seed uint64) *Rand {
	r := new(Rand)
	r.Seed(seed)
	return r
}

func splitmix64(state *uint64) uint64 {
	*state += 0x9E3779B97F4A7C15
	v := *state
	v = (v ^ v>>30) * 0xBF58476D1CE4E5B9
	v = (v ^ v>>27) * 0x94D049BB133111EB
	return v ^ v>>31
}

// Seed resets the generator as pg_prng_seed does.
func (r *Rand) Seed(seed uint64) {
	r.s0 = splitmix64(&seed)
	r.s1 = splitmix64(&seed)
	if r.s0 == 0 && r.s1 == 0 {
		// All zeroes is a fixed point; pg_prng substitutes Knuth's LCG constants.
		r.s0, r.s1 = 0x5851F42D4C957F2D, 0x14057B7EF767814F
	}
}

// Uint64 returns a uniformly distributed 64-bit number (pg_prng_uint64).
func (r *Rand) Uint64() uint64 {
	s0 := r.s0
	sx := r.s1 ^ s0
	val := bits.RotateLeft64(s0*5, 7) * 9
	r.s0 = bits.RotateLeft64(s0, 24) ^ sx ^ sx<<16
	r.s1 = bits.RotateLeft64(sx, 37)
	return val
}

// Uint64Range returns a uniform number in [lo, hi] by bitmask rejection
// (pg_prng_uint64_range); an empty range gives lo.
func (r *Rand) Uint64Range(lo, hi uint64) uint64 {
	if hi <= lo {
		return lo
	}
	span := hi - lo
	shift := uint(bits.LeadingZeros64(span))
	for {
		v := r.Uint64() >> shift
		if v <= span {
			return lo + v
		}
	}
}

// Float64 returns a uniform double in [0, 1) with 52 random bits
// (pg_prng_double).
func (r *Rand) Float64() float64 {
	return float64(r.Uint64()>>12) * 0x1p-52
}

// Normal returns a standard normal variate by the basic Box-Muller
// transform (pg_prng_double_normal), with C's log and sin.
func (r *Rand) Normal() float64 {
	u1 := 1.0 - r.Float64()
	u2 := 1.0 - r.Float64()
	return exactNormal(u1, u2)
}

// The distributions below give pgbench's integers exactly although they
// pass through log, exp, pow and sin, whose last bit Go's math package and
// glibc's libm round differently. Each draw is computed with Go's math
// (fast) and, only where the integer it yields or a rejection decision
// lies within mathTol (relative, far above the libraries' differences) of
// a boundary, again from the same uniform draws with the correctly
// rounded cLog, cExp, cPow and cSin (cmath.go, crmath.go), which are
// glibc's results wherever glibc is correctly rounded (all but about
// 0.1 % of arguments). With a range under 2^32 the slow path runs about
// once in a million draws; with spans near 2^63 it runs every time.
const mathTol = 0x1p-40

// nearInt reports whether the non-negative f lies within tol of an
// integer, where truncation could go either way.
func nearInt(f, tol float64) bool {
	return math.Floor(f-tol) != math.Floor(f+tol)
}

func exactNormal(u1, u2 float64) float64 {
	return math.Sqrt(-2.0*cLog(u1)) * cSin(2.0*math.Pi*u2)
}

// Uniform returns a uniform integer in [lo, hi] (pgbench's getrand). hi-lo
// must not overflow an int64.
func (r *Rand) Uniform(lo, hi int64) int64 {
	return lo + int64(r.Uint64Range(0, uint64(hi-lo)))
}

// Exponential returns an integer in [lo, hi] whose density decays as
// exp(-param·x) over the range, cut off so that the last value's density
// is exp(-param) of the first (pgbench's getExponentialRand). param > 0.
func (r *Rand) Exponential(lo, hi int64, param float64) int64 {
	uniform := 1.0 - r.Float64() // (0, 1]
	n := float64(hi - lo + 1)
	// float64() keeps the compiler from fusing the multiply-add (FMA on
	// arm64, amd64 v3): pgbench's C rounds the product first.
	cut := math.Exp(-param)
	x := -math.Log(cut+float64((1.0-cut)*uniform)) / param
	f := n * x
	// cut's error moves the logarithm by at most mathTol.
	if nearInt(f, n*(mathTol/param+x*mathTol)) {
		cut = cExp(-param)
		x = -cLog(cut+float64((1.0-cut)*uniform)) / param
		f = n * x
	}
	return lo + cInt64(f)
}

// Gaussian returns an integer in [lo, hi] from a normal distribution
// centred on the middle of the range and truncated at ±param standard
// deviations (pgbench's getGaussianRand). param >= 2.
func (r *Rand) Gaussian(lo, hi int64, param float64) int64 {
	n := float64(hi - lo + 1)
	for {
		u1 := 1.0 - r.Float64()
		u2 := 1.0 - r.Float64()
		stdev := math.Sqrt(-2.0*math.Log(u1)) * math.Sin(2.0*math.Pi*u2)
		tol := math.Abs(stdev)*mathTol + 0x1p-1000
		exact := math.Abs(stdev+param) <= tol || math.Abs(stdev-param) <= tol
		if exact {
			stdev = exactNormal(u1, u2)
		}
		if stdev < -param || stdev >= param {
			continue
		}
		x := (stdev + param) / (param * 2.0) // [0, 1)
		f := n * x
		if !exact && nearInt(f, n*(tol/(param*2.0)+x*mathTol)) {
			stdev = exactNormal(u1, u2)
			x = (stdev + param) / (param * 2.0)
			f = n * x
		}
		return lo + cInt64(f)
	}
}

// Zipfian returns an integer in [lo, hi] where value lo+k-1 has
// probability proportional to 1/k^s, by Devroye's rejection method as
// pgbench ≥ 13 does (computeIterativeZipfian). 1.001 <= s <= 1000.
func (r *Rand) Zipfian(lo, hi int64, s float64) int64 {
	n := hi - lo + 1
	return lo - 1 + r.iterativeZipfian(n, s)
}

func (r *Rand) iterativeZipfian(n int64, s float64) int64 {
	if n <= 1 {
		return 1
	}
	fn := float64(n)
	b := math.Pow(2.0, s-1.0)
	bExact := false
	for {
		u := r.Float64()
		v := r.Float64()
		p := math.Pow(u, -1.0/(s-1.0))
		if p > 0x1p64 {
			continue // beyond any n, in either library: rejected
		}
		if nearInt(p, p*mathTol) {
			p = cPow(u, -1.0/(s-1.0))
		}
		x := math.Floor(p)
		if x > fn {
			continue
		}
		t := math.Pow(1.0+1.0/x, s-1.0)
		lhs, rhs := v*x*(t-1.0)/(b-1.0), t/b
		// t-1 and b-1 magnify the libraries' differences in t and b.
		if tol := mathTol * (t/(t-1.0) + b/(b-1.0) + 4) * max(lhs, rhs); math.Abs(lhs-rhs) <= tol || tol != tol {
			if !bExact {
				b, bExact = cPow(2.0, s-1.0), true
			}
			t = cPow(1.0+1.0/x, s-1.0)
			lhs, rhs = v*x*(t-1.0)/(b-1.0), t/b
		}
		if lhs <= rhs {
			return int64(x)
		}
	}
}

// Poisson returns a non-negative integer such that the values average
// center (pgbench's getPoissonRand, used to schedule transactions under
// --rate).
func (r *Rand) Poisson(center float64) int64 {
	uniform := 1.0 - r.Float64()
	f := float64(-math.Log(uniform)*center) + 0.5 // no FMA, as in C
	if nearInt(f, f*mathTol) {
		f = float64(-cLog(uniform)*center) + 0.5
	}
	return cInt64(f)
}
