package sqlcheck

import (
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqllex"
)

// The script dialects the kinds provide (db/<kind>/*dialect), written out
// for this package's tests, which may not import the kinds.
var (
	pgbenchScripts = script.Dialect{Name: "postgresql", SQL: sqllex.PostgreSQL}
	mysqlScripts   = script.Dialect{Name: "mysql", SQL: sqllex.MySQL, EverySemicolon: true, QuestionMarks: true}
)
