package mariadb

import (
	"strings"
	"unicode/utf8"

	"github.com/firedrill/firedrill/sqllex"
)

// statement is one SQL statement of a setup file, with where it starts.
type statement struct {
	Text      string
	Line, Col int // 1-based, of the statement's first character in the file
}

// splitStatements splits a setup file into statements as the mysql client
// does when a file is piped to it: a statement ends at the delimiter (";"
// unless a DELIMITER line changed it) outside quotes ('…', "…", `…`) and
// comments (#…, -- …, /*…*/), and a DELIMITER line is the client's, not the
// server's. Stored programs written for the mysql client (DELIMITER //
// … END // DELIMITER ;) therefore arrive whole. Empty statements are
// dropped.
func splitStatements(text string) []statement {
	var out []statement
	delimiter := ";"
	line, col := 1, 1
	start, startLine, startCol := -1, 0, 0 // the current statement, -1 before its first character
	advance := func(s string) {
		for _, r := range s {
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
	}
	flush := func(end int) {
		if start >= 0 {
			if stmt := strings.TrimSpace(text[start:end]); stmt != "" {
				out = append(out, statement{Text: stmt, Line: startLine, Col: startCol})
			}
		}
		start = -1
	}
	i := 0
	for i < len(text) {
		c := text[i]
		// A DELIMITER command: only at the start of a statement, on its own line.
		if start < 0 && (c == 'd' || c == 'D') && atLineStart(text, i) {
			if rest, ok := delimiterCommand(text[i:]); ok {
				lineEnd := strings.IndexByte(text[i:], '\n')
				if lineEnd < 0 {
					lineEnd = len(text) - i
				}
				if rest != "" {
					delimiter = rest
				}
				advance(text[i : i+lineEnd])
				i += lineEnd
				continue
			}
		}
		if start < 0 && !isSpace(c) {
			start, startLine, startCol = i, line, col
		}
		if strings.HasPrefix(text[i:], delimiter) {
			flush(i)
			advance(delimiter)
			i += len(delimiter)
			continue
		}
		tok := sqllex.Next(sqllex.MySQL, text, i)
		switch tok.Kind {
		case sqllex.String, sqllex.QuotedName, sqllex.BlockComment:
		case sqllex.LineComment:
			if start == i {
				start = -1 // a comment alone is no statement
			}
		default:
			// Anything else may hold the delimiter (//, $$): one character at a time.
			_, size := utf8.DecodeRuneInString(text[i:])
			tok.End = i + size
		}
		advance(text[i:tok.End])
		i = tok.End
	}
	flush(len(text))
	return out
}

// delimiterCommand reports whether s starts with the mysql client's
// DELIMITER command, and the new delimiter.
func delimiterCommand(s string) (string, bool) {
	const word = "delimiter"
	if len(s) <= len(word) || !strings.EqualFold(s[:len(word)], word) || !isSpace(s[len(word)]) {
		return "", false
	}
	rest := s[len(word):]
	if end := strings.IndexByte(rest, '\n'); end >= 0 {
		rest = rest[:end]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", true
	}
	return fields[0], true
}

// atLineStart reports whether only blanks precede text[i] on its line.
func atLineStart(text string, i int) bool {
	for j := i - 1; j >= 0 && text[j] != '\n'; j-- {
		if text[j] != ' ' && text[j] != '\t' && text[j] != '\r' {
			return false
		}
	}
	return true
}

// isSpace reports whether c is an ASCII blank.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
