package script

import (
	"fmt"

	"github.com/firedrill/firedrill/sqllex"
)

// Dialect is the language of a script's commands between its
// meta-commands: the database's own. The meta-commands (\set, \sleep,
// \if, \gset, pipelines …) and the expression language are the same in
// every dialect. Each kind provides its own (backend.Dialected); the zero
// Dialect is pgbench's.
type Dialect struct {
	// Name names the dialect in messages.
	Name string
	// Lines is true for a language of one command per line, split into
	// words as a command-line client splits what is typed at its prompt
	// (Command.Redis), rather than SQL.
	Lines bool
	// SQL is how SQL commands are lexed: where quotes and comments begin
	// and end, so that a ';' or '\' inside them is text.
	SQL sqllex.Dialect
	// EverySemicolon ends a SQL command at every unquoted ';' and drops a
	// command of nothing but comments, as the mysql client splits; without
	// it commands split as psql splits them for pgbench: parentheses and
	// CREATE FUNCTION … BEGIN ATOMIC bodies hold semicolons, and leading
	// -- comments are skipped as pgbench's skip_sql_comments does.
	EverySemicolon bool
	// Syntax, when set, is a kind's own language of commands (an HTTP
	// request), parsed by the kind; SQL, EverySemicolon and QuestionMarks
	// then mean nothing.
	Syntax Syntax
	// QuestionMarks writes each variable of a SQL command's Query as ?
	// rather than $1, $2 ….
	QuestionMarks bool
	// Commands, for a dialect of Lines, are the commands its server
	// knows (UnknownCommands checks a script against them); nil checks
	// no name.
	Commands *Commands
}

// pgbench is pgbench's own dialect, the zero Dialect's meaning: SQL as
// psql lexes and splits it for pgbench, parameters numbered $1 ….
var pgbench = Dialect{Name: "pgbench", SQL: sqllex.PostgreSQL} // never changed

// String names the dialect.
func (d Dialect) String() string {
	if d == (Dialect{}) {
		return pgbench.Name
	}
	if d.Name == "" {
		return fmt.Sprintf("dialect(sql %b)", d.SQL)
	}
	return d.Name
}

// ParseDialect reads one script file in the given dialect; Parse is
// ParseDialect with pgbench's.
func ParseDialect(file string, src []byte, syms *Symbols, d Dialect) (*Script, error) {
	if err := checkText(file, src); err != nil {
		return nil, err
	}
	if d.Lines {
		return parseRedis(file, src, syms)
	}
	if d.Syntax != nil {
		return parseSyntax(file, src, syms, d)
	}
	if d == (Dialect{}) {
		d = pgbench
	}
	s, err := parseIn(file, src, syms, d)
	if err != nil {
		return nil, err
	}
	if d.QuestionMarks {
		for _, cmd := range s.Commands {
			if cmd.Kind == KindSQL {
				cmd.SQL.Query = questionQuery(cmd.SQL)
			}
		}
	}
	return s, nil
}
