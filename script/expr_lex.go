package script

import (
	"math"
	"strconv"
	"strings"
)

// exprTokenKind is a lexical class of pgbench's expression language
// (exprscan.l's EXPR state).
type exprTokenKind uint8

const (
	tokEOF exprTokenKind = iota
	tokInt
	tokMaxIntPlusOne // 9223372036854775808: valid only right after a unary minus
	tokDouble
	tokVar   // :name
	tokIdent // a function name
	tokNull
	tokBool
	tokAnd
	tokOr
	tokNot
	tokIs
	tokIsNull
	tokNotNull
	tokCase
	tokWhen
	tokThen
	tokElse
	tokEnd
	tokPlus
	tokMinus
	tokStar
	tokSlash
	tokPercent
	tokEq
	tokNe // <> and !=
	tokLt
	tokLe
	tokGt
	tokGe
	tokBitOr
	tokBitAnd
	tokHash // # (xor)
	tokTilde
	tokShiftLeft
	tokShiftRight
	tokLParen
	tokRParen
	tokComma
)

// exprKeywords are matched case-insensitively and only as whole words, as
// flex's longest-match rule makes "andx" a function name.
var exprKeywords = map[string]exprTokenKind{
	"and": tokAnd, "or": tokOr, "not": tokNot,
	"is": tokIs, "isnull": tokIsNull, "notnull": tokNotNull,
	"case": tokCase, "when": tokWhen, "then": tokThen, "else": tokElse, "end": tokEnd,
	"null": tokNull, "true": tokBool, "false": tokBool,
}

// exprToken is one lexeme; off is its byte offset in the expression source.
type exprToken struct {
	kind exprTokenKind
	off  int
	text string
	i    int64
	f    float64
	b    bool
}

// describe names a token for a syntax error.
func (t exprToken) describe() string {
	if t.kind == tokEOF {
		return "end of expression"
	}
	return strconv.Quote(t.text)
}

// exprLexer splits an expression into tokens. A newline ends the expression,
// as it ends a backslash command in pgbench; a backslash-newline is a
// line exprContinuation and counts as white space.
type exprLexer struct {
	src string
	off int
}

func isExprSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

func isExprDigit(c byte) bool { return c >= '0' && c <= '9' }

