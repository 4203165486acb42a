package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/sqllex"
)

// Escape is a place where SQL meant to stay inside firedrill's schema on a
// user's server would reach outside it: an object of another schema, the
// search path, or an object of the whole database or cluster.
type Escape struct {
	Line, Col int    // 1-based position in the SQL text
	Object    string // what it names, e.g. "public.customers", "search_path", "DATABASE"
	Why       string // e.g. "names an object in schema public"
	// Unseen marks SQL whose reach cannot be judged from its text (a DO
	// block, EXECUTE of a built string): a warning, not a refusal; on a
	// given server the run's role's privileges are what hold it.
	Unseen bool
}

func (e Escape) String() string {
	return fmt.Sprintf("%d:%d: %s %s", e.Line, e.Col, e.Object, e.Why)
}

// Confinement says which schema SQL must stay in, and which other schemas
// the server has (so that a qualified name "x.y" is known to be a schema's
// object, not a table's column).
type Confinement struct {
	Schema string // firedrill's own schema, e.g. "firedrill"
	// Others are the server's other schemas (pg_namespace), lower case.
	// When empty, "public" is assumed: the only schema every database has.
	Others []string
}

// readOnlyStarts are the statements that only read, whatever they name.
var readOnlyStarts = []string{"select", "values", "show", "table", "explain", "fetch", "declare"}

// wholeDatabaseObjects are the object types that live outside any schema:
// creating, changing or dropping one changes the user's database or cluster.
var wholeDatabaseObjects = []string{
	"database", "role", "user", "group", "tablespace", "extension", "publication",
	"subscription", "event", "server", "foreign", "language", "system", "default",
}

// serverFunctions are functions that act beyond the schema whatever their
// arguments: large objects (the database's, not a schema's), the server's
// files and programs, other sessions, the configuration, other
// connections.
var serverFunctions = map[string]string{
	"lo_unlink": "large objects", "lo_import": "large objects", "lo_export": "large objects",
	"lo_put": "large objects", "lo_truncate": "large objects", "lo_truncate64": "large objects",
	"lowrite": "large objects", "lo_open": "large objects", "lo_create": "large objects",
	"lo_creat": "large objects", "lo_from_bytea": "large objects", "lo_get": "large objects",
	"pg_read_file": "the server's files", "pg_read_binary_file": "the server's files", "pg_ls_dir": "the server's files",
	"pg_stat_file": "the server's files", "pg_file_write": "the server's files",
	"pg_reload_conf": "the server's configuration", "pg_rotate_logfile": "the server", "pg_promote": "the server",
	"pg_switch_wal": "the server", "pg_create_restore_point": "the server",
	"dblink": "another connection", "dblink_exec": "another connection", "dblink_connect": "another connection",
	"dblink_connect_u": "another connection",
}

// Escapes lists every place in sql (one or more statements) that would
// create, change or drop something outside c.Schema. It is a lexical
// check: unqualified names are confined by the search path the caller sets
// (c.Schema only), so only what a search path cannot confine is listed —
// qualified names in other schemas, search-path changes, and objects of
// the whole database. Dynamic SQL built in strings is not seen.
func (c Confinement) Escapes(sql string) []Escape {
	others := c.Others
	if len(others) == 0 {
		others = []string{"public"}
	}
	own := strings.ToLower(c.Schema)
	var out []Escape
	// One statement's tokens at a time: a script of 100,000 commands
	// lexed whole took ~60 MB of tokens (issue 14).
	var stmt []sqlToken
	check := func() {
		for _, st := range splitStatements(stmt) {
			out = append(out, c.statementEscapes(st, own, others)...)
		}
		stmt = stmt[:0]
	}
	lexSQL(sql, func(t sqlToken) {
		if t.kind == tokPunct && t.text == ";" {
			check()
			return
		}
		stmt = append(stmt, t)
	})
	check()
	return out
}

