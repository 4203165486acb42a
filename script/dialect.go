package script

import "fmt"

// Dialect is the language of a script's commands between its
// meta-commands: the database's own. The meta-commands (\set, \sleep,
// \if, \gset, pipelines …) and the expression language are the same in
// every dialect.
type Dialect uint8

// The dialects. A backend names its own (backend.Dialected).
const (
	// PostgreSQL is SQL as pgbench reads it: a command runs to an
	// unquoted semicolon, with PostgreSQL's quoting ('…', E'…', "…",
	// $tag$…$tag$) and comments.
	PostgreSQL Dialect = iota
	// MySQL is SQL as MySQL and MariaDB lex it: backquoted names, # and
	// -- comments, backslash escapes inside quoted strings.
	MySQL
	// Redis is one Redis command per line, whose arguments substitute
	// :variables.
	Redis
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	case Redis:
		return "redis"
	}
	return fmt.Sprintf("dialect(%d)", uint8(d))
}

// ParseDialect reads one script file in the given dialect; Parse is
// ParseDialect with PostgreSQL.
func ParseDialect(file string, src []byte, syms *Symbols, d Dialect) (*Script, error) {
	if err := checkText(file, src); err != nil {
		return nil, err
	}
	switch d {
	case PostgreSQL:
		return Parse(file, src, syms)
	case MySQL:
		return parseMySQL(file, src, syms)
	case Redis:
		return parseRedis(file, src, syms)
	}
	return nil, &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("scripts in the %s dialect cannot be read yet", d)}
}
