// Package mdbdialect is the language MariaDB workloads' scripts are
// written in, for the backend, its rules and its client alike.
package mdbdialect

import (
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqllex"
)

// Script is SQL as MySQL and MariaDB lex it (backquoted names, # and "-- "
// comments, backslash escapes in strings), split at every semicolon as the
// mysql client splits, with ? placeholders for prepared statements.
func Script() script.Dialect {
	return script.Dialect{Name: "mysql", SQL: sqllex.MySQL, EverySemicolon: true, QuestionMarks: true}
}
