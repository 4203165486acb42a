package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a scenario duration: Go's syntax ("90s", "1m30s",
// "250ms") or a bare number of seconds ("90", "1.5"). Negative durations
// are errors: every duration in a scenario is a length or an offset from
// the run's start.
func ParseDuration(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q is negative", text)
		}
		return d, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && isFinite(f) {
		return secondsDuration(f, text)
	}
	return 0, fmt.Errorf("bad duration %q: want Go syntax such as 90s, 1m30s or 250ms, or a number of seconds", text)
}

// secondsDuration converts a bare number of seconds.
func secondsDuration(seconds float64, text string) (time.Duration, error) {
	switch {
	case seconds < 0:
		return 0, fmt.Errorf("%q is negative", text)
	case seconds*float64(time.Second) >= math.MaxInt64:
		return 0, fmt.Errorf("%q is too long", text)
	}
	return time.Duration(math.Round(seconds * float64(time.Second))), nil
}

// sizeUnits are the units ParseSize accepts, lower-cased: decimal (SI)
// units are powers of 1000 and IEC units powers of 1024, as their names
// say. PostgreSQL's own "kB"/"MB" mean 1024 and 1024²; here they do not.
var sizeUnits = map[string]float64{
	"":    1,
	"b":   1,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
}

// ParseSize reads a size in bytes: a number with an optional unit, B, kB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), in
// any letter case ("512MB", "1GiB", "1.5 GB"); a bare number is bytes.
func ParseSize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	// The unit is the trailing letters, so that an exponent ("1e9") stays
	// with the number.
	split := len(s)
	for split > 0 && isLetter(s[split-1]) {
		split--
	}
	number, unit := strings.TrimSpace(s[:split]), s[split:]
	scale, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("bad size %q: unknown unit %q (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", text, unit)
	}
	f, err := strconv.ParseFloat(number, 64)
	if err != nil || !isFinite(f) || number == "" {
		return 0, fmt.Errorf("bad size %q: want a number and a unit, such as 512MB or 1GiB", text)
	}
	return sizeBytes(f*scale, text)
}

// sizeBytes checks a size already in bytes.
func sizeBytes(bytes float64, text string) (int64, error) {
	switch {
	case bytes < 0:
		return 0, fmt.Errorf("%q is negative", text)
	case bytes >= math.MaxInt64:
		return 0, fmt.Errorf("%q is too large", text)
	}
	return int64(math.Round(bytes)), nil
}

// ParseByteRate reads a rate in bytes per second: a size followed by "/s"
// ("50MB/s"), or a bare number of bytes per second.
func ParseByteRate(text string) (int64, error) {
	s := strings.TrimSpace(text)
	per, ok := strings.CutSuffix(s, "/s")
	if !ok {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return 0, fmt.Errorf("bad rate %q: want a size per second, such as 50MB/s", text)
		}
	}
	n, err := ParseSize(per)
	if err != nil {
		return 0, fmt.Errorf("bad rate %q: want a size per second, such as 50MB/s", text)
	}
	return n, nil
}

func isFinite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
