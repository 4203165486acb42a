package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLO is one service-level objective a step must meet: a latency
// percentile, the maximum or the share of failed transactions
// below a bound ("p99<50ms", "failed<0.1%").
type SLO struct {
	Text   string  // as written
	Metric string  // p50, p90, p95, p99, p99.9, max, failed
	Op     string  // < or <=
	Bound  float64 // µs for latencies, a ratio (0..1) for failed
}

// sloMetrics are the metrics an SLO may name, with the quantile of the
// latency percentiles (-1: not a percentile).
var sloMetrics = map[string]float64{
	"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p99.9": 0.999,
	"max": -1, "failed": -1,
}

// sloExample is what a parse error suggests.
const sloExample = "as in --slo 'p99<50ms' or --slo 'failed<0.1%'"

// ParseSLO reads one --slo: METRIC<BOUND or METRIC<=BOUND, a latency
// metric with a unit (us, µs, ms, s) or failed with a percentage.
func ParseSLO(text string) (SLO, error) {
	s := strings.ReplaceAll(strings.TrimSpace(text), " ", "")
	i := strings.IndexAny(s, "<>=!")
	if i <= 0 {
		return SLO{}, fmt.Errorf("--slo %q: want METRIC<BOUND, %s", text, sloExample)
	}
	metric, rest := strings.ToLower(s[:i]), s[i:]
	op := "<"
	switch {
	case strings.HasPrefix(rest, "<="):
		op, rest = "<=", rest[2:]
	case strings.HasPrefix(rest, "<"):
		rest = rest[1:]
	default:
		return SLO{}, fmt.Errorf("--slo %q: an objective is an upper bound: use < or <=, %s", text, sloExample)
	}
	if _, ok := sloMetrics[metric]; !ok {
		return SLO{}, fmt.Errorf("--slo %q: unknown metric %q; known: p50, p90, p95, p99, p99.9, max (latencies), failed (share of transactions)", text, metric)
	}
	if rest == "" {
		return SLO{}, fmt.Errorf("--slo %q: no bound after %s, %s", text, op, sloExample)
	}
	slo := SLO{Text: strings.TrimSpace(text), Metric: metric, Op: op}
	if metric == "failed" {
		num, ok := strings.CutSuffix(rest, "%")
		if !ok {
			return SLO{}, fmt.Errorf("--slo %q: give failed as a percentage, as in failed<0.1%%", text)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 100 {
			return SLO{}, fmt.Errorf("--slo %q: %q is not a percentage from 0 to 100", text, rest)
		}
		if v == 0 && op == "<" {
			return SLO{}, fmt.Errorf("--slo %q: no share is below 0%%; write failed<=0%% for none at all", text)
		}
		slo.Bound = v / 100
		return slo, nil
	}
	d, err := parseLatency(rest)
	if err != nil {
		return SLO{}, fmt.Errorf("--slo %q: %w", text, err)
	}
	if d <= 0 {
		return SLO{}, fmt.Errorf("--slo %q: a latency bound must be above 0", text)
	}
	slo.Bound = d
	return slo, nil
}

// parseLatency reads a duration with its unit, in µs.
func parseLatency(s string) (float64, error) {
	units := []struct {
		suffix string
		us     float64
	}{{"us", 1}, {"µs", 1}, {"ms", 1e3}, {"s", 1e6}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok || num == "" {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		if v < 0 {
			return 0, fmt.Errorf("%q: a latency bound must be above 0", s)
		}
		if v*u.us > float64(time.Hour/time.Microsecond) {
			return 0, fmt.Errorf("%q: a latency bound above an hour is no objective", s)
		}
		return v * u.us, nil
	}
	return 0, fmt.Errorf("%q is not a latency with its unit (us, µs, ms, s), %s", s, sloExample)
}

// Measured returns the step's value of the SLO's metric, in its unit.
func (o SLO) Measured(m Measure) float64 {
	switch o.Metric {
	case "failed":
		return m.FailedRatio()
	case "max":
		return float64(m.MaxUS)
	}
	return float64(m.Quantile(sloMetrics[o.Metric]))
}

// Met says whether the step meets the objective, and what it measured,
// in words ("p99 47.2 ms").
func (o SLO) Met(m Measure) (bool, string) {
	v := o.Measured(m)
	ok := v < o.Bound || (o.Op == "<=" && v == o.Bound)
	if m.Count == 0 && o.Metric != "failed" {
		return false, o.Metric + " unmeasured (no transaction succeeded)"
	}
	if o.Metric == "failed" {
		return ok, fmt.Sprintf("failed %s", pct(v))
	}
	return ok, fmt.Sprintf("%s %s", o.Metric, ms(v))
}

// String is the objective as written.
func (o SLO) String() string { return o.Text }

// pct formats a ratio as a percentage.
func pct(r float64) string {
	switch {
	case r == 0:
		return "0 %"
	case r < 0.001:
		return fmt.Sprintf("%.3f %%", 100*r)
	case r < 0.1:
		return fmt.Sprintf("%.2f %%", 100*r)
	}
	return fmt.Sprintf("%.1f %%", 100*r)
}

// ms formats µs as milliseconds with a sensible precision.
func ms(us float64) string {
	v := us / 1000
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}
