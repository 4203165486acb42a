package mariadb

import (
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/sqllex"
)

// escape is a place in SQL that reaches outside firedrill's database.
type escape struct {
	Line, Col int    // in the text given to escapes, 1-based
	What      string // what it does, with a hint
	// Unseen marks SQL built from a string (EXECUTE IMMEDIATE, PREPARE …
	// FROM), which no lexer can read before it runs: said, not refused,
	// since the confined account's privileges hold it all the same.
	Unseen bool
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
	"set role":           "takes a role's privileges",
	"set default":        "changes an account's default role",
	"create server":      "defines a link to a server",
	"alter server":       "changes a link to a server",
	"drop server":        "drops a link to a server",
	"load data":          "loads a file (reads the server's files)",
	"load xml":           "loads a file (reads the server's files)",
	"binlog":             "replays binary log events",
	"backup":             "locks the server for a backup",
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
	"using": true, "to": true, "handler": true, "checksum": true, "optimize": true, "repair": true,
	"analyze": true, "check": true, "index": true,
}

// listEnds are the words that end a list of tables (UPDATE a, b SET …;
// FROM a, b WHERE …), after which a comma no longer precedes a table.
var listEnds = map[string]bool{
	"set": true, "where": true, "on": true, "values": true, "value": true, "select": true, "group": true,
	"order": true, "limit": true, "having": true, "(": true, "partition": true, "for": true, "lock": true,
	"union": true, "window": true, "returning": true,
}

// routineKinds are the stored programs whose bodies are SQL the server
// runs later (as their definer): their statements are checked too.
var routineKinds = map[string]bool{"procedure": true, "function": true, "trigger": true, "event": true}

// bodyStarts are the tokens after which a statement of a stored program's
// body may begin: the header's end (a parameter list, FOR EACH ROW, DO, a
// characteristic) and the compound statements' separators.
var bodyStarts = map[string]bool{
	";": true, "begin": true, "do": true, "then": true, "else": true, ")": true, "row": true, "loop": true,
	"repeat": true, "deterministic": true, "definer": true, "invoker": true, "'": true, "sql": true, "data": true,
}

// sqlToken is a word, a quoted name, or one other character of SQL.
type sqlToken struct {
	text      string // a word lower-cased, a quoted name unquoted
	quoted    bool
	word      bool
	line, col int
}

// escapes lists the places in text (setup SQL or a script) that reach
// outside database: statements that change the server (also inside
// executable comments, stored programs' bodies and SET STATEMENT … FOR),
// tables qualified with another database's name (also in lists: DROP
// TABLE a, b; UPDATE a, b SET …), definers of other accounts, files on
// the server; and, marked Unseen, SQL built from strings.
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
		add := func(t sqlToken, what string, unseen bool) {
			line, col := at(t)
			out = append(out, escape{Line: line, Col: col, What: what, Unseen: unseen})
		}
		if e, ok := serverStatement(tokens, 0, database); ok {
			add(tokens[e.at], e.what, false)
			continue
		}
		routine := isRoutine(tokens)
		for i := 1; routine && i < len(tokens); i++ {
			if !bodyStarts[tokens[i-1].text] || tokens[i-1].quoted {
				continue
			}
			if e, ok := serverStatement(tokens, i, database); ok {
				add(tokens[e.at], e.what+" (in a stored program's body, which runs later)", false)
			}
		}
		for i, tok := range tokens {
			if !tok.word {
				continue
			}
			switch {
			case tok.text == "definer" && i+1 < len(tokens) && tokens[i+1].text == "=" && i+2 < len(tokens) &&
				!(tokens[i+2].word && tokens[i+2].text == "current_user"):
				add(tok, "DEFINER: runs a stored program or view as another account (leave DEFINER out: it is then yours)", false)
			case tok.text == "outfile" || tok.text == "dumpfile":
				add(tok, "INTO "+strings.ToUpper(tok.text)+": writes a file on the server", false)
			case tok.text == "load_file":
				add(tok, "LOAD_FILE: reads a file on the server", false)
			case (tok.text == "global" || tok.text == "persist" || tok.text == "persist_only") && i > 0 &&
				(tokens[i-1].text == "," || tokens[i-1].text == "set") && statementWord(tokens, "set"):
				add(tok, "SET "+strings.ToUpper(tok.text)+": "+serverStatements["set global"], false)
			case tok.text == "immediate" && i > 0 && tokens[i-1].text == "execute":
				add(tokens[i-1], "EXECUTE IMMEDIATE runs SQL built from a string, which firedrill cannot read before it runs", true)
			case tok.text == "prepare" && i+2 < len(tokens) && tokens[i+2].text == "from" && !tokens[i+2].quoted:
				add(tok, "PREPARE … FROM runs SQL built from a string, which firedrill cannot read before it runs", true)
			}
		}
		inList := false
		for i := 0; i < len(tokens); i++ {
			tok := tokens[i]
			switch {
			case tok.word && nameBefore[tok.text]:
				inList = true
			case !tok.quoted && listEnds[tok.text]:
				inList = false
			}
			if i+2 >= len(tokens) {
				continue
			}
			name, dot, next := tokens[i], tokens[i+1], tokens[i+2]
			if !(name.word || name.quoted) || dot.text != "." || dot.quoted || !(next.word || next.quoted || next.text == "*") {
				continue
			}
			threePart := i+4 < len(tokens) && tokens[i+3].text == "." && !tokens[i+3].quoted
			after := i > 0 && tokens[i-1].word && nameBefore[tokens[i-1].text]
			// DROP TABLE a, db.b; UPDATE a, db.b SET …; FROM a, db.b.
			if i > 0 && tokens[i-1].text == "," && !tokens[i-1].quoted && inList {
				after = true
			}
			// ON names a table in CREATE INDEX/TRIGGER … ON t, a condition in JOIN … ON a.x = b.y.
			if i > 0 && tokens[i-1].text == "on" && tokens[0].text == "create" {
				after = true
			}
			if (after || threePart) && name.text != database {
				add(name, "names the database "+name.text+" (qualify nothing, or only with "+database+")", false)
			}
			i += 2
		}
	}
	return out
}

