package script

import (
	"strings"
	"testing"
)

func TestSplitWeight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg        string
		wantName   string
		wantWeight int
		wantErr    string
	}{
		{"bench.sql", "bench.sql", 1, ""},                 // no weight: 1
		{"bench.sql@9", "bench.sql", 9, ""},               // a weight
		{"tpcb-like@3", "tpcb-like", 3, ""},               // a builtin
		{"a@b.sql@2", "a@b.sql", 2, ""},                   // the last @ separates
		{"x@0", "x", 0, ""},                               // zero is allowed, as in pgbench
		{"x@ +7", "x", 7, ""},                             // strtol's whitespace and sign
		{"x@2147483647", "x", 2147483647, ""},             // INT_MAX
		{"x@", "", 0, "invalid weight specification"},     // nothing after @
		{"x@1.5", "", 0, "invalid weight specification"},  // not an integer
		{"x@3 ", "", 0, "invalid weight specification"},   // trailing garbage
		{"x@-1", "", 0, "out of range"},                   // negative
		{"x@2147483648", "", 0, "out of range"},           // beyond INT_MAX
		{"x@99999999999999999999", "", 0, "out of range"}, // beyond int64
	}
	for _, tt := range tests {
		name, weight, err := SplitWeight(tt.arg)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SplitWeight(%q) error = %v, want %q", tt.arg, err, tt.wantErr)
			}
			continue
		}
		if err != nil || name != tt.wantName || weight != tt.wantWeight {
			t.Errorf("SplitWeight(%q) = %q, %d, %v; want %q, %d", tt.arg, name, weight, err, tt.wantName, tt.wantWeight)
		}
	}
}
