package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string // a substring of the error; "" for none
	}{
		{"90s", 90 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{" 2h ", 2 * time.Hour, ""},
		{"90", 90 * time.Second, ""},                        // a bare number is seconds
		{"0.5", 500 * time.Millisecond, ""},                 // fractions too
		{"1e-3", time.Millisecond, ""},                      // and exponents
		{"0", 0, ""},                                        // zero is a valid offset
		{"-5s", 0, "negative"},                              // nothing in a scenario runs backwards
		{"-1", 0, "negative"},                               // in seconds either
		{"5 minutes", 0, "bad duration"},                    // not Go's syntax
		{"1d", 0, "bad duration"},                           // Go has no days
		{"1e400", 0, "bad duration"},                        // overflows float64
		{"1e12", 0, "too long"},                             // overflows time.Duration
		{"NaN", 0, "bad duration"},                          // not a number of seconds
		{"", 0, "bad duration"},                             // empty
		{"9999999999999999999ns", 0, "bad duration"},        // Go's overflow
		{"2562047h47m16.854775807s", 1<<63 - 1, ""},         // the largest
		{"0.0000000001", 0, ""},                             // below a nanosecond rounds to 0
		{"1.0000000005", time.Second + time.Nanosecond, ""}, // rounds to the nearest
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseDuration(%q) error %v, want one containing %q", tt.in, err, tt.err)
		case got != tt.want:
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"512", 512, ""},           // bare: bytes
		{"512B", 512, ""},          // B: bytes
		{"100kB", 100_000, ""},     // decimal units are powers of 1000,
		{"100KB", 100_000, ""},     // in any case,
		{"512MB", 512e6, ""},       //
		{"1.5 GB", 1.5e9, ""},      // with a space and a fraction
		{"2TB", 2e12, ""},          //
		{"1KiB", 1024, ""},         // IEC units are powers of 1024
		{"1GiB", 1 << 30, ""},      //
		{"1gib", 1 << 30, ""},      //
		{"1TiB", 1 << 40, ""},      //
		{"1e3", 1000, ""},          // an exponent stays with the number
		{"1e3kB", 1_000_000, ""},   //
		{"512XB", 0, "unit"},       // unknown unit
		{"5e", 0, "unit"},          // a stray letter is a unit
		{"1k", 0, "unit"},          // k alone is ambiguous: refused
		{"MB", 0, "bad size"},      // no number
		{"-1MB", 0, "negative"},    //
		{"1e30", 0, "too large"},   //
		{"1 000", 0, "bad size"},   // no digit grouping
		{"0.4", 0, ""},             // rounds to whole bytes
		{"1.5B", 2, ""},            //
		{"10EB", 0, "unit"},        // exabytes are not a unit here
		{"9.3e18", 0, "too large"}, // beyond int64
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseSize(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseSize(%q) error %v, want one containing %q", tt.in, err, tt.err)
		case got != tt.want:
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseByteRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"50MB/s", 50e6, true},
		{"1GiB/s", 1 << 30, true},
		{"1000", 1000, true},   // bare: bytes per second
		{"0", 0, true},         // as fast as the disk goes
		{"50MB", 0, false},     // a size is not a rate
		{"50MB/min", 0, false}, // only per second
		{"fast/s", 0, false},
		{"/s", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteRate(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteRate(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
