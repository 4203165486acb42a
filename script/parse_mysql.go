package script

import "strings"

// The MySQL dialect: pgbench's meta-commands and expressions, with SQL
// lexed the way MySQL and MariaDB lex it, to find where a command ends:
//
//   - 'strings' and "strings" take backslash escapes (\' \" \\) as well as
//     doubled quotes; `backquoted names` take doubled backquotes;
//   - comments are # and "-- " to the end of the line (the dashes must be
//     followed by a space, a control character or the end: --1 is minus
//     minus one) and /* … */, which do not nest; /*! … */ and /*M! … */
//     executable comments are comments here too, so their semicolons do
//     not end the command;
//   - there is no dollar quoting and no E'…' string;
//   - an unquoted ';' ends the command, whatever the parentheses, as the
//     mysql client splits; a stored program's body (BEGIN … END) therefore
//     writes its inner semicolons as \; which puts a literal ';' in the
//     command, as in pgbench;
//   - :variables are substituted as pgbench does, and \: writes a
//     literal colon.
//
// Commands keep their text as written (trailing semicolon included) for
// the simple protocol; Query has a ? for each :variable, MySQL's
// placeholder, for prepared statements.

// parseMySQL reads a script in the MySQL dialect.
func parseMySQL(file string, src []byte, syms *Symbols) (*Script, error) {
	s, err := parseIn(file, src, syms, MySQL)
	if err != nil {
		return nil, err
	}
	for _, cmd := range s.Commands {
		if cmd.Kind == KindSQL {
			cmd.SQL.Query = mysqlQuery(cmd.SQL)
		}
	}
	return s, nil
}

// mysqlQuery is the command's text with a ? for each variable reference.
func mysqlQuery(q *SQL) string {
	var b strings.Builder
	for _, part := range q.Parts {
		if part.Var != NoVar {
			b.WriteByte('?')
		} else {
			b.WriteString(part.Text)
		}
	}
	return b.String()
}

// scanMySQL is scan for the MySQL dialect.
func (lx *sqlLexer) scanMySQL() (sqlChunk, scanStop) {
	s, n := lx.src, len(lx.src)
	chunk := sqlChunk{start: -1}
	emit := func(from, to int) {
		if len(chunk.text) == 0 {
			chunk.start = from
		}
		chunk.text = append(chunk.text, s[from:to]...)
	}
	emitString := func(at int, text string) {
		if len(chunk.text) == 0 {
			chunk.start = at
		}
		chunk.text = append(chunk.text, text...)
	}
	i := lx.off
	for i < n {
		c := s[i]
		switch {
		case isSQLSpace(c) || c == '\v':
			j := i + 1
			for j < n && (isSQLSpace(s[j]) || s[j] == '\v') {
				j++
			}
			if len(chunk.text) > 0 { // whitespace before the first token is dropped
				emit(i, j)
			}
			i = j
		case c == '#' || c == '-' && isMySQLDashComment(s, i):
			j := skipLineComment(s, i)
			if len(chunk.text) > 0 {
				emit(i, j)
			}
			i = j
		case c == '/' && byteAt(s, i+1) == '*':
			j := skipMySQLBlockComment(s, i+2)
			emit(i, j)
			i = j
		case c == '\'' || c == '"':
			j := skipMySQLQuoted(s, i+1, c)
			emit(i, j)
			i = j
		case c == '`':
			j := skipBackquoted(s, i+1)
			emit(i, j)
			i = j
		case c == ';':
			emit(i, i+1)
			lx.off = i + 1
			return chunk, stopSemicolon
		case c == '\\':
			switch byteAt(s, i+1) {
			case ';':
				emitString(i+1, ";")
				chunk.compound = true
				i += 2
			case ':':
				emitString(i+1, ":")
				i += 2
			default:
				lx.off = i + 1
				return chunk, stopBackslash
			}
		case c == ':':
			j, replacement := colonToken(s, i)
			if replacement != "" {
				emitString(i, replacement)
			} else {
				emit(i, j)
			}
			i = j
		case isIdentStart(c) || isDigit(c) || c == '$':
			// A word: names may hold '$' and start with digits.
			j := i + 1
			for j < n && (isVarChar(s[j]) || s[j] == '$') {
				j++
			}
			emit(i, j)
			i = j
		default:
			emit(i, i+1)
			i++
		}
	}
	lx.off = n
	return chunk, stopEOF
}

// isMySQLDashComment says whether the '-' at i starts a "-- " comment: two
// dashes and then a space, a control character or the end.
func isMySQLDashComment(s []byte, i int) bool {
	if byteAt(s, i+1) != '-' {
		return false
	}
	if i+2 >= len(s) {
		return true
	}
	c := s[i+2]
	return c <= ' ' || c == 0x7f
}

// skipMySQLBlockComment returns the end of a /* comment */ whose opening
// was just before i; MySQL's do not nest.
func skipMySQLBlockComment(s []byte, i int) int {
	for i+1 < len(s) {
		if s[i] == '*' && s[i+1] == '/' {
			return i + 2
		}
		i++
	}
	return len(s)
}

// skipMySQLQuoted returns the end of a string quoted with q whose opening
// quote was just before i: a backslash escapes the next byte, and a doubled
// quote stands for itself.
func skipMySQLQuoted(s []byte, i int, q byte) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
		case q:
			if byteAt(s, i+1) == q {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// skipBackquoted returns the end of a `name` whose opening backquote was
// just before i.
func skipBackquoted(s []byte, i int) int {
	for i < len(s) {
		if s[i] == '`' {
			if byteAt(s, i+1) == '`' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipMySQLComments is skipSQLComments for the MySQL dialect: the offset
// of the command after leading whitespace and line comments (# and "-- "),
// or -1 if nothing but whitespace and comments remains, which the server
// would refuse as an empty query. Block comments are kept in the text (a
// marker comment should reach the server), but a command of nothing else
// is empty too.
func skipMySQLComments(text []byte) int {
	start := -1
	i := 0
	for i < len(text) {
		c := text[i]
		switch {
		case isSQLSpace(c) || c == '\v':
			i++
		case c == '#' || c == '-' && isMySQLDashComment(text, i):
			i = skipLineComment(text, i)
		case c == '/' && byteAt(text, i+1) == '*' && !isExecutableComment(text, i):
			if start < 0 {
				start = i
			}
			i = skipMySQLBlockComment(text, i+2)
		case c == ';':
			// A semicolon with nothing before it ends an empty statement.
			i++
		default:
			if start < 0 {
				start = i
			}
			return start
		}
	}
	return -1
}

// isExecutableComment says whether the comment at i is one MySQL runs:
// /*! … */, /*M! … */ (MariaDB) or an optimizer hint /*+ … */.
func isExecutableComment(s []byte, i int) bool {
	c := byteAt(s, i+2)
	return c == '!' || c == '+' || c == 'M' && byteAt(s, i+3) == '!'
}
