package script

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// MaxParams is the most variable references one SQL command may hold when it
// is sent with the extended or prepared protocol (pgbench's MAX_ARGS - 1).
const MaxParams = 255

// scanStop says why the SQL lexer stopped.
type scanStop uint8

const (
	stopSemicolon scanStop = iota // a command-ending ';'
	stopBackslash                 // a '\' starting a meta-command
	stopEOF                       // the end of the script
)

// sqlLexer finds where pgbench's SQL commands end. It follows
// src/fe_utils/psqlscan.l as pgbench uses it (standard_conforming_strings
// on, no psql variables): a ';' ends a command unless it is inside quotes,
// comments, dollar quotes, parentheses or a CREATE FUNCTION ... BEGIN ATOMIC
// body; an unquoted '\' starts a meta-command; "\;" and "\:" put a literal
// ';' or ':' into the command. The parenthesis and BEGIN counters survive
// from one command to the next, as psqlscan's do.
type sqlLexer struct {
	src        []byte
	off        int
	parenDepth int
	beginDepth int
	// identCount and idents recognise CREATE [OR REPLACE] FUNCTION|PROCEDURE
	// from the first letters of the statement's first identifiers.
	identCount int
	idents     [4]byte
	// mysql lexes as MySQL does (scanMySQL).
	mysql bool
}

// sqlChunk is the text one scan collected: what psqlscan would have put in
// pgbench's query buffer.
type sqlChunk struct {
	text     []byte
	start    int  // source offset of text's first byte; -1 if text is empty
	compound bool // a "\;" joined statements
}

// scan collects SQL text from the current offset until a command-ending
// semicolon, a backslash or the end of the script. The semicolon is part of
// the text; the backslash is consumed but not.
func (lx *sqlLexer) scan() (sqlChunk, scanStop) {
	if lx.mysql {
		return lx.scanMySQL()
	}
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
		next := byteAt(s, i+1)
		switch {
		case isSQLSpace(c):
			j := i + 1
			for j < n && isSQLSpace(s[j]) {
				j++
			}
			// Whitespace before the first token is dropped.
			if len(chunk.text) > 0 {
				emit(i, j)
			}
			i = j
		case c == '-' && next == '-':
			j := i + 2
			for j < n && s[j] != '\n' && s[j] != '\r' {
				j++
			}
			if len(chunk.text) > 0 {
				emit(i, j)
			}
			i = j
		case c == '/' && next == '*':
			j := skipBlockComment(s, i+2)
			emit(i, j)
			i = j
		case c == '\'':
			j := skipQuoted(s, i+1, false)
			emit(i, j)
			i = j
		case (c == 'e' || c == 'E') && next == '\'':
			j := skipQuoted(s, i+2, true)
			emit(i, j)
			i = j
		case (c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && next == '\'':
			j := skipQuoted(s, i+2, false)
			emit(i, j)
			i = j
		case (c == 'u' || c == 'U') && next == '&':
			var j int
			switch byteAt(s, i+2) {
			case '\'':
				j = skipQuoted(s, i+3, false)
			case '"':
				j = skipDoubleQuoted(s, i+3)
			default:
				// psqlscan's xufailed: the letter alone, not an identifier.
				j = i + 1
			}
			emit(i, j)
			i = j
		case c == '"':
			j := skipDoubleQuoted(s, i+1)
			emit(i, j)
			i = j
		case c == '$':
			j := lx.dollar(i)
			emit(i, j)
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentCont(s[j]) {
				j++
			}
			lx.identifier(s[i:j])
			emit(i, j)
			i = j
		case isDigit(c):
			j := skipNumber(s, i)
			emit(i, j)
			i = j
		case c == '(':
			lx.parenDepth++
			emit(i, i+1)
			i++
		case c == ')':
			if lx.parenDepth > 0 {
				lx.parenDepth--
			}
			emit(i, i+1)
			i++
		case c == ';':
			emit(i, i+1)
			i++
			if lx.parenDepth == 0 && lx.beginDepth == 0 {
				lx.identCount = 0
				lx.off = i
				return chunk, stopSemicolon
			}
		case c == '\\':
			switch next {
			case ';':
				emitString(i+1, ";")
				chunk.compound = true
				lx.identCount = 0
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
		default:
			emit(i, i+1)
			i++
		}
	}
	lx.off = n
	return chunk, stopEOF
}

// identifier tracks CREATE FUNCTION bodies, whose semicolons do not end
// the command, the way psqlscan's heuristic does.
func (lx *sqlLexer) identifier(word []byte) {
	if lx.identCount == 0 {
		lx.idents = [4]byte{}
	}
	for _, keyword := range [...]string{"create", "function", "procedure", "or", "replace"} {
		if asciiEqualFold(word, keyword) {
			if lx.identCount < len(lx.idents) {
				lx.idents[lx.identCount] = keyword[0]
			}
			break
		}
	}
	lx.identCount++
	id := lx.idents
	inRoutine := id[0] == 'c' &&
		(id[1] == 'f' || id[1] == 'p' || (id[1] == 'o' && id[2] == 'r' && (id[3] == 'f' || id[3] == 'p')))
	if !inRoutine || lx.parenDepth != 0 {
		return
	}
	switch {
	case asciiEqualFold(word, "begin"):
		lx.beginDepth++
	case asciiEqualFold(word, "case"):
		// CASE ends with END too; it only matters inside a BEGIN.
		if lx.beginDepth >= 1 {
			lx.beginDepth++
		}
	case asciiEqualFold(word, "end"):
		if lx.beginDepth > 0 {
			lx.beginDepth--
		}
	}
}

// dollar returns the end of the token starting with the '$' at i: a dollar
// quoted string, a positional parameter, or the lone '$'.
func (lx *sqlLexer) dollar(i int) int {
	s, n := lx.src, len(lx.src)
	j := i + 1
	if j < n && isDolqStart(s[j]) {
		j++
		for j < n && isDolqCont(s[j]) {
			j++
		}
	}
	if j < n && s[j] == '$' {
		delim := s[i : j+1]
		end := bytes.Index(s[j+1:], delim)
		if end < 0 {
			return n
		}
		return j + 1 + end + len(delim)
	}
	if isDigit(byteAt(s, i+1)) {
		// $1, or psqlscan's param_junk ($1abc) as one token.
		j = i + 1
		for j < n && isDigit(s[j]) {
			j++
		}
		if j < n && isIdentStart(s[j]) {
			for j < n && isIdentCont(s[j]) {
				j++
			}
		}
		return j
	}
	// dolqfailed: only the '$'; what follows is lexed again.
	return i + 1
}

// colonToken returns the end of the token starting with the ':' at i, and
// what to put in the query instead when that is not the token's own text.
// psqlscan's variable tokens (:name, :'name', :"name") are kept as written
// because pgbench gives psqlscan no variables; :{?name} becomes FALSE.
func colonToken(s []byte, i int) (end int, replacement string) {
	next := byteAt(s, i+1)
	switch {
	case next == ':' || next == '=':
		return i + 2, ""
	case isVarChar(next):
		j := i + 1
		for j < len(s) && isVarChar(s[j]) {
			j++
		}
		return j, ""
	case next == '\'' || next == '"':
		j := i + 2
		for j < len(s) && isVarChar(s[j]) {
			j++
		}
		if j > i+2 && byteAt(s, j) == next {
			return j + 1, ""
		}
	case next == '{' && byteAt(s, i+2) == '?':
		j := i + 3
		for j < len(s) && isVarChar(s[j]) {
			j++
		}
		if j > i+3 && byteAt(s, j) == '}' {
			return j + 1, "FALSE"
		}
	}
	return i + 1, ""
}

// skipBlockComment returns the end of a (nestable) /* comment */ whose
// opening was just before i.
func skipBlockComment(s []byte, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && byteAt(s, i+1) == '*':
			depth++
			i += 2
		case s[i] == '*' && byteAt(s, i+1) == '/':
			if depth == 0 {
				return i + 2
			}
			depth--
			i += 2
		default:
			i++
		}
	}
	return len(s)
}