// serverFound is a server statement found by serverStatement.
type serverFound struct {
	at   int    // the token it starts at
	what string // "GRANT: changes privileges"
}

// serverStatement reports whether a statement that changes the server
// starts at tokens[from]: by its first words, after SET STATEMENT … FOR,
// CREATE OR REPLACE and CREATE DEFINER = … .
func serverStatement(tokens []sqlToken, from int, database string) (serverFound, bool) {
	rest := tokens[from:]
	if len(rest) == 0 || !rest[0].word {
		return serverFound{}, false
	}
	// SET STATEMENT var = value FOR <statement>
	if rest[0].text == "set" && len(rest) > 1 && rest[1].text == "statement" {
		for j := 2; j < len(rest); j++ {
			if rest[j].word && rest[j].text == "for" {
				return serverStatement(tokens, from+j+1, database)
			}
		}
		return serverFound{}, false
	}
	words := significantWords(rest)
	first := words[0]
	two := first
	if len(words) > 1 {
		two += " " + words[1]
	}
	what, ok := serverStatements[two]
	if !ok {
		what, ok = serverStatements[first]
	}
	// SET @@GLOBAL.x and SET GLOBAL x are the same statement.
	if !ok && first == "set" {
		for _, t := range rest {
			if t.word && (strings.HasPrefix(t.text, "@@global") || strings.HasPrefix(t.text, "@@persist")) {
				what, ok = serverStatements["set global"], true
				break
			}
			if t.text == ";" {
				break
			}
		}
	}
	if !ok || namesOnly(rest, database) {
		return serverFound{}, false
	}
	return serverFound{at: from, what: strings.ToUpper(strings.Fields(two)[0]) + ": " + what}, true
}

// createKinds are what CREATE makes, to find it past OR REPLACE,
// DEFINER = account, ALGORITHM = … and the like.
var createKinds = map[string]bool{
	"database": true, "schema": true, "user": true, "role": true, "server": true, "table": true, "view": true,
	"procedure": true, "function": true, "trigger": true, "event": true, "index": true, "sequence": true,
	"temporary": true, "unique": true, "fulltext": true, "spatial": true, "aggregate": true, "package": true,
}

// significantWords are a statement's first two words (one if it has one),
// CREATE's the word of what it makes: CREATE OR REPLACE USER and CREATE
// DEFINER = x PROCEDURE are CREATE USER and CREATE PROCEDURE.
func significantWords(tokens []sqlToken) []string {
	words := []string{tokens[0].text}
	if words[0] == "create" {
		for _, t := range tokens[1:] {
			if t.word && createKinds[t.text] {
				return append(words, t.text)
			}
		}
	}
	if len(tokens) > 1 && tokens[1].word {
		words = append(words, tokens[1].text)
	}
	return words
}

// isRoutine reports whether a statement creates a stored program whose
// body runs later: CREATE [OR REPLACE] [DEFINER = …] PROCEDURE|FUNCTION|
// TRIGGER|EVENT, or ALTER EVENT … DO.
func isRoutine(tokens []sqlToken) bool {
	if len(tokens) < 2 || !(tokens[0].text == "create" || tokens[0].text == "alter") {
		return false
	}
	for _, t := range tokens[1:] {
		if t.word && routineKinds[t.text] {
			return true
		}
		if t.word && (t.text == "table" || t.text == "view" || t.text == "index" || t.text == "database" || t.text == "schema" || t.text == "user") {
			return false
		}
	}
	return false
}

// statementWord reports whether the statement starts with word.
func statementWord(tokens []sqlToken, word string) bool {
	return len(tokens) > 0 && tokens[0].word && tokens[0].text == word
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
	inExecutable := 0 // executable comments open around the current token
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
		if inExecutable > 0 && strings.HasPrefix(text[i:], "*/") {
			advance("*/")
			i += 2
			inExecutable--
			continue
		}
		if isWordByte(text[i]) {
			end := i
			for end < len(text) && isWordByte(text[end]) {
				end++
			}
			tokens = append(tokens, sqlToken{text: strings.ToLower(text[i:end]), word: true, line: line, col: col})
			advance(text[i:end])
			i = end
			continue
		}
		tok := sqllex.Next(sqllex.MySQL, text, i)
		raw := text[i:tok.End]
		switch tok.Kind {
		case sqllex.BlockComment:
			if n := sqllex.ExecutableOpening(raw); n > 0 {
				// /*! … */, /*M! … */, /*!50001 … */: the server runs the
				// body, so it is lexed as SQL; its */ is skipped above.
				advance(raw[:n])
				i += n
				inExecutable++
				continue
			}
		case sqllex.Space, sqllex.LineComment:
		case sqllex.QuotedName:
			tokens = append(tokens, sqlToken{text: sqllex.Unquote(sqllex.MySQL, raw), quoted: true, line: line, col: col})
		case sqllex.String:
			tokens = append(tokens, sqlToken{text: "'", line: line, col: col}) // a string: its content is no name
		default:
			tokens = append(tokens, sqlToken{text: raw, line: line, col: col})
		}
		advance(raw)
		i = tok.End
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
