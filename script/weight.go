package script

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SplitWeight splits a -f or -b argument ("file@9", "tpcb-like@3") into the
// script's name and its weight, as pgbench's parseScriptWeight does: the
// weight follows the last '@', defaults to 1, and must be an integer from
// 0 to 2147483647 (leading whitespace and a sign are accepted, as strtol
// accepts them). A weight of 0 is allowed, as in pgbench, as long as some
// script of the run has a positive weight; the caller checks the total.
func SplitWeight(arg string) (name string, weight int, err error) {
	at := strings.LastIndexByte(arg, '@')
	if at < 0 {
		return arg, 1, nil
	}
	name, spec := arg[:at], arg[at+1:]
	digits := spec
	for digits != "" && isSpace(digits[0]) {
		digits = digits[1:]
	}
	n, parseErr := strconv.ParseInt(digits, 10, 64)
	var numErr *strconv.NumError
	switch {
	case parseErr == nil:
	case errors.As(parseErr, &numErr) && numErr.Err == strconv.ErrRange && validInteger(digits):
		return "", 0, fmt.Errorf("script %q: weight specification out of range (0 .. %d): %s", name, math.MaxInt32, spec)
	default:
		return "", 0, fmt.Errorf("script %q: invalid weight specification: @%s (want a whole number, as in %s@5)", name, spec, name)
	}
	if n < 0 || n > math.MaxInt32 {
		return "", 0, fmt.Errorf("script %q: weight specification out of range (0 .. %d): %d", name, math.MaxInt32, n)
	}
	return name, int(n), nil
}

// validInteger reports whether s is an optional sign and at least one digit.
func validInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