func (c Confinement) statementEscapes(st []sqlToken, own string, others []string) []Escape {
	if len(st) == 0 {
		return nil
	}
	var out []Escape
	esc := func(t sqlToken, object, why string) {
		out = append(out, Escape{Line: t.line, Col: t.col, Object: object, Why: why})
	}
	first := st[0].word()
	// Statements that change the whole database or cluster.
	if slices.Contains([]string{"create", "alter", "drop", "comment", "grant", "revoke"}, first) {
		for i := 1; i < len(st) && i < 6; i++ {
			w := st[i].word()
			if w == "or" || w == "replace" || w == "on" || w == "if" || w == "not" || w == "exists" ||
				w == "unique" || w == "temp" || w == "temporary" || w == "unlogged" || w == "trusted" || w == "procedural" {
				continue
			}
			if slices.Contains(wholeDatabaseObjects, w) && (first != "create" || w != "default") {
				what := strings.ToUpper(w)
				if w == "event" || w == "foreign" || w == "default" {
					what += " " + strings.ToUpper(st[min(i+1, len(st)-1)].text)
				}
				esc(st[0], strings.ToUpper(first)+" "+what, "changes the whole database or server, not the schema "+own)
			}
			break
		}
	}
	if first == "reassign" || (first == "drop" && len(st) > 1 && st[1].word() == "owned") {
		esc(st[0], strings.ToUpper(first)+" OWNED", "changes objects in every schema")
	}
	out = append(out, c.serverEscapes(st, own)...)
	readOnly := slices.Contains(readOnlyStarts, first)
	for i, t := range st {
		w := t.word()
		switch {
		case w == "search_path" && i > 0 && (st[i-1].word() == "set" || st[i-1].word() == "session" || st[i-1].word() == "local"):
			if p := searchPathOutside(st[i+1:], own); p != "" {
				esc(t, "search_path", fmt.Sprintf("is set to include %s, outside the schema %s", p, own))
			}
		case w == "schema" && i > 0 && st[i-1].word() == "set" && i+1 < len(st) && st[i+1].kind != tokPunct:
			// SET SCHEMA 'x' (the search path) or ALTER … SET SCHEMA x (moves an object).
			if name := st[i+1].name(); name != own {
				esc(st[i+1], name, "is another schema: the statement moves an object or the search path out of "+own)
			}
		case !readOnly && w == "schema" && i+1 < len(st) && st[i+1].kind != tokPunct && first != "set":
			// CREATE/DROP/ALTER SCHEMA x, GRANT … ON SCHEMA x, ALL TABLES IN SCHEMA x.
			j := i + 1
			for j < len(st) && (st[j].word() == "if" || st[j].word() == "not" || st[j].word() == "exists") {
				j++
			}
			if j < len(st) && st[j].kind != tokPunct {
				if name := st[j].name(); name != own && name != "authorization" {
					esc(st[j], name, "is another schema than "+own)
				}
			}
		case t.kind == tokString && strings.EqualFold(t.text, "search_path") && i >= 2 &&
			st[i-1].text == "(" && st[i-2].word() == "set_config":
			esc(t, "search_path", "is changed by set_config, which takes the session out of the schema "+own)
		case !readOnly && (t.kind == tokWord || t.kind == tokQuoted) && i+2 < len(st) && st[i+1].text == "." &&
			(i == 0 || st[i-1].text != "."):
			schema := t.name()
			if i+4 < len(st) && st[i+3].text == "." { // database.schema.object
				schema = st[i+2].name()
			}
			if schema != own && slices.Contains(others, schema) {
				esc(t, qualified(st, i), "names an object in schema "+schema+", outside "+own)
			}
		}
	}
	return out
}

