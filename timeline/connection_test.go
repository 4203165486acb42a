package timeline

import "testing"

// Connection failures come from the target's classification when the
// interval has it, and from PostgreSQL's codes in runs recorded before.
func TestIntervalConnectionFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		iv   Interval
		want int64
		conn map[string]bool // code → ConnectionCode
	}{
		{"legacy: class 08 and 57P0x by code, 53300 not",
			Interval{Errors: map[string]int64{"08006": 2, "57P01": 1, "53300": 5, "22012": 7}}, 3,
			map[string]bool{"08006": true, "57P01": true, "53300": false, "22012": false}},
		{"classified: refused, unavailable and lost, whatever their codes",
			Interval{Errors: map[string]int64{"53300": 5, "08001": 1, "1040": 2, "22012": 7},
				Refused: map[string]int64{"53300": 5, "1040": 2}, Unavailable: map[string]int64{"08001": 1}}, 8,
			map[string]bool{"53300": true, "1040": true, "08001": true, "22012": false}},
		{"classified, an 08006 the target did not call a connection's",
			Interval{Errors: map[string]int64{"08006": 1, "57P01": 3}, Lost: map[string]int64{"57P01": 3}}, 3,
			map[string]bool{"08006": false, "57P01": true}},
		{"no errors", Interval{}, 0, nil},
	} {
		if got := tc.iv.ConnectionFailures(); got != tc.want {
			t.Errorf("%s: ConnectionFailures = %d, want %d", tc.name, got, tc.want)
		}
		for code, want := range tc.conn {
			if got := tc.iv.ConnectionCode(code); got != want {
				t.Errorf("%s: ConnectionCode(%s) = %v, want %v", tc.name, code, got, want)
			}
		}
	}
}
