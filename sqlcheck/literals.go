package sqlcheck

import (
	"regexp"
	"strings"
)

// Literals in statement texts as the servers report them (sampled
// activity, deadlock reports), for rules that count one statement once
// whatever its keys.

var numberLiteral = regexp.MustCompile(`\b\d+(\.\d+)?\b`)

// NormalizeLiterals replaces numbers in a query by "?", so that the same
// statement with different keys counts once.
func NormalizeLiterals(q string) string { return numberLiteral.ReplaceAllString(q, "?") }

var literalValue = regexp.MustCompile(`\$\d+|'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b`)

// SplitLiterals separates a query's literal values from its shape, and
// returns the values its WHERE clause compares by equality: "UPDATE t SET n = n + 1 WHERE
// id = 7" → ("UPDATE t SET n = n + ? WHERE id = ?", "7"). Parameters ($1)
// stay as they are.
func SplitLiterals(q string) (shape, whereValues string) {
	where := -1
	if i := strings.LastIndex(strings.ToUpper(q), " WHERE "); i >= 0 {
		where = i
	}
	var vals []string
	offset := 0
	shape = literalValue.ReplaceAllStringFunc(q, func(m string) string {
		i := strings.Index(q[offset:], m) + offset
		offset = i + len(m)
		if strings.HasPrefix(m, "$") {
			return m
		}
		if where >= 0 && i > where && strings.HasSuffix(strings.TrimRight(q[:i], " "), "=") {
			vals = append(vals, m) // an equality on the row's key, not a range
		}
		return "?"
	})
	return shape, strings.Join(vals, ", ")
}
