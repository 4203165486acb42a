package script

import (
	"math"
	"testing"
)

// chiSquareCritical approximates the chi-square quantile for df degrees of
// freedom at upper tail probability 1e-4 (Wilson–Hilferty). The samples
// use fixed seeds, so each test is deterministic; the threshold only has
// to be one a correct generator passes with a wide margin.
func chiSquareCritical(df int) float64 {
	const z = 3.719 // standard normal quantile of 1 - 1e-4
	k := float64(df)
	h := 2 / (9 * k)
	return k * math.Pow(1-h+z*math.Sqrt(h), 3)
}

// chiSquare compares observed counts with expected probabilities, merging
// adjacent bins until each expects at least 5 samples.
func chiSquare(t *testing.T, name string, counts []int, probs []float64, n int) {
	t.Helper()
	stat, df := 0.0, -1
	var got, want float64
	for k := range counts {
		got += float64(counts[k])
		want += probs[k] * float64(n)
		if want < 5 && k < len(counts)-1 {
			continue
		}
		d := got - want
		stat += d * d / want
		df++
		got, want = 0, 0
	}
	if df < 1 {
		t.Fatalf("%s: too few bins", name)
	}
	if crit := chiSquareCritical(df); stat > crit {
		t.Errorf("%s: chi-square %.1f > %.1f (df %d): counts %v", name, stat, crit, df, counts)
	}
}

// sample draws n values in [lo, hi] and counts them per value.
func sample(lo, hi int64, n int, draw func() int64) ([]int, float64, float64, bool) {
	counts := make([]int, hi-lo+1)
	var sum, sum2 float64
	for range n {
		v := draw()
		if v < lo || v > hi {
			return nil, 0, 0, false
		}
		counts[v-lo]++
		sum += float64(v)
		sum2 += float64(v) * float64(v)
	}
	mean := sum / float64(n)
	return counts, mean, sum2/float64(n) - mean*mean, true
}

func TestRandUniform(t *testing.T) {
	t.Parallel()
	const n = 200000
	r := NewRand(1)
	counts, mean, variance, ok := sample(1, 10, n, func() int64 { return r.Uniform(1, 10) })
	if !ok {
		t.Fatal("Uniform(1, 10) out of range")
	}
	probs := make([]float64, 10)
	for k := range probs {
		probs[k] = 0.1
	}
	chiSquare(t, "Uniform(1, 10)", counts, probs, n)
	// Mean 5.5 and variance (10²-1)/12 within 1%.
	if math.Abs(mean-5.5) > 0.055 || math.Abs(variance-99.0/12) > 0.0825 {
		t.Errorf("Uniform(1, 10): mean %.4f variance %.4f, want 5.5 and 8.25", mean, variance)
	}
	// A range that is not a power of two exercises the rejection loop.
	r = NewRand(2)
	counts, _, _, ok = sample(-3, 2, n, func() int64 { return r.Uniform(-3, 2) })
	if !ok {
		t.Fatal("Uniform(-3, 2) out of range")
	}
	chiSquare(t, "Uniform(-3, 2)", counts, []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}, n)
	if got := r.Uniform(7, 7); got != 7 {
		t.Errorf("Uniform(7, 7) = %d", got)
	}
	// The whole int64 range but one: no overflow.
	for range 1000 {
		r.Uniform(math.MinInt64+1, math.MaxInt64)
	}
}

func TestRandFloat64AndNormal(t *testing.T) {
	t.Parallel()
	const n = 200000
	r := NewRand(3)
	var sum, sum2 float64
	for range n {
		f := r.Float64()
		if f < 0 || f >= 1 {
			t.Fatalf("Float64() = %v", f)
		}
		sum += f
		sum2 += f * f
	}
	mean := sum / n
	if variance := sum2/n - mean*mean; math.Abs(mean-0.5) > 0.005 || math.Abs(variance-1.0/12) > 0.001 {
		t.Errorf("Float64: mean %.4f variance %.5f, want 0.5 and 0.08333", mean, variance)
	}
	sum, sum2 = 0, 0
	var sum4 float64
	for range n {
		z := r.Normal()
		sum += z
		sum2 += z * z
		sum4 += z * z * z * z
	}
	if mean, variance, kurtosis := sum/n, sum2/n, sum4/n; math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.015 || math.Abs(kurtosis-3) > 0.1 {
		t.Errorf("Normal: mean %.4f variance %.4f fourth moment %.3f, want 0, 1, 3", mean, variance, kurtosis)
	}
}