// skipQuoted returns the end of a '...' string whose opening quote was just
// before i. escapes is true for E'...' strings, where a backslash escapes
// the next byte. A string continues past a closing quote that is followed by
// whitespace holding a newline and another quote, as in SQL.
func skipQuoted(s []byte, i int, escapes bool) int {
	for i < len(s) {
		switch c := s[i]; {
		case escapes && c == '\\':
			i += 2
		case c == '\'':
			if byteAt(s, i+1) == '\'' {
				i += 2
				continue
			}
			i++
			if resume, ok := quoteContinues(s, i); ok {
				i = resume
				continue
			}
			return i
		default:
			i++
		}
	}
	return len(s)
}

// quoteContinues reports whether a string literal that closed just before i
// continues, and where: psqlscan's {quotecontinue}.
func quoteContinues(s []byte, i int) (int, bool) {
	n := len(s)
	// horizontal whitespace and -- comments
	for i < n {
		if c := s[i]; c == ' ' || c == '\t' || c == '\f' {
			i++
		} else if c == '-' && byteAt(s, i+1) == '-' {
			i = skipLineComment(s, i)
		} else {
			break
		}
	}
	if i >= n || (s[i] != '\n' && s[i] != '\r') {
		return 0, false
	}
	i++
	for i < n {
		if isSQLSpace(s[i]) {
			i++
		} else if s[i] == '-' && byteAt(s, i+1) == '-' {
			end := skipLineComment(s, i)
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

// skipLineComment returns the offset of the newline ending the -- comment at
// i, or the end of s.
func skipLineComment(s []byte, i int) int {
	for i < len(s) && s[i] != '\n' && s[i] != '\r' {
		i++
	}
	return i
}

// skipDoubleQuoted returns the end of a "quoted identifier" whose opening
// quote was just before i.
func skipDoubleQuoted(s []byte, i int) int {
	for i < len(s) {
		if s[i] == '"' {
			if byteAt(s, i+1) == '"' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipNumber returns the end of the numeric token at i, including an
// identifier glued to it (psqlscan's integer_junk), so that the 'E' of 1E'x'
// is not taken for an escape-string prefix.
func skipNumber(s []byte, i int) int {
	n := len(s)
	digits := func(j int) int {
		for j < n && (isDigit(s[j]) || s[j] == '_') {
			j++
		}
		return j
	}
	j := digits(i)
	if j < n && s[j] == '.' && byteAt(s, j+1) != '.' {
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

// skipSQLComments mirrors pgbench's skip_sql_comments: the offset of the
// command after leading whitespace and -- comments, or -1 if there is none.
func skipSQLComments(text []byte) int {
	i := 0
	for i < len(text) {
		switch {
		case isSpace(text[i]):
			i++
		case text[i] == '-' && byteAt(text, i+1) == '-':
			nl := bytes.IndexByte(text[i:], '\n')
			if nl < 0 {
				return -1
			}
			i += nl + 1
		default:
			return i
		}
	}
	return -1
}

// newSQL splits a command's text at its :variable references the way
// pgbench's parseQuery and assignVariables find them: anywhere in the text,
// quotes included, a ':' followed by a name; a run of colons not followed by
// a name (as in the cast ::int) is skipped whole.
func newSQL(text string, compound bool, syms *Symbols) *SQL {
	sql := &SQL{Compound: compound}
	var query strings.Builder
	query.Grow(len(text))
	literalStart, i := 0, 0
	for {
		k := strings.IndexByte(text[i:], ':')
		if k < 0 {
			break
		}
		colon := i + k
		nameLen := sqlVarNameLen(text[colon+1:])
		if nameLen == 0 {
			i = colon
			for i < len(text) && text[i] == ':' {
				i++
			}
			continue
		}
		end := colon + 1 + nameLen
		if colon > literalStart {
			sql.Parts = append(sql.Parts, SQLPart{Text: text[literalStart:colon], Var: NoVar})
		}
		ref := syms.Ref(text[colon+1 : end])
		sql.Parts = append(sql.Parts, SQLPart{Text: text[colon:end], Var: ref})
		sql.Params = append(sql.Params, ref)
		query.WriteString(text[literalStart:colon])
		query.WriteByte('$')
		query.WriteString(strconv.Itoa(len(sql.Params)))
		literalStart, i = end, end
	}
	if literalStart < len(text) {
		sql.Parts = append(sql.Parts, SQLPart{Text: text[literalStart:], Var: NoVar})
	}
	query.WriteString(text[literalStart:])
	sql.Query = query.String()
	return sql
}

// sqlVarNameLen is the length of the variable name at the start of s, as
// pgbench's parseVariable accepts it, or 0.
func sqlVarNameLen(s string) int {
	if len(s) == 0 || !isIdentStart(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && isVarChar(s[i]) {
		i++
	}
	return i
}

// AppendSimple appends the command as sent with the simple protocol: each
// variable reference replaced by the variable's text, and a reference to an
// unset variable left as written (":name"), as pgbench's assignVariables
// does. It allocates nothing beyond growing buf.
func (s *SQL) AppendSimple(buf []byte, vars *Vars) []byte {
	for i := range s.Parts {
		part := &s.Parts[i]
		if part.Var != NoVar {
			if out, ok := vars.AppendText(buf, part.Var); ok {
				buf = out
				continue
			}
		}
		buf = append(buf, part.Text...)
	}
	return buf
}

// validVarName mirrors pgbench's valid_variable_name: ASCII letters, '_'
// and bytes with the high bit set, then digits too.
func validVarName(name string) bool {
	return name != "" && sqlVarNameLen(name) == len(name)
}

func byteAt(s []byte, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// isSQLSpace is psqlscan's {space}; unlike C's isspace it excludes \v.
func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// isIdentStart is psqlscan's ident_start (also dolq_start, and the first
// character of a pgbench variable name).
func isIdentStart(c byte) bool { return isASCIILetter(c) || c == '_' || c >= 0x80 }

// isIdentCont is psqlscan's ident_cont, which allows '$'.
func isIdentCont(c byte) bool { return isVarChar(c) || c == '$' }

// isVarChar is psqlscan's variable_char (also dolq_cont).
func isVarChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDolqStart(c byte) bool { return isIdentStart(c) }

func isDolqCont(c byte) bool { return isVarChar(c) }

// asciiEqualFold compares like pg_strcasecmp: ASCII letters only.
func asciiEqualFold(word []byte, lower string) bool {
	if len(word) != len(lower) {
		return false
	}
	for i := range word {
		c := word[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// CheckExtended reports the first SQL command that the extended and
// prepared protocols cannot send because it refers to variables more than
// MaxParams times. pgbench -M extended|prepared refuses such a script at
// startup, while the simple protocol (the default) runs it, so Parse
// accepts it and a caller choosing those protocols asks here.
func (s *Script) CheckExtended() error {
	for _, cmd := range s.Commands {
		if cmd.Kind == KindSQL && len(cmd.SQL.Params) > MaxParams {
			return &Error{Pos: cmd.Pos, Msg: fmt.Sprintf(
				"statement has too many arguments (maximum is %d, it has %d) for the extended and prepared protocols; use -M simple",
				MaxParams, len(cmd.SQL.Params))}
		}
	}
	return nil
}
