package benchkit

import (
	"errors"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    []float64
		want float64
	}{
		{nil, 0},                     // no runs
		{[]float64{3, 1, 2}, 2},      // odd: the middle one, whatever the order
		{[]float64{4, 1, 3, 2}, 2.5}, // even: the mean of the two middle ones
	}
	for _, test := range tests {
		if got := Median(test.v); got != test.want {
			t.Errorf("Median(%v) = %v, want %v", test.v, got, test.want)
		}
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	got, err := Threads("1, 2")
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf(`Threads("1, 2") = %v, %v`, got, err)
	}
	for _, bad := range []string{"0", "x", "1,"} {
		if _, err := Threads(bad); err == nil || !strings.Contains(err.Error(), "not a thread count") {
			t.Errorf("Threads(%q) error = %v", bad, err)
		}
	}
}

// The tool goes first in odd pairs and second in even ones, every pair is
// printed with its ratio, and the medians follow.
func TestRunPairsAlternatesAndPrints(t *testing.T) {
	t.Parallel()
	c := Comparison{Tool: "pgbench", Rate: "tps", RateVerb: "%.1f", CPUVerb: "%.1f", Unit: "tx", UnitName: "tx"}
	var order []string
	tool := func() (Measure, error) {
		order = append(order, "tool")
		return Measure{Rate: 100, CPUPerUnit: 10, WaitsPerUnit: 0.5}, nil
	}
	fd := func() (Measure, error) {
		order = append(order, "fd")
		return Measure{Rate: 90, CPUPerUnit: 5, WaitsPerUnit: 0.25}, nil
	}
	var out strings.Builder
	if err := c.RunPairs(&out, 3, ">= 0.95", tool, fd); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, " "), "tool fd fd tool tool fd"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
	want := "  pair 1: pgbench 100.0 tps (10.0 µs CPU, 0.500 waits/tx)   firedrill 90.0 tps (5.0 µs CPU, 0.250 waits/tx)   ratio 0.900\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("first line:\n%s\nwant:\n%s", out.String(), want)
	}
	median := "  median ratio firedrill/pgbench: 0.900 (target >= 0.95); median client CPU per tx: pgbench 10.0 µs, firedrill 5.0 µs; blocking waits: pgbench 0.500, firedrill 0.250\n\n"
	if !strings.HasSuffix(out.String(), median) {
		t.Errorf("output:\n%s\nwant it to end with:\n%s", out.String(), median)
	}

	failing := func() (Measure, error) { return Measure{}, errors.New("no tps") }
	if err := c.RunPairs(&out, 1, "", failing, fd); err == nil {
		t.Error("a failed run did not end the pairs")
	}
}
