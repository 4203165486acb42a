// Package sqllex splits SQL text into tokens the way a server's own lexer
// would: where quoted strings, quoted names, dollar quotes and comments
// begin and end. It is the one lexer under the script parser's command
// splitting, the confinement checks and the SQL analysis; each of them
// interprets the tokens its own way.
//
// Dialects differ in what quotes and comments are; a Dialect is a set of
// lexical features, and PostgreSQL and MySQL name the two in use. The
// lexer is stateless: Next reads one token at an offset, so a caller that
// handles some bytes itself (a script's backslash meta-commands and
// :variables) simply does so before asking Next.
package sqllex

// Dialect is a set of lexical features: what one SQL dialect's quotes,
// comments and names are.
type Dialect uint32

// The lexical features a dialect may have.
const (
	// NestedComments: /* /* */ */ is one comment.
	NestedComments Dialect = 1 << iota
	// DollarQuotes: $tag$…$tag$ is a string, and $1 a parameter.
	DollarQuotes
	// EscapeStrings: E'…' takes backslash escapes.
	EscapeStrings
	// PrefixedStrings: B'…', X'…', N'…', U&'…' and U&"…" are one token.
	PrefixedStrings
	// QuoteContinuation: 'a' followed by whitespace holding a newline and
	// 'b' is one string, 'ab'.
	QuoteContinuation
	// BackslashEscapes: every quoted string takes backslash escapes
	// (MySQL's strings; PostgreSQL's with standard_conforming_strings off).
	BackslashEscapes
	// DoubleQuotedStrings: "…" is a string, not a quoted name.
	DoubleQuotedStrings
	// Backquotes: `…` is a quoted name.
	Backquotes
	// HashComments: # starts a comment to the end of the line.
	HashComments
	// DashCommentNeedsSpace: -- starts a comment only when a space, a
	// control character or the end follows it (--1 is minus minus one).
	DashCommentNeedsSpace
	// VerticalTabSpace: \v is whitespace.
	VerticalTabSpace
	// DigitWords: a name may start with a digit, so 1abc and 12 are words
	// (MySQL); without it a digit starts a Number.
	DigitWords
)

// The dialects in use.
const (
	// PostgreSQL is SQL as psql and the server lex it, with
	// standard_conforming_strings on.
	PostgreSQL = NestedComments | DollarQuotes | EscapeStrings | PrefixedStrings | QuoteContinuation
	// MySQL is SQL as MySQL, MariaDB and the mysql client lex it (without
	// ANSI_QUOTES).
	MySQL = BackslashEscapes | DoubleQuotedStrings | Backquotes | HashComments | DashCommentNeedsSpace |
		VerticalTabSpace | DigitWords
)

// Has reports whether d has every feature of f.
func (d Dialect) Has(f Dialect) bool { return d&f == f }

// Kind says what a token is.
type Kind uint8

// The kinds of token.
const (
	Space        Kind = iota // a run of whitespace
	LineComment              // -- or # to the end of the line (the newline is not part of it)
	BlockComment             // /* … */
	String                   // a quoted literal, its prefix included: '…', E'…', B'…', or "…" with DoubleQuotedStrings
	QuotedName               // "…" (or `…` with Backquotes), U&"…"
	DollarString             // $tag$…$tag$
	Word                     // a keyword or an unquoted name
	Number                   // a numeric literal (with any letters glued to it, as psql lexes 1abc)
	Param                    // $1
	Punct                    // any other single byte
)

