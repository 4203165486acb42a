package script

import "math"

// pgbench computes exp, ln and pow with glibc, whose results are correctly
// rounded in all but rare cases; Go's math package is accurate to about
// one ulp, and its Pow loses more for large exponents (it squares
// repeatedly). Printed with 15 significant digits, a one-ulp difference
// shows often enough to matter for a drop-in pgbench, so these three are
// computed here in double-double arithmetic (about 106 bits) and rounded
// once.

// dd is an unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s = quickTwoSum(s.hi, s.lo+t.hi)
	return quickTwoSum(s.hi, s.lo+t.lo)
}

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

func ddMul(a, b dd) dd {
	p := twoProd(a.hi, b.hi)
	return quickTwoSum(p.hi, p.lo+(a.hi*b.lo+a.lo*b.hi))
}

func ddMulF(a dd, b float64) dd {
	p := twoProd(a.hi, b)
	return quickTwoSum(p.hi, p.lo+a.lo*b)
}

func ddDiv(a, b dd) dd {
	q1 := a.hi / b.hi
	r := ddAdd(a, ddNeg(ddMulF(b, q1)))
	q2 := r.hi / b.hi
	r = ddAdd(r, ddNeg(ddMulF(b, q2)))
	q3 := r.hi / b.hi
	return ddAdd(quickTwoSum(q1, q2), dd{q3, 0})
}

// ln2dd is ln 2 to about 107 bits.
var ln2dd = dd{0.6931471805599453, 2.3190468138462996e-17}

// invOdd[k] is 1/(2k+1) in double-double, for ddLog's series.
var invOdd = func() (t [24]dd) {
	for k := range t {
		t[k] = ddDiv(dd{1, 0}, dd{float64(2*k + 1), 0})
	}
	return t
}()

// invFactorial[n] is 1/n! in double-double, for ddExpRound's series.
var invFactorial = func() (t [12]dd) {
	t[0] = dd{1, 0}
	for n := 1; n < len(t); n++ {
		t[n] = ddDiv(t[n-1], dd{float64(n), 0})
	}
	return t
}()

// ddLog is the natural logarithm of a finite x > 0 in double-double.
func ddLog(x float64) dd {
	m, e := math.Frexp(x) // x = m·2^e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	// ln m = 2·atanh(s) = 2s(1 + s²/3 + s⁴/5 + …), s = (m-1)/(m+1),
	// |s| < 0.172, summed by Horner's rule over the terms above 2^-110.
	s := ddDiv(dd{m - 1, 0}, twoSum(m, 1)) // m-1 is exact
	sum := s
	if s.hi != 0 {
		s2 := ddMul(s, s)
		k := 1
		for p := s2.hi; p > 0x1p-110 && k < len(invOdd)-1; p *= s2.hi {
			k++
		}
		poly := invOdd[k]
		for k--; k >= 0; k-- {
			poly = ddAdd(ddMul(poly, s2), invOdd[k])
		}
		sum = ddMul(s, poly)
	}
	return ddAdd(ddMulF(ln2dd, float64(e)), ddMulF(sum, 2))
}

// ddExpRound returns e^t rounded to a float64.
func ddExpRound(t dd) float64 {
	switch {
	case t.hi != t.hi:
		return math.NaN()
	case t.hi > 710:
		return math.Inf(1)
	case t.hi < -746:
		return 0
	}
	k := math.Round(t.hi / ln2dd.hi)
	r := ddAdd(t, ddNeg(ddMulF(ln2dd, k))) // |r| <= ln2/2
	const halvings = 10
	r = dd{r.hi / (1 << halvings), r.lo / (1 << halvings)}
	// e^r - 1 = r(1 + r/2! + r²/3! + …) by Horner's rule (|r| < 2^-11:
	// eleven terms reach 2^-120), then squared back up as
	// e^2r - 1 = (e^r - 1)(e^r - 1 + 2), which keeps the small part exact.
	poly := invFactorial[len(invFactorial)-1]
	for n := len(invFactorial) - 2; n >= 1; n-- {
		poly = ddAdd(ddMul(poly, r), invFactorial[n])
	}
	em1 := ddMul(r, poly)
	for range halvings {
		em1 = ddMul(em1, ddAdd(em1, dd{2, 0}))
	}
	res := ddAdd(em1, dd{1, 0})
	return math.Ldexp(res.hi, int(k))
}

// cExp is C's exp.
func cExp(x float64) float64 {
	if math.IsInf(x, 0) || x != x {
		return math.Exp(x)
	}
	return ddExpRound(dd{x, 0})
}

// cLog is C's log.
func cLog(x float64) float64 {
	if x <= 0 || math.IsInf(x, 0) || x != x {
		return math.Log(x) // -Inf for 0, NaN for negatives, and the special values
	}
	if x == 1 {
		return 0
	}
	l := ddLog(x)
	return l.hi
}

// cPow is C's pow.
func cPow(x, y float64) float64 {
	if x == 0 || y == 0 || x == 1 || x != x || y != y || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return math.Pow(x, y) // the special cases, as C99 Annex F defines them
	}
	negate := false
	if x < 0 {
		if y != math.Trunc(y) {
			return math.NaN()
		}
		negate = math.Abs(y) < 1<<53 && math.Mod(y, 2) != 0
		x = -x
	}
	r := ddExpRound(ddMulF(ddLog(x), y))
	if negate {
		r = -r
	}
	return r
}
