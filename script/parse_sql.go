package script

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/sqllex"
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

// sqlLexer finds where a script's SQL commands end. Tokens are the
// dialect's (sqllex); on top of them it follows psqlscan.l as pgbench uses
// it (no psql variables): a ';' ends a command unless it is inside quotes,
// comments, dollar quotes, or, with psql's splitting, parentheses or a
// CREATE FUNCTION ... BEGIN ATOMIC body; an unquoted '\' starts a
// meta-command; "\;" and "\:" put a literal ';' or ':' into the command.
// The parenthesis and BEGIN counters survive from one command to the next,
// as psqlscan's do.
type sqlLexer struct {
	src        []byte
	off        int
	parenDepth int
	beginDepth int
	// identCount and idents recognise CREATE [OR REPLACE] FUNCTION|PROCEDURE
	// from the first letters of the statement's first identifiers.
	identCount int
	idents     [4]byte
	// dialect lexes the SQL; everySemicolon ends a command at every
	// unquoted ';' (Dialect.EverySemicolon).
	dialect        sqllex.Dialect
	everySemicolon bool
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
	psql := !lx.everySemicolon
	i := lx.off
	for i < n {
		// A backslash and a colon start no SQL token: they are the
		// script's own.
		switch c := s[i]; c {
		case '\\':
			switch byteAt(s, i+1) {
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
			continue
		case ':':
			j, replacement := colonToken(s, i)
			if replacement != "" {
				emitString(i, replacement)
			} else {
				emit(i, j)
			}
			i = j
			continue
		}
		tok := sqllex.Next(lx.dialect, s, i)
		switch tok.Kind {
		case sqllex.Space, sqllex.LineComment:
			// Whitespace and -- comments before the first token are dropped.
			if len(chunk.text) > 0 {
				emit(i, tok.End)
			}
		case sqllex.Word:
			if psql {
				lx.identifier(s[i:tok.End])
			}
			emit(i, tok.End)
		case sqllex.Punct:
			emit(i, tok.End)
			switch s[i] {
			case '(':
				if psql {
					lx.parenDepth++
				}
			case ')':
				if psql && lx.parenDepth > 0 {
					lx.parenDepth--
				}
			case ';':
				if lx.parenDepth == 0 && lx.beginDepth == 0 {
					lx.identCount = 0
					lx.off = tok.End
					return chunk, stopSemicolon
				}
			}
		default:
			emit(i, tok.End)
		}
		i = tok.End
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

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// isIdentStart is psqlscan's ident_start (also dolq_start, and the first
// character of a pgbench variable name).
func isIdentStart(c byte) bool { return isASCIILetter(c) || c == '_' || c >= 0x80 }

// isVarChar is psqlscan's variable_char (also dolq_cont).
func isVarChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

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