var kindNames = [...]string{"space", "line comment", "block comment", "string", "quoted name", "dollar string", "word", "number", "parameter", "punctuation"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Token is one token of a text: its kind and its span.
type Token struct {
	Kind       Kind
	Start, End int // byte offsets; End > Start
	// Unterminated marks a quote or comment that the text ends inside.
	Unterminated bool
}

// Text is the token's text in s.
func Text[T ~string | ~[]byte](s T, t Token) T { return s[t.Start:t.End] }

// Next reads the token starting at s[i] (i < len(s)).
func Next[T ~string | ~[]byte](d Dialect, s T, i int) Token {
	n := len(s)
	c := s[i]
	next := at(s, i+1)
	tok := func(k Kind, end int) Token {
		if end > n {
			return Token{Kind: k, Start: i, End: n, Unterminated: true}
		}
		return Token{Kind: k, Start: i, End: end}
	}
	switch {
	case isSpace(d, c):
		j := i + 1
		for j < n && isSpace(d, s[j]) {
			j++
		}
		return tok(Space, j)
	case c == '-' && next == '-' && (!d.Has(DashCommentNeedsSpace) || dashSpace(s, i+2)),
		c == '#' && d.Has(HashComments):
		return tok(LineComment, lineEnd(s, i))
	case c == '/' && next == '*':
		end, ok := blockCommentEnd(d, s, i+2)
		t := tok(BlockComment, end)
		t.Unterminated = !ok
		return t
	case c == '\'':
		return quoted(d, s, i, i+1, String, '\'', d.Has(BackslashEscapes))
	case c == '"' && d.Has(DoubleQuotedStrings):
		return quoted(d, s, i, i+1, String, '"', d.Has(BackslashEscapes))
	case c == '"':
		return quoted(d, s, i, i+1, QuotedName, '"', false)
	case c == '`' && d.Has(Backquotes):
		return quoted(d, s, i, i+1, QuotedName, '`', false)
	case (c == 'e' || c == 'E') && next == '\'' && d.Has(EscapeStrings):
		return quoted(d, s, i, i+2, String, '\'', true)
	case d.Has(PrefixedStrings) && isPrefix(c) && next == '\'':
		return quoted(d, s, i, i+2, String, '\'', d.Has(BackslashEscapes))
	case d.Has(PrefixedStrings) && (c == 'u' || c == 'U') && next == '&':
		switch at(s, i+2) {
		case '\'':
			return quoted(d, s, i, i+3, String, '\'', false)
		case '"':
			return quoted(d, s, i, i+3, QuotedName, '"', false)
		}
		// psql's xufailed: the letter alone, not a name.
		return tok(Punct, i+1)
	case c == '$' && d.Has(DollarQuotes):
		return dollar(s, i)
	case isDigit(c) && !d.Has(DigitWords):
		return tok(Number, numberEnd(s, i))
	case isIdentStart(c) || isDigit(c) || c == '$' && d.Has(DigitWords):
		j := i + 1
		for j < n && isIdentCont(s[j]) {
			j++
		}
		if isDigit(c) {
			return tok(Number, j)
		}
		return tok(Word, j)
	}
	return tok(Punct, i+1)
}

// quoted is the token of the quote opened at open (its prefix starting at
// start), closed by q: a doubled q stands for itself and, with escapes, a
// backslash takes the next byte.
func quoted[T ~string | ~[]byte](d Dialect, s T, start, open int, kind Kind, q byte, escapes bool) Token {
	i := open
	for i < len(s) {
		switch c := s[i]; {
		case escapes && c == '\\':
			i += 2
		case c == q:
			if at(s, i+1) == q {
				i += 2
				continue
			}
			i++
			if kind == String && q == '\'' && d.Has(QuoteContinuation) {
				if resume, ok := quoteContinues(d, s, i); ok {
					i = resume
					continue
				}
			}
			return Token{Kind: kind, Start: start, End: i}
		default:
			i++
		}
	}
	return Token{Kind: kind, Start: start, End: len(s), Unterminated: true}
}

// quoteContinues reports whether a string literal that closed just before
// i continues, and where: psql's {quotecontinue}, whitespace holding a
// newline (and -- comments) between two quoted parts.
func quoteContinues[T ~string | ~[]byte](d Dialect, s T, i int) (int, bool) {
	n := len(s)
	for i < n {
		if c := s[i]; c == ' ' || c == '\t' || c == '\f' {
			i++
		} else if c == '-' && at(s, i+1) == '-' {
			i = lineEnd(s, i)
		} else {
			break
		}
	}
	if i >= n || (s[i] != '\n' && s[i] != '\r') {
		return 0, false
	}
	i++
	for i < n {
		if isSpace(d, s[i]) {
			i++
		} else if s[i] == '-' && at(s, i+1) == '-' {
			end := lineEnd(s, i)
			if end >= n {
				return 0, false
			}
			i = end + 1
		} else {
			break
		}
	}
	if i < n && s[i] == '\'' {
		return i + 1, true
	}
	return 0, false
}

// dollar is the token starting with the '$' at i: a dollar-quoted string,
// a positional parameter, or the lone '$'.
func dollar[T ~string | ~[]byte](s T, i int) Token {
	n := len(s)
	j := i + 1
	if j < n && isIdentStart(s[j]) {
		j++
		for j < n && isVarChar(s[j]) {
			j++
		}
	}
	if j < n && s[j] == '$' {
		tag := s[i : j+1]
		for k := j + 1; k+len(tag) <= n; k++ {
			if s[k] == '$' && string(s[k:k+len(tag)]) == string(tag) {
				return Token{Kind: DollarString, Start: i, End: k + len(tag)}
			}
		}
		return Token{Kind: DollarString, Start: i, End: n, Unterminated: true}
	}
	if isDigit(at(s, i+1)) {
		// $1, or psql's param_junk ($1abc) as one token.
		j = i + 1
		for j < n && isDigit(s[j]) {
			j++
		}
		for j < n && isIdentCont(s[j]) {
			j++
		}
		return Token{Kind: Param, Start: i, End: j}
	}
	// psql's dolqfailed: only the '$'.
	return Token{Kind: Punct, Start: i, End: i + 1}
}

// DollarTag is the opening tag ($$, $body$) of a DollarString token's
// text, which also closes it.
func DollarTag[T ~string | ~[]byte](text T) T {
	for j := 1; j < len(text); j++ {
		if text[j] == '$' {
			return text[:j+1]
		}
	}
	return text
}

// blockCommentEnd returns the end of a /* comment */ whose opening was
// just before i, and false if the text ends inside it.
func blockCommentEnd[T ~string | ~[]byte](d Dialect, s T, i int) (int, bool) {
	depth := 0
	for i+1 < len(s) {
		switch {
		case s[i] == '/' && s[i+1] == '*' && d.Has(NestedComments):
			depth++
			i += 2
		case s[i] == '*' && s[i+1] == '/':
			if depth == 0 {
				return i + 2, true
			}
			depth--
			i += 2
		default:
			i++
		}
	}
	return len(s), false
}

// numberEnd returns the end of the numeric token at i, including a name
// glued to it (psql's integer_junk), so that the E of 1E'x' is not taken
// for an escape-string prefix.
func numberEnd[T ~string | ~[]byte](s T, i int) int {
	n := len(s)
	digits := func(j int) int {
		for j < n && (isDigit(s[j]) || s[j] == '_') {
			j++
		}
		return j
	}
	j := digits(i)
	if j < n && s[j] == '.' && at(s, j+1) != '.' {
		j = digits(j + 1)
	}
	if j < n && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < n && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < n && isDigit(s[k]) {
			j = digits(k)
		}
	}
	if j < n && isIdentStart(s[j]) {
		for j < n && isIdentCont(s[j]) {
			j++
		}
	}
	return j
}