// serverEscapes lists what reaches outside the schema through the server
// rather than through a name: COPY with a program or a server file, large
// objects, other sessions, the session's role, and CREATE OR REPLACE of a
// qualified object elsewhere; and, as Unseen, dynamic SQL.
func (c Confinement) serverEscapes(st []sqlToken, own string) []Escape {
	var out []Escape
	esc := func(t sqlToken, object, why string) {
		out = append(out, Escape{Line: t.line, Col: t.col, Object: object, Why: why})
	}
	first := st[0].word()
	switch first {
	case "copy":
		for i := 1; i < len(st); i++ {
			if w := st[i].word(); (w == "to" || w == "from") && i+1 < len(st) {
				switch next := st[i+1]; {
				case next.word() == "program":
					esc(st[0], "COPY "+strings.ToUpper(w)+" PROGRAM", "runs a program on the database server")
				case next.kind == tokString:
					esc(next, "COPY "+strings.ToUpper(w)+" '"+next.text+"'", "reads or writes a file on the database server")
				}
				break
			}
		}
	case "set", "reset":
		for i := 1; i < len(st) && i < 4; i++ {
			w := st[i].word()
			if w == "session" && i+1 < len(st) && st[i+1].word() == "authorization" || w == "role" {
				esc(st[0], strings.ToUpper(first)+" "+strings.ToUpper(w), "changes the role the session runs as")
				break
			}
			if w != "local" && w != "session" {
				break
			}
		}
	case "do":
		esc(st[0], "DO", "runs a block whose dynamic SQL (EXECUTE) cannot be judged from its text")
		out[len(out)-1].Unseen = true
	case "create":
		// CREATE OR REPLACE of an object qualified with another schema,
		// pg_catalog included (the server's list of others leaves it out).
		if len(st) > 3 && st[1].word() == "or" && st[2].word() == "replace" {
			j := 3
			for j < len(st) && (st[j].word() == "trusted" || st[j].word() == "procedural" || st[j].word() == "constraint" ||
				st[j].word() == "recursive" || st[j].word() == "materialized" || st[j].word() == "temp" || st[j].word() == "temporary") {
				j++
			}
			j++ // the object's kind
			if j+2 < len(st) && (st[j].kind == tokWord || st[j].kind == tokQuoted) && st[j+1].text == "." {
				if schema := st[j].name(); schema != own {
					esc(st[j], qualified(st, j), "is replaced in schema "+schema+", outside "+own)
				}
			}
		}
	}
	for i, t := range st {
		w := t.word()
		if w == "execute" && dynamicExecute(st, i) {
			esc(t, "EXECUTE", "runs SQL built at run time, which cannot be judged from its text")
			out[len(out)-1].Unseen = true
		}
		call := w != "" && i+1 < len(st) && st[i+1].text == "("
		if call && i > 0 && st[i-1].text == "." {
			call = i >= 2 && st[i-2].word() == "pg_catalog" // another schema's function is not the server's
		}
		if !call {
			continue
		}
		switch {
		case w == "pg_terminate_backend" || w == "pg_cancel_backend":
			if !(i+4 < len(st) && st[i+2].word() == "pg_backend_pid" && st[i+3].text == "(") {
				esc(t, w, "may end or cancel sessions other than firedrill's own")
			}
		case serverFunctions[w] != "":
			esc(t, w, "acts on "+serverFunctions[w]+", not on the schema "+own)
		case w == "set_config" && i+2 < len(st) && st[i+2].kind == tokString &&
			(strings.EqualFold(st[i+2].text, "role") || strings.EqualFold(st[i+2].text, "session_authorization")):
			esc(st[i+2], strings.ToLower(st[i+2].text), "is changed by set_config, which changes the role the session runs as")
		}
	}
	return out
}

// dynamicExecute says whether the EXECUTE at st[i] runs a string (PL/pgSQL's
// dynamic SQL) rather than a prepared statement: EXECUTE name [(args)].
func dynamicExecute(st []sqlToken, i int) bool {
	if i+1 >= len(st) {
		return false
	}
	next := st[i+1]
	if next.kind != tokWord && next.kind != tokQuoted {
		return true // a string, a parenthesised expression
	}
	switch next.word() {
	case "format", "concat", "concat_ws", "replace", "quote_ident", "quote_literal", "quote_nullable", "lower", "upper", "immediate":
		return true
	}
	for _, t := range st[i+2:] {
		if t.text == "|" || t.word() == "using" || t.word() == "into" {
			return true // a || concatenation, PL/pgSQL's EXECUTE … USING/INTO
		}
	}
	return i != 0 // a statement's EXECUTE name is a prepared statement's; inside one, a variable's
}

