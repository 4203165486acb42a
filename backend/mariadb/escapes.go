package mariadb

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// escape is a place in SQL that reaches outside firedrill's database.
type escape struct {
	Line, Col int    // in the text given to escapes, 1-based
	What      string // what it does, with a hint
}

// serverStatements begin statements that change the server rather than a
// database's tables (or, for USE, leave firedrill's database), keyed by
// their first words.
var serverStatements = map[string]string{
	"use":                "switches to another database",
	"create database":    "creates a database",
	"create schema":      "creates a database",
	"drop database":      "drops a database",
	"drop schema":        "drops a database",
	"alter database":     "changes a database",
	"alter schema":       "changes a database",
	"grant":              "changes privileges",
	"revoke":             "changes privileges",
	"create user":        "creates a user",
	"drop user":          "drops a user",
	"alter user":         "changes a user",
	"rename user":        "renames a user",
	"create role":        "creates a role",
	"drop role":          "drops a role",
	"set password":       "changes a password",
	"set global":         "changes a global variable (use a settings event: it is put back after the run)",
	"set persist":        "changes a global variable for good",
	"install":            "installs a plugin",
	"uninstall":          "removes a plugin",
	"flush":              "flushes server state",
	"reset":              "resets server state",
	"purge":              "purges the server's logs",
	"shutdown":           "stops the server",
	"kill":               "kills sessions (use a terminate event)",
	"change master":      "changes replication",
	"change replication": "changes replication",
	"start slave":        "starts replication",
	"stop slave":         "stops replication",
	"start replica":      "starts replication",
	"stop replica":       "stops replication",
}

// nameBefore are the words after which a qualified name db.table names a
// table (not an alias.column).
var nameBefore = map[string]bool{
	"from": true, "join": true, "into": true, "update": true, "table": true, "tables": true,
	"exists": true, "references": true, "view": true, "trigger": true, "procedure": true,
	"function": true, "call": true, "like": true, "insert": true, "replace": true, "truncate": true,
	"describe": true, "desc": true, "event": true, "sequence": true, "straight_join": true,
}

// sqlToken is a word, a quoted name, or one other character of SQL.
type sqlToken struct {
	text      string // a word lower-cased, a quoted name unquoted
	quoted    bool
	word      bool
	line, col int
}

// escapes lists the places in text (setup SQL or a script) that reach
// outside database: statements that change the server, and tables
// qualified with another database's name.
func escapes(database, text string) []escape {
	var out []escape
	for _, stmt := range splitStatements(text) {
		tokens := lexSQL(stmt.Text)
		at := func(t sqlToken) (int, int) {
			if t.line == 1 {
				return stmt.Line, stmt.Col + t.col - 1
			}
			return stmt.Line + t.line - 1, t.col
		}
		if len(tokens) > 0 && tokens[0].word {
			first := tokens[0].text
			two := first
			if len(tokens) > 1 {
				two += " " + tokens[1].text
			}
			what, ok := serverStatements[two]
			if !ok {
				what, ok = serverStatements[first]
			}
			// SET @@GLOBAL.x and SET GLOBAL x are the same statement.
			if !ok && first == "set" && strings.Contains(strings.ToLower(stmt.Text), "@@global.") {
				what, ok = serverStatements["set global"], true
			}
			if ok && !namesOnly(tokens, database) {
				line, col := at(tokens[0])
				out = append(out, escape{line, col, strings.ToUpper(strings.Fields(two)[0]) + ": " + what})
				continue
			}
		}
		for i := 0; i+2 < len(tokens); i++ {
			name, dot, next := tokens[i], tokens[i+1], tokens[i+2]
			if !(name.word || name.quoted) || dot.text != "." || dot.quoted || !(next.word || next.quoted || next.text == "*") {
				continue
			}
			threePart := i+4 < len(tokens) && tokens[i+3].text == "." && !tokens[i+3].quoted
			after := i > 0 && tokens[i-1].word && nameBefore[tokens[i-1].text]
			// ON names a table in CREATE INDEX/TRIGGER … ON t, a condition in JOIN … ON a.x = b.y.
			if i > 0 && tokens[i-1].text == "on" && tokens[0].text == "create" {
				after = true
			}
			if (after || threePart) && name.text != database {
				line, col := at(name)
				out = append(out, escape{line, col, "names the database " + name.text + " (qualify nothing, or only with " + database + ")"})
			}
			i += 2
		}
	}
	return out
}

// namesOnly reports whether a server statement names only firedrill's own
// database (USE firedrill, CREATE DATABASE IF NOT EXISTS firedrill).
func namesOnly(tokens []sqlToken, database string) bool {
	if len(tokens) < 2 {
		return false
	}
	switch tokens[0].text {
	case "use", "create", "alter":
	default:
		return false
	}
	last := tokens[len(tokens)-1]
	return (last.word || last.quoted) && last.text == database
}

// lexSQL splits one statement into tokens, skipping blanks and comments.
func lexSQL(text string) []sqlToken {
	var tokens []sqlToken
	line, col := 1, 1
	advance := func(s string) {
		for _, r := range s {
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isSpace(c):
			advance(text[i : i+1])
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(text[i:], "--") && (i+2 == len(text) || isSpace(text[i+2]))):
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			advance(text[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				end = len(text)
			} else {
				end += i + 4
			}
			advance(text[i:end])
			i = end
		case c == '`' || c == '"' || c == '\'':
			end := quotedEnd(text, i)
			inner := text[i+1 : max(end-1, i+1)]
			if c == '`' {
				tokens = append(tokens, sqlToken{text: strings.ReplaceAll(inner, "``", "`"), quoted: true, line: line, col: col})
			} else {
				tokens = append(tokens, sqlToken{text: "'", line: line, col: col}) // a string: its content is no name
			}
			advance(text[i:end])
			i = end
		case isWordByte(c):
			end := i
			for end < len(text) && isWordByte(text[end]) {
				end++
			}
			tokens = append(tokens, sqlToken{text: strings.ToLower(text[i:end]), word: true, line: line, col: col})
			advance(text[i:end])
			i = end
		default:
			_, size := utf8.DecodeRuneInString(text[i:])
			tokens = append(tokens, sqlToken{text: text[i : i+size], line: line, col: col})
			advance(text[i : i+size])
			i += size
		}
	}
	return tokens
}

// isWordByte reports whether c can be part of an unquoted name or keyword
// (':' for the scripts' :variables, '@' for user and system variables).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c == ':' || c == '@' || c >= 0x80 ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// describe is "line:col what", for tests and messages.
func (e escape) describe() string { return fmt.Sprintf("%d:%d %s", e.Line, e.Col, e.What) }