// isExprAlpha is exprscan.l's {alpha}: ASCII letters, underscore and any
// non-ASCII byte.
func isExprAlpha(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isExprAlnum(c byte) bool { return isExprAlpha(c) || isExprDigit(c) }

// exprContinuation returns the length of a backslash-newline at off, or 0.
func exprContinuation(src string, off int) int {
	if off < len(src) && src[off] == '\\' {
		if off+1 < len(src) && src[off+1] == '\n' {
			return 2
		}
		if off+2 < len(src) && src[off+1] == '\r' && src[off+2] == '\n' {
			return 3
		}
	}
	return 0
}

// exprLexError is a lexical problem at a byte offset; the parser turns it
// into an *Error with a file position.
type exprLexError struct {
	off int
	msg string
}

func (e *exprLexError) Error() string { return e.msg }

// next returns the next token.
func (l *exprLexer) next() (exprToken, error) {
	src := l.src
	for l.off < len(src) {
		if isExprSpace(src[l.off]) {
			l.off++
		} else if n := exprContinuation(src, l.off); n > 0 {
			l.off += n
		} else {
			break
		}
	}
	start := l.off
	if start >= len(src) || src[start] == '\n' {
		return exprToken{kind: tokEOF, off: start}, nil
	}
	c := src[start]
	tok := func(k exprTokenKind, n int) (exprToken, error) {
		l.off = start + n
		return exprToken{kind: k, off: start, text: src[start : start+n]}, nil
	}
	two := ""
	if start+1 < len(src) {
		two = src[start : start+2]
	}
	switch two {
	case "<>", "!=":
		return tok(tokNe, 2)
	case "<=":
		return tok(tokLe, 2)
	case ">=":
		return tok(tokGe, 2)
	case "<<":
		return tok(tokShiftLeft, 2)
	case ">>":
		return tok(tokShiftRight, 2)
	}
	switch c {
	case '+':
		return tok(tokPlus, 1)
	case '-':
		return tok(tokMinus, 1)
	case '*':
		return tok(tokStar, 1)
	case '/':
		return tok(tokSlash, 1)
	case '%':
		return tok(tokPercent, 1)
	case '=':
		return tok(tokEq, 1)
	case '<':
		return tok(tokLt, 1)
	case '>':
		return tok(tokGt, 1)
	case '|':
		return tok(tokBitOr, 1)
	case '&':
		return tok(tokBitAnd, 1)
	case '#':
		return tok(tokHash, 1)
	case '~':
		return tok(tokTilde, 1)
	case '(':
		return tok(tokLParen, 1)
	case ')':
		return tok(tokRParen, 1)
	case ',':
		return tok(tokComma, 1)
	case ':':
		end := start + 1
		for end < len(src) && isExprAlnum(src[end]) {
			end++
		}
		if end > start+1 {
			l.off = end
			return exprToken{kind: tokVar, off: start, text: src[start:end]}, nil
		}
	}
	if isExprDigit(c) || c == '.' && start+1 < len(src) && isExprDigit(src[start+1]) {
		return l.number(start)
	}
	if isExprAlpha(c) {
		end := start + 1
		for end < len(src) && isExprAlnum(src[end]) {
			end++
		}
		l.off = end
		word := src[start:end]
		t := exprToken{kind: tokIdent, off: start, text: word}
		if k, ok := exprKeywords[strings.ToLower(word)]; ok {
			t.kind = k
			t.b = k == tokBool && strings.EqualFold(word, "true")
		}
		return t, nil
	}
	l.off = start + 1
	return exprToken{}, &exprLexError{off: start, msg: "unexpected character " + strconv.QuoteToASCII(src[start:start+1])}
}

// number lexes {digit}+(\.{digit}*)?([eE][-+]?{digit}+)? or
// \.{digit}+([eE][-+]?{digit}+)?: an integer when it is digits only.
func (l *exprLexer) number(start int) (exprToken, error) {
	src := l.src
	end := start
	for end < len(src) && isExprDigit(src[end]) {
		end++
	}
	isInt := true
	if end < len(src) && src[end] == '.' {
		isInt = false
		end++
		for end < len(src) && isExprDigit(src[end]) {
			end++
		}
	}
	if end < len(src) && (src[end] == 'e' || src[end] == 'E') {
		e := end + 1
		if e < len(src) && (src[e] == '+' || src[e] == '-') {
			e++
		}
		if e < len(src) && isExprDigit(src[e]) {
			for e < len(src) && isExprDigit(src[e]) {
				e++
			}
			end = e
			isInt = false
		}
	}
	l.off = end
	text := src[start:end]
	t := exprToken{off: start, text: text}
	if isInt {
		if text == "9223372036854775808" {
			t.kind = tokMaxIntPlusOne
			return t, nil
		}
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return exprToken{}, &exprLexError{off: start, msg: "bigint constant overflow: " + text}
		}
		t.kind, t.i = tokInt, i
		return t, nil
	}
	f, ok := parseCDouble(text)
	if !ok {
		return exprToken{}, &exprLexError{off: start, msg: "double constant overflow: " + text}
	}
	t.kind, t.f = tokDouble, f
	return t, nil
}

// parseCDouble converts text the way pgbench's strtodouble does with C's
// strtod: leading white space is allowed, trailing text is not, and a
// result that overflows or underflows (ERANGE, including subnormals) is
// rejected. It accepts strtod's forms: decimal, hexadecimal (0x…),
// inf, infinity and nan.
func parseCDouble(s string) (float64, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	body := s[i:]
	if body == "" {
		return 0, false
	}
	unsigned := strings.TrimLeft(body, "+-")
	if len(body)-len(unsigned) > 1 {
		return 0, false
	}
	lower := strings.ToLower(unsigned)
	switch {
	case lower == "inf" || lower == "infinity":
		if body[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case lower == "nan" || strings.HasPrefix(lower, "nan(") && strings.HasSuffix(lower, ")") && isNanChars(lower[4:len(lower)-1]):
		return math.NaN(), true
	case strings.HasPrefix(lower, "0x"):
		if !strings.ContainsAny(lower, "p_") {
			body += "p0" // strtod allows a hexadecimal float without exponent; Go does not
		} else if strings.Contains(lower, "_") {
			return 0, false
		}
	case strings.Contains(lower, "_"): // Go accepts digit separators; strtod does not
		return 0, false
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil {
		return 0, false
	}
	if f == 0 && hasNonZeroMantissa(unsigned) {
		return 0, false // underflow to zero: ERANGE
	}
	if f != 0 && math.Abs(f) < 0x1p-1022 {
		return 0, false // subnormal: ERANGE
	}
	return f, true
}

func isNanChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isExprAlnum(s[i]) || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// hasNonZeroMantissa reports whether a numeric literal has a non-zero
// digit before its exponent.
func hasNonZeroMantissa(s string) bool {
	hex := strings.HasPrefix(strings.ToLower(s), "0x")
	if hex {
		s = s[2:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !hex && (c == 'e' || c == 'E'), hex && (c == 'p' || c == 'P'):
			return false
		case c >= '1' && c <= '9', hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return true
		}
	}
	return false
}
