package redisevent

import "testing"

func TestServerWide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sub string
		want      bool
	}{
		{"flushdb", "", true},
		{"FlushAll", "ASYNC", true},
		{"SELECT", "3", true},
		{"CONFIG", "set", true},
		{"CONFIG", "GET", false},
		{"CLIENT", "SETNAME", false},
		{"CLIENT", "kill", true},
		{"CLIENT", "", true}, // the subcommand is a variable
		{"", "", true},       // so is the name
		{"SET", "k", false},
		{"GET", "", false},
		{"DEL", "firedrill:x", false},
	}
	for _, tt := range tests {
		if what, got := ServerWide(tt.name, tt.sub); got != tt.want || got && what == "" {
			t.Errorf("ServerWide(%q, %q) = %q, %v; want %v", tt.name, tt.sub, what, got, tt.want)
		}
	}
}
