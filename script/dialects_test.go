package script

import "github.com/firedrill/firedrill/sqllex"

// The dialects the kinds provide (db/<kind>), written out for this
// package's tests, which may not import the kinds.
var (
	PostgreSQL = Dialect{Name: "postgresql", SQL: sqllex.PostgreSQL}
	MySQL      = Dialect{Name: "mysql", SQL: sqllex.MySQL, EverySemicolon: true, QuestionMarks: true}
	Redis      = Dialect{Name: "redis", Lines: true}
)

// skipMySQLComments is skipEmptyStatement in MySQL's SQL.
func skipMySQLComments(text []byte) int { return skipEmptyStatement(MySQL.SQL, text) }
