package mariadb

import "testing"

func TestSessionStatement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		vars    map[string]string
		want    string
		wantErr bool
	}{
		{nil, "", false},
		// Numbers and DEFAULT bare (a numeric variable refuses a string),
		// anything else quoted; in name order.
		{map[string]string{"tx_isolation": "READ-COMMITTED", "innodb_lock_wait_timeout": "5", "sql_mode": "DEFAULT"},
			"SET SESSION innodb_lock_wait_timeout = 5, sql_mode = DEFAULT, tx_isolation = 'READ-COMMITTED'", false},
		{map[string]string{"long_query_time": "0.5", "x": "-3"}, "SET SESSION long_query_time = 0.5, x = -3", false},
		{map[string]string{"sql_mode": `it's \ odd`}, `SET SESSION sql_mode = 'it\'s \\ odd'`, false},
		{map[string]string{"a; DROP TABLE t": "1"}, "", true},
		{map[string]string{"": "1"}, "", true},
	}
	for _, tt := range tests {
		got, err := sessionStatement(tt.vars)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%v: got %q, %v; want %q (error %v)", tt.vars, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestIsInteger(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0": true, "42": true, "-7": true, "123456789012345678": true,
		"": false, "-": false, "007": false, "+1": false, "1.5": false, "1e3": false, "abc": false,
		"1234567890123456789": false, // may not fit: sent as a string, the server converts it
	} {
		if got := isInteger([]byte(s)); got != want {
			t.Errorf("isInteger(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNewTargetRefuses(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},                              // no address
		{Addr: "h:1", Network: "udp"},   // not a stream
		{Addr: "h:1", Mode: "extended"}, // pgbench's mode, not MySQL's
		{Addr: "h:1", Session: map[string]string{"a b": "1"}}, // not a name
	} {
		if _, err := NewTarget(cfg); err == nil {
			t.Errorf("NewTarget(%+v) accepted it", cfg)
		}
	}
}
