package script

import (
	"math"
	"math/big"
	"testing"
)

// bigSin is sin x to 200 bits by its Taylor series (|x| < 8).
func bigSin(x float64) float64 {
	const prec = 300
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	term := new(big.Float).SetPrec(prec).Set(bx)
	sum := new(big.Float).SetPrec(prec).Set(bx)
	for n := 1; n < 80; n++ {
		term.Mul(term, x2)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(-(2*n)*(2*n+1))))
		sum.Add(sum, term)
	}
	f, _ := sum.Float64()
	return f
}

// TestCSinCorrectlyRounded compares cSin with sin to 300 bits over the
// arguments pgbench's Box-Muller gives it (2π·u, u in (0, 1]), including
// ones next to multiples of π/2.
func TestCSinCorrectlyRounded(t *testing.T) {
	t.Parallel()
	r := NewRand(3)
	args := []float64{math.Pi, math.Pi / 2, 3 * math.Pi / 2, 2 * math.Pi, math.Nextafter(math.Pi, 4), 1e-300, 2.5e-10}
	for range 3000 {
		args = append(args, 2.0*math.Pi*(1.0-r.Float64()))
	}
	for _, x := range args {
		if got, want := cSin(x), bigSin(x); got != want {
			t.Errorf("cSin(%v) = %v, correctly rounded %v", x, got, want)
		}
	}
}

// exactRef are pgbench's algorithms computed with the correctly rounded
// functions only: the fast paths of Exponential, Gaussian and Zipfian must
// give the same integers.
type exactRef struct{ r *Rand }

func (e exactRef) exponential(lo, hi int64, param float64) int64 {
	u := 1.0 - e.r.Float64()
	cut := cExp(-param)
	return lo + cInt64(float64(hi-lo+1)*(-cLog(cut+float64((1.0-cut)*u))/param))
}

func (e exactRef) gaussian(lo, hi int64, param float64) int64 {
	var s float64
	for {
		s = e.r.Normal()
		if !(s < -param || s >= param) {
			break
		}
	}
	return lo + cInt64(float64(hi-lo+1)*((s+param)/(param*2.0)))
}

func (e exactRef) zipfian(lo, hi int64, s float64) int64 {
	n := hi - lo + 1
	if n <= 1 {
		return lo
	}
	b := cPow(2.0, s-1.0)
	for {
		u, v := e.r.Float64(), e.r.Float64()
		x := math.Floor(cPow(u, -1.0/(s-1.0)))
		t := cPow(1.0+1.0/x, s-1.0)
		if v*x*(t-1.0)/(b-1.0) <= t/b && x <= float64(n) {
			return lo - 1 + int64(x)
		}
	}
}

func TestDistributionsMatchExactMath(t *testing.T) {
	t.Parallel()
	for _, span := range []int64{9, 1000, 1 << 20, 1 << 36, 1 << 45, 1 << 62} {
		fast, ref := NewRand(uint64(span)), exactRef{NewRand(uint64(span))}
		for i := range 3000 {
			param := []float64{0.0001, 0.5, 2.5, 20, 700}[i%5]
			if a, b := fast.Exponential(-7, span-7, param), ref.exponential(-7, span-7, param); a != b {
				t.Fatalf("span %d draw %d: Exponential(%v) = %d, exact %d", span, i, param, a, b)
			}
			param = []float64{2, 2.0001, 3.5, 20}[i%4]
			if a, b := fast.Gaussian(1, span, param), ref.gaussian(1, span, param); a != b {
				t.Fatalf("span %d draw %d: Gaussian(%v) = %d, exact %d", span, i, param, a, b)
			}
			s := []float64{1.001, 1.07, 1.5, 3, 1000}[i%5]
			if a, b := fast.Zipfian(1, span, s), ref.zipfian(1, span, s); a != b {
				t.Fatalf("span %d draw %d: Zipfian(%v) = %d, exact %d", span, i, s, a, b)
			}
		}
	}
}

func BenchmarkRandDistributions(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(r *Rand) int64
	}{
		{"uniform", func(r *Rand) int64 { return r.Uniform(1, 100000) }},
		{"exponential", func(r *Rand) int64 { return r.Exponential(1, 100000, 2.5) }},
		{"gaussian", func(r *Rand) int64 { return r.Gaussian(1, 100000, 2.5) }},
		{"zipfian", func(r *Rand) int64 { return r.Zipfian(1, 100000, 1.07) }},
		{"exponential-2^62", func(r *Rand) int64 { return r.Exponential(1, 1<<62, 2.5) }},
		{"gaussian-2^62", func(r *Rand) int64 { return r.Gaussian(1, 1<<62, 2.5) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := NewRand(1)
			b.ReportAllocs()
			for b.Loop() {
				c.f(r)
			}
		})
	}
}
