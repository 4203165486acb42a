package capacity

import (
	"errors"
	"math"
	"testing"
)

// schwartzExample is the published example of the USL literature: the
// 32 measurements of Baron Schwartz's "Practical Scalability Analysis
// with the Universal Scalability Law" that codahale/usl's tests fit,
// with its published coefficients (σ=0.02671591, κ=7.690945e-4,
// λ=995.6486, peak 12,341.7/s at N=35).
var schwartzExample = []Point{
	{1, 955.16}, {2, 1878.91}, {3, 2688.01}, {4, 3548.68}, {5, 4315.54}, {6, 5130.43}, {7, 5931.37}, {8, 6531.08},
	{9, 7219.8}, {10, 7867.61}, {11, 8278.71}, {12, 8646.7}, {13, 9047.84}, {14, 9426.55}, {15, 9645.37}, {16, 9897.24},
	{17, 10097.6}, {18, 10240.5}, {19, 10532.39}, {20, 10798.52}, {21, 11151.43}, {22, 11518.63}, {23, 11806}, {24, 12089.37},
	{25, 12075.41}, {26, 12177.29}, {27, 12211.41}, {28, 12158.93}, {29, 12155.27}, {30, 12118.04}, {31, 12140.4}, {32, 12074.39},
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestFitUSLPublishedExample(t *testing.T) {
	t.Parallel()
	u, err := FitUSL(schwartzExample)
	if err != nil {
		t.Fatal(err)
	}
	// The book's and codahale/usl's values agree to 0.02 %; a least
	// squares of our own should land within 0.5 % of them.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"σ", u.Sigma, 0.02671591},
		{"κ", u.Kappa, 7.690945e-4},
		{"λ", u.Lambda, 995.6486},
		{"X(20)", u.Throughput(20), 11063.63312570436},
	} {
		if !near(c.got, c.want, 0.005) {
			t.Errorf("%s = %.7g, want %.7g (±0.5 %%)", c.name, c.got, c.want)
		}
	}
	n, x, ok := u.Peak()
	if !ok || math.Floor(n) != 35 || !near(x, 12341.745415132369, 0.005) {
		t.Errorf("peak = %.4g/s at N=%.2f (ok %v), want 12341.7/s at N=35.x", x, n, ok)
	}
	if u.R2 < 0.99 {
		t.Errorf("R² = %.4f, want ≥ 0.99 on the book's data", u.R2)
	}
	t.Logf("fit: %v, peak %.1f/s at %.2f", u, x, n)
}

// TestFitUSLSmallExample fits the README's seven-point example of
// codahale/usl: σ=0.0277299, κ=0.000104343, λ=89.9878, peak ≈ 1,883.76
// at 96 clients.
func TestFitUSLSmallExample(t *testing.T) {
	t.Parallel()
	u, err := FitUSL([]Point{{1, 65}, {18, 996}, {36, 1652}, {72, 1853}, {108, 1829}, {144, 1775}, {216, 1702}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(u.Sigma, 0.0277299, 0.01) || !near(u.Kappa, 0.000104343, 0.01) || !near(u.Lambda, 89.9878, 0.01) {
		t.Errorf("fit %v, want σ=0.0277299 κ=0.000104343 λ=89.9878 (±1 %%)", u)
	}
	if _, x, ok := u.Peak(); !ok || !near(x, 1883.76, 0.01) {
		t.Errorf("peak %.2f (ok %v), want 1883.76", x, ok)
	}
}

func TestFitUSLRefuses(t *testing.T) {
	t.Parallel()
	// Two concurrencies cannot fix three parameters.
	if _, err := FitUSL([]Point{{1, 100}, {2, 190}, {2, 191}}); !errors.Is(err, ErrFewPoints) {
		t.Errorf("two concurrencies: err %v, want ErrFewPoints", err)
	}
	// A peak far beyond the measured range is not predicted: nearly
	// linear points up to 8 clients put it around N≈100.
	u, err := FitUSL([]Point{{1, 100}, {2, 199}, {4, 396}, {8, 785}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, ok := u.Peak(); ok {
		t.Errorf("peak at N=%.1f predicted from points up to 8 (fit %v): want refused beyond 16", n, u)
	}
	if !u.Extrapolates(17) || u.Extrapolates(16) {
		t.Errorf("Extrapolates: want 16 inside, 17 beyond a measured range up to 8")
	}
}
