package script

import (
	"strings"

	"github.com/firedrill/firedrill/sqllex"
)

// A dialect that splits at every semicolon (Dialect.EverySemicolon) reads
// SQL as the mysql client does, to find where a command ends:
//
//   - quotes and comments are the dialect's (sqllex): for MySQL, 'strings'
//     and "strings" with backslash escapes, `backquoted names`, # and "-- "
//     comments, /* … */ that do not nest; /*! … */ and /*M! … */
//     executable comments are comments here too, so their semicolons do
//     not end the command;
//   - an unquoted ';' ends the command, whatever the parentheses; a stored
//     program's body (BEGIN … END) therefore writes its inner semicolons
//     as \; which puts a literal ';' in the command, as in pgbench;
//   - :variables are substituted as pgbench does, and \: writes a
//     literal colon.
//
// Commands keep their text as written (trailing semicolon included) for
// the simple protocol; with Dialect.QuestionMarks, Query has a ? for each
// :variable (MySQL's placeholder) for prepared statements.

// questionQuery is the command's text with a ? for each variable reference.
func questionQuery(q *SQL) string {
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

// skipEmptyStatement is skipSQLComments for a dialect that splits at every
// semicolon: the offset of the command after leading whitespace, line
// comments and empty statements, or -1 if nothing but those and block
// comments remains, which the server would refuse as an empty query.
// Block comments are kept in the text (a marker comment should reach the
// server), but a command of nothing else is empty too.
func skipEmptyStatement(d sqllex.Dialect, text []byte) int {
	start := -1
	for i := 0; i < len(text); {
		tok := sqllex.Next(d, text, i)
		switch {
		case tok.Kind == sqllex.Space || tok.Kind == sqllex.LineComment:
		case tok.Kind == sqllex.BlockComment && !isExecutableComment(text[i:tok.End]):
			if start < 0 {
				start = i
			}
		case tok.Kind == sqllex.Punct && text[i] == ';':
			// A semicolon with nothing before it ends an empty statement.
		default:
			if start < 0 {
				start = i
			}
			return start
		}
		i = tok.End
	}
	return -1
}

// isExecutableComment says whether a comment is one MySQL runs: /*! … */,
// /*M! … */ (MariaDB) or an optimizer hint /*+ … */.
func isExecutableComment(comment []byte) bool {
	return sqllex.ExecutableOpening(comment) > 0 || byteAt(comment, 2) == '+'
}
