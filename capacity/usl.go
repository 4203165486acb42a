package capacity

import (
	"errors"
	"fmt"
	"math"
)

// Point is one measurement for the Universal Scalability Law:
// concurrency (clients busy at once) and throughput (per second).
type Point struct {
	N, X float64
}

// USL is a fit of the Universal Scalability Law,
// X(N) = λN / (1 + σ(N−1) + κN(N−1)), to measured points: Sigma is the
// contention (the serial share), Kappa the coherency cost (crosstalk),
// Lambda the throughput of one.
type USL struct {
	Sigma, Kappa, Lambda float64
	// R2 is the fit's coefficient of determination on the points.
	R2 float64
	// MinN and MaxN are the measured range of concurrency: predictions
	// beyond 2×MaxN are refused (Extrapolates).
	MinN, MaxN float64
	Points     int
}

// ErrFewPoints says a fit was asked of fewer than three distinct
// concurrencies: three parameters need at least three.
var ErrFewPoints = errors.New("the USL needs at least 3 distinct concurrencies")

// Throughput is the model's throughput at concurrency n.
func (u USL) Throughput(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// PeakN is the concurrency at which the model's throughput peaks,
// sqrt((1−σ)/κ); +Inf when κ is 0 (throughput only levels off).
func (u USL) PeakN() float64 {
	if u.Kappa <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt((1 - u.Sigma) / u.Kappa)
}

// Peak is the model's highest throughput and where: ok is false when it
// lies beyond twice the measured range, which the model does not
// predict (Extrapolates).
func (u USL) Peak() (n, x float64, ok bool) {
	n = u.PeakN()
	if u.Extrapolates(n) {
		return n, 0, false
	}
	return n, u.Throughput(n), true
}

// Extrapolates says n lies beyond twice the measured concurrency, where
// the fit says nothing worth printing.
func (u USL) Extrapolates(n float64) bool { return math.IsInf(n, 0) || n > 2*u.MaxN }

// String is the fit in a line: σ, κ, λ and R².
func (u USL) String() string {
	return fmt.Sprintf("σ=%.3g κ=%.3g λ=%.4g (R² %.2f)", u.Sigma, u.Kappa, u.Lambda, u.R2)
}

// FitUSL fits the law to the points by least squares on throughput
// (Levenberg–Marquardt, σ kept in [0, 1] and κ ≥ 0).
func FitUSL(points []Point) (USL, error) {
	var pts []Point
	distinct := map[float64]bool{}
	for _, p := range points {
		if p.N > 0 && p.X > 0 && !math.IsNaN(p.X) && !math.IsInf(p.X, 0) && !math.IsInf(p.N, 0) {
			pts = append(pts, p)
			distinct[p.N] = true
		}
	}
	if len(distinct) < 3 {
		return USL{}, fmt.Errorf("fit: %w (have %d)", ErrFewPoints, len(distinct))
	}
	u := USL{MinN: math.Inf(1), Points: len(pts)}
	lambda0 := 0.0
	for _, p := range pts {
		u.MinN, u.MaxN = min(u.MinN, p.N), max(u.MaxN, p.N)
		lambda0 = max(lambda0, p.X/p.N)
	}
	// Several starts: the surface is flat along σ–κ trade-offs, and a
	// start near the answer's scale converges in few steps.
	best, bestSS := [3]float64{}, math.Inf(1)
	for _, start := range [][3]float64{{lambda0, 0.01, 1e-4}, {lambda0, 0.1, 1e-3}, {lambda0, 0.5, 1e-2}, {lambda0, 0.001, 1e-6}} {
		p, ss := levenbergMarquardt(pts, start)
		if ss < bestSS {
			best, bestSS = p, ss
		}
	}
	u.Lambda, u.Sigma, u.Kappa = best[0], best[1], best[2]
	var meanX float64
	for _, p := range pts {
		meanX += p.X
	}
	meanX /= float64(len(pts))
	var ssTot float64
	for _, p := range pts {
		ssTot += (p.X - meanX) * (p.X - meanX)
	}
	u.R2 = 1
	if ssTot > 0 {
		u.R2 = 1 - bestSS/ssTot
	}
	return u, nil
}

// sumSquares is the residual sum of squares of the parameters
// (λ, σ, κ) on the points.
func sumSquares(pts []Point, p [3]float64) float64 {
	u := USL{Lambda: p[0], Sigma: p[1], Kappa: p[2]}
	var ss float64
	for _, pt := range pts {
		r := pt.X - u.Throughput(pt.N)
		ss += r * r
	}
	return ss
}

// levenbergMarquardt minimises the residuals from start, returning the
// parameters (λ, σ, κ) and their residual sum of squares.
func levenbergMarquardt(pts []Point, p [3]float64) ([3]float64, float64) {
	ss := sumSquares(pts, p)
	damping := 1e-3
	for iter := 0; iter < 500; iter++ {
		// J^T J and J^T r, with the model's derivatives.
		var jtj [3][3]float64
		var jtr [3]float64
		for _, pt := range pts {
			n := pt.N
			d := 1 + p[1]*(n-1) + p[2]*n*(n-1)
			f := p[0] * n / d
			g := [3]float64{n / d, -f * (n - 1) / d, -f * n * (n - 1) / d}
			r := pt.X - f
			for i := range 3 {
				jtr[i] += g[i] * r
				for j := range 3 {
					jtj[i][j] += g[i] * g[j]
				}
			}
		}
		improved := false
		for try := 0; try < 30; try++ {
			var a [3][3]float64
			for i := range 3 {
				a[i] = jtj[i]
				a[i][i] += damping * max(jtj[i][i], 1e-300)
			}
			step, ok := solve3(a, jtr)
			if !ok {
				damping *= 10
				continue
			}
			next := [3]float64{p[0] + step[0], min(max(p[1]+step[1], 0), 1), max(p[2]+step[2], 0)}
			if next[0] <= 0 {
				damping *= 10
				continue
			}
			if nss := sumSquares(pts, next); nss < ss {
				rel := (ss - nss) / max(ss, 1e-300)
				p, ss = next, nss
				damping = max(damping/10, 1e-12)
				improved = true
				if rel < 1e-14 {
					return p, ss
				}
				break
			}
			damping *= 10
		}
		if !improved {
			break
		}
	}
	return p, ss
}

// solve3 solves a 3×3 linear system by Gaussian elimination with partial
// pivoting; ok is false when it is singular.
func solve3(a [3][3]float64, b [3]float64) ([3]float64, bool) {
	for col := range 3 {
		pivot := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[pivot][col]) {
				pivot = r
			}
		}
		if math.Abs(a[pivot][col]) < 1e-300 {
			return [3]float64{}, false
		}
		a[col], a[pivot] = a[pivot], a[col]
		b[col], b[pivot] = b[pivot], b[col]
		for r := col + 1; r < 3; r++ {
			f := a[r][col] / a[col][col]
			for c := col; c < 3; c++ {
				a[r][c] -= f * a[col][c]
			}
			b[r] -= f * b[col]
		}
	}
	var x [3]float64
	for r := 2; r >= 0; r-- {
		s := b[r]
		for c := r + 1; c < 3; c++ {
			s -= a[r][c] * x[c]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}
