package script

import (
	"math"
	"math/big"
)

// cSin is C's sin, like cExp, cLog and cPow (cmath.go): computed in
// double-double and rounded once, which gives glibc's result wherever
// glibc is correctly rounded. Go's math.Sin differs from glibc's in the
// last bit for about a fifth of arguments.

var (
	pio2Parts [4]float64 // π/2 = Σ pio2Parts, to about 200 bits
	invFact   [29]dd     // 1/n!
)

const piDigits = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651328230664709384460955058223172535940812848111745"

func init() {
	v, _, err := big.ParseFloat(piDigits, 10, 400, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	v.Quo(v, big.NewFloat(2))
	for i := range pio2Parts {
		pio2Parts[i], _ = v.Float64()
		v.Sub(v, new(big.Float).SetPrec(400).SetFloat64(pio2Parts[i]))
	}
	invFact[0] = dd{1, 0}
	for n := 1; n < len(invFact); n++ {
		invFact[n] = ddDiv(invFact[n-1], dd{float64(n), 0})
	}
}

// cSin is C's sin for |x| < 2^20 (math.Sin beyond, where pgbench never
// calls it).
func cSin(x float64) float64 {
	if !(math.Abs(x) < 1<<20) || x == 0 {
		return math.Sin(x)
	}
	// x = k·π/2 + r, |r| <= π/4; π/2 in four parts keeps r exact to
	// about 100 bits even where x is close to a multiple of π/2.
	k := math.Round(x / (math.Pi / 2))
	r := ddAdd(dd{x, 0}, twoProd(pio2Parts[0], -k))
	r = ddAdd(r, twoProd(pio2Parts[1], -k))
	r = ddAdd(r, twoProd(pio2Parts[2], -k))
	r = ddAdd(r, dd{-pio2Parts[3] * k, 0})
	r2 := ddMul(r, r)
	var v dd
	if int64(k)&1 == 0 { // sin r = r·Σ (-r²)^n/(2n+1)!
		v = invFact[27]
		for n := 25; n >= 1; n -= 2 {
			v = ddAdd(ddNeg(ddMul(v, r2)), invFact[n])
		}
		v = ddMul(v, r)
	} else { // cos r = Σ (-r²)^n/(2n)!
		v = invFact[28]
		for n := 26; n >= 0; n -= 2 {
			v = ddAdd(ddNeg(ddMul(v, r2)), invFact[n])
		}
	}
	if int64(k)&2 != 0 {
		v = ddNeg(v)
	}
	return v.hi + v.lo
}