// searchPathOutside returns the first schema of a SET search_path list
// that is not own (nor the always-searched pg_catalog and pg_temp).
func searchPathOutside(list []sqlToken, own string) string {
	for _, t := range list {
		switch {
		case t.text == ";":
			return ""
		case t.word() == "to" || t.text == "=" || t.text == ",":
		case t.word() == "default":
			return "the server's default (public)"
		default:
			for _, name := range strings.Split(t.name(), ",") {
				name = strings.Trim(strings.TrimSpace(name), `"`)
				if name != "" && name != own && name != "pg_catalog" && name != "pg_temp" {
					return name
				}
			}
		}
	}
	return ""
}

// qualified renders a dotted name starting at st[i].
func qualified(st []sqlToken, i int) string {
	var b strings.Builder
	for j := i; j < len(st); j += 2 {
		b.WriteString(st[j].text)
		if j+2 >= len(st) || st[j+1].text != "." {
			break
		}
		b.WriteByte('.')
	}
	return b.String()
}

type tokKind uint8

const (
	tokWord   tokKind = iota // keyword or unquoted identifier
	tokQuoted                // "identifier"
	tokString                // 'literal' (text without quotes)
	tokPunct                 // one punctuation character
	tokNumber
)

type sqlToken struct {
	kind      tokKind
	text      string
	line, col int
}

// word is a keyword's lower-case text ("" for other kinds).
func (t sqlToken) word() string {
	if t.kind != tokWord {
		return ""
	}
	return strings.ToLower(t.text)
}

// name is an identifier as the server folds it.
func (t sqlToken) name() string {
	if t.kind == tokQuoted || t.kind == tokString {
		return t.text
	}
	return strings.ToLower(t.text)
}

// lexSQL splits PostgreSQL SQL into tokens, skipping comments, and gives
// them to emit in order. The bodies of dollar-quoted strings (function
// bodies, DO blocks) are lexed as SQL too, with their positions, since
// they run later with the same search path; a body's text that is not SQL
// yields harmless tokens.
func lexSQL(src string, emit func(sqlToken)) {
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
	for i := 0; i < len(src); {
		tok := sqllex.Next(sqllex.PostgreSQL, src, i)
		text := src[i:tok.End]
		switch tok.Kind {
		case sqllex.Space, sqllex.LineComment, sqllex.BlockComment:
		case sqllex.String:
			emit(sqlToken{kind: tokString, text: sqllex.Unquote(sqllex.PostgreSQL, text), line: line, col: col})
		case sqllex.QuotedName:
			emit(sqlToken{kind: tokQuoted, text: sqllex.Unquote(sqllex.PostgreSQL, text), line: line, col: col})
		case sqllex.DollarString:
			tag := sqllex.DollarTag(text)
			advance(tag)
			body := text[len(tag):]
			if !tok.Unterminated {
				body = body[:len(body)-len(tag)]
			}
			lexSQL(body, func(t sqlToken) {
				if t.line == 1 {
					t.col += col - 1
				}
				t.line += line - 1
				emit(t)
			})
			advance(text[len(tag):])
			i = tok.End
			continue
		case sqllex.Word:
			emit(sqlToken{kind: tokWord, text: text, line: line, col: col})
		case sqllex.Number, sqllex.Param:
			emit(sqlToken{kind: tokNumber, text: text, line: line, col: col})
		default:
			emit(sqlToken{kind: tokPunct, text: text, line: line, col: col})
		}
		advance(text)
		i = tok.End
	}
}

// splitStatements cuts tokens at semicolons (Escapes gives it one
// statement's at a time). Semicolons inside a dollar-quoted body also cut,
// which is what we want: each statement of a function body is checked as
// one.
func splitStatements(toks []sqlToken) [][]sqlToken {
	var out [][]sqlToken
	start := 0
	for i, t := range toks {
		if t.kind == tokPunct && t.text == ";" {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	// A function body's first statement follows CREATE FUNCTION … AS: cut
	// at BEGIN/DECLARE too, so that its first keyword is seen as a start.
	var cut [][]sqlToken
	for _, st := range out {
		from := 0
		for i := 1; i < len(st); i++ {
			w := st[i].word()
			if (w == "begin" || w == "declare") && i+1 < len(st) {
				cut = append(cut, st[from:i])
				from = i + 1
			}
		}
		cut = append(cut, st[from:])
	}
	return cut
}