// lineEnd is the offset of the newline (\n or \r) ending the line at i,
// or the end of s.
func lineEnd[T ~string | ~[]byte](s T, i int) int {
	for i < len(s) && s[i] != '\n' && s[i] != '\r' {
		i++
	}
	return i
}

// dashSpace says whether what follows a -- at i lets it start a MySQL
// comment: a space, a control character or the end.
func dashSpace[T ~string | ~[]byte](s T, i int) bool {
	if i >= len(s) {
		return true
	}
	c := s[i]
	return c <= ' ' || c == 0x7f
}

// ExecutableOpening is the length of the opening of a MySQL executable
// comment at the start of s — /*!, /*M!, with a version number of up to
// six digits — whose body the server runs as SQL; 0 when s starts none.
func ExecutableOpening[T ~string | ~[]byte](s T) int {
	n := 0
	switch {
	case len(s) >= 3 && s[0] == '/' && s[1] == '*' && s[2] == '!':
		n = 3
	case len(s) >= 4 && s[0] == '/' && s[1] == '*' && s[2] == 'M' && s[3] == '!':
		n = 4
	default:
		return 0
	}
	digits := 0
	for n+digits < len(s) && digits < 6 && isDigit(s[n+digits]) {
		digits++
	}
	return n + digits
}

// Unquote is the text a String or QuotedName token stands for: its prefix
// and quotes removed, a doubled quote read as one, the parts of a
// continued string joined, and, where the string takes escapes, a
// backslash's next byte taken as it is.
func Unquote(d Dialect, text string) string {
	i := 0
	for i < len(text) && text[i] != '\'' && text[i] != '"' && text[i] != '`' {
		i++
	}
	if i >= len(text) {
		return text
	}
	q := text[i]
	escapes := q != '`' && (d.Has(BackslashEscapes) && (q == '\'' || d.Has(DoubleQuotedStrings)) ||
		i > 0 && (text[0] == 'e' || text[0] == 'E'))
	out := make([]byte, 0, len(text))
	for j := i + 1; j < len(text); j++ {
		c := text[j]
		switch {
		case escapes && c == '\\' && j+1 < len(text):
			out = append(out, text[j+1])
			j++
		case c == q && j+1 < len(text) && text[j+1] == q:
			out = append(out, q)
			j++
		case c == q:
			// A continued string resumes at its next quote.
			k := j + 1
			for k < len(text) && text[k] != q {
				k++
			}
			j = k
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

func at[T ~string | ~[]byte](s T, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// isSpace is psql's {space} (which leaves out \v), and MySQL's too with
// VerticalTabSpace.
func isSpace(d Dialect, c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' && d.Has(VerticalTabSpace)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isPrefix(c byte) bool {
	switch c | 0x20 {
	case 'b', 'x', 'n':
		return true
	}
	return false
}

// IsIdentStart says whether c may start an unquoted name: psql's
// ident_start (ASCII letters, '_', and any byte of a multi-byte
// character).
func IsIdentStart(c byte) bool { return isIdentStart(c) }

func isIdentStart(c byte) bool {
	return (c|0x20) >= 'a' && (c|0x20) <= 'z' || c == '_' || c >= 0x80
}

// isVarChar is psql's variable_char (also dolq_cont).
func isVarChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// isIdentCont is psql's ident_cont, which allows '$'.
func isIdentCont(c byte) bool { return isVarChar(c) || c == '$' }
