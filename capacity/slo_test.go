package capacity

import (
	"strings"
	"testing"
)

func TestParseSLO(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in     string
		metric string
		op     string
		bound  float64
		err    string // a part of the error; "" when it parses
	}{
		{"p99<50ms", "p99", "<", 50_000, ""},
		{" p95 <= 20ms ", "p95", "<=", 20_000, ""},
		{"p99.9<1s", "p99.9", "<", 1e6, ""},
		{"P50<250us", "p50", "<", 250, ""},
		{"max<2.5ms", "max", "<", 2500, ""},
		{"failed<0.1%", "failed", "<", 0.001, ""},
		{"failed<=0%", "failed", "<=", 0, ""},
		// What a user gets wrong, each told what to write.
		{"p99", "", "", 0, "want METRIC<BOUND"},
		{"p99>50ms", "", "", 0, "upper bound"},
		{"p98<50ms", "", "", 0, "unknown metric"},
		{"p99<50", "", "", 0, "unit"},
		{"p99<", "", "", 0, "no bound"},
		{"p99<-5ms", "", "", 0, "above 0"},
		{"p99<0ms", "", "", 0, "above 0"},
		{"failed<0.1", "", "", 0, "percentage"},
		{"failed<120%", "", "", 0, "from 0 to 100"},
		{"failed<0%", "", "", 0, "failed<=0%"},
		{"p99<2h", "", "", 0, "unit"},
		{"p99<5000s", "", "", 0, "above an hour"},
	} {
		o, err := ParseSLO(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSLO(%q) = %+v, %v; want an error with %q", c.in, o, err, c.err)
			}
			continue
		}
		if err != nil || o.Metric != c.metric || o.Op != c.op || o.Bound != c.bound {
			t.Errorf("ParseSLO(%q) = %+v, %v; want %s %s %v", c.in, o, err, c.metric, c.op, c.bound)
		}
	}
}

// FuzzParseSLO: any text either parses to a usable objective or is
// refused with the flag's text in the message; never a panic.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"p99<50ms", "failed<0.1%", "p99.9<=1s", "max<1us", "p50<1e3ms", "failed<=0%", "p99<NaNms", "<", "p99<<5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseSLO(s)
		if err != nil {
			if !strings.Contains(err.Error(), "--slo") {
				t.Errorf("error %q does not name the flag", err)
			}
			return
		}
		if o.Bound < 0 || o.Bound != o.Bound || (o.Metric == "failed" && o.Bound > 1) {
			t.Errorf("ParseSLO(%q) = %+v: a bound out of range", s, o)
		}
		if _, ok := sloMetrics[o.Metric]; !ok || (o.Op != "<" && o.Op != "<=") {
			t.Errorf("ParseSLO(%q) = %+v: unknown metric or operator", s, o)
		}
	})
}