func TestRandExponential(t *testing.T) {
	t.Parallel()
	const n, bins = 200000, 20
	for _, param := range []float64{0.5, 3, 8} {
		r := NewRand(4)
		counts, _, _, ok := sample(1, bins, n, func() int64 { return r.Exponential(1, bins, param) })
		if !ok {
			t.Fatalf("Exponential(1, %d, %v) out of range", bins, param)
		}
		// The continuous variate has density param·e^(-param·x)/(1-e^(-param))
		// on [0, 1); value k covers [k/bins, (k+1)/bins).
		probs := make([]float64, bins)
		for k := range probs {
			a, b := float64(k)/bins, float64(k+1)/bins
			probs[k] = (math.Exp(-param*a) - math.Exp(-param*b)) / (1 - math.Exp(-param))
		}
		chiSquare(t, "Exponential", counts, probs, n)
	}
}

// normalCDF is Φ.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func TestRandGaussian(t *testing.T) {
	t.Parallel()
	const n, bins = 200000, 20
	for _, param := range []float64{2, 2.5, 5, 100} {
		r := NewRand(5)
		counts, mean, _, ok := sample(1, bins, n, func() int64 { return r.Gaussian(1, bins, param) })
		if !ok {
			t.Fatalf("Gaussian(1, %d, %v) out of range", bins, param)
		}
		// A standard normal truncated to [-param, param), mapped onto the bins.
		probs := make([]float64, bins)
		total := normalCDF(param) - normalCDF(-param)
		for k := range probs {
			a := -param + 2*param*float64(k)/bins
			b := -param + 2*param*float64(k+1)/bins
			probs[k] = (normalCDF(b) - normalCDF(a)) / total
		}
		chiSquare(t, "Gaussian", counts, probs, n)
		if math.Abs(mean-10.5) > 0.06 {
			t.Errorf("Gaussian(1, %d, %v): mean %.3f, want 10.5", bins, param, mean)
		}
	}
}

func TestRandZipfian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bins int64
		s    float64
		n    int
	}{
		// Near 1 the rejection method needs many tries per draw (pgbench
		// documents it as slow there), so fewer samples.
		{10, 1.001, 5000},
		{10, 1.01, 30000},
		{30, 1.07, 100000},
		{10, 1.5, 200000},
		{6, 3, 200000},
	} {
		n := tc.n
		r := NewRand(6)
		counts, _, _, ok := sample(1, tc.bins, n, func() int64 { return r.Zipfian(1, tc.bins, tc.s) })
		if !ok {
			t.Fatalf("Zipfian(1, %d, %v) out of range", tc.bins, tc.s)
		}
		// P(k) ∝ k^-s over 1..bins.
		probs := make([]float64, tc.bins)
		var norm float64
		for k := range probs {
			probs[k] = math.Pow(float64(k+1), -tc.s)
			norm += probs[k]
		}
		for k := range probs {
			probs[k] /= norm
		}
		chiSquare(t, "Zipfian", counts, probs, n)
	}
	// A range of one value, and a huge range that must still terminate.
	r := NewRand(7)
	if got := r.Zipfian(5, 5, 2); got != 5 {
		t.Errorf("Zipfian(5, 5, 2) = %d", got)
	}
	for range 1000 {
		if v := r.Zipfian(1, math.MaxInt64-1, 1.001); v < 1 {
			t.Fatalf("Zipfian over a huge range = %d", v)
		}
	}
}

func TestRandSeed(t *testing.T) {
	t.Parallel()
	a, b := NewRand(99), NewRand(99)
	for range 100 {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed, different sequences")
		}
	}
	if NewRand(1).Uint64() == NewRand(2).Uint64() {
		t.Error("different seeds, same first value")
	}
}

func TestPermuteIsBijection(t *testing.T) {
	t.Parallel()
	for _, size := range []int64{1, 2, 3, 4, 5, 7, 8, 10, 31, 64, 100, 1000, 4097} {
		for _, seed := range []int64{0, 1, -1, 42, math.MaxInt64} {
			seen := make([]bool, size)
			for v := range size {
				p := permute(v, size, seed)
				if p < 0 || p >= size || seen[p] {
					t.Fatalf("permute(%d, %d, %d) = %d: not a bijection", v, size, seed, p)
				}
				seen[p] = true
				// Values outside [0, size) are reduced as unsigned modulo size.
				if q := permute(v+size, size, seed); q != p {
					t.Fatalf("permute(%d) = %d but permute(%d) = %d", v, p, v+size, q)
				}
			}
		}
	}
}

func TestHashAndPermuteGolden(t *testing.T) {
	t.Parallel()
	// Values printed by pgbench 15's debug().
	tests := []struct{ got, want int64 }{
		{hashMurmur2(10, 5432), -5817877081768721676},
		{hashFnv1a(10, 5432), -7793829335365542153},
		{permute(12345, 100000, 42), 15762},
		{permute(-3, 7, -1), 6},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: %d, want %d", i, tt.got, tt.want)
		}
	}
}
