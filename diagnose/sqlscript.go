package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/firedrill/firedrill/timeline"
)

// stmtKind is what a script command does to the transaction it runs in,
// as far as the rules need to know.
type stmtKind int

const (
	stmtOther      stmtKind = iota // a query that neither locks nor writes rows
	stmtMeta                       // a client-side command (\set, \sleep, \if …)
	stmtBegin                      // BEGIN, START TRANSACTION
	stmtEnd                        // COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION
	stmtSavepoint                  // SAVEPOINT name
	stmtRelease                    // RELEASE [SAVEPOINT] name
	stmtRollbackTo                 // ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name
	stmtLock                       // SELECT … FOR UPDATE/NO KEY UPDATE/SHARE/KEY SHARE
	stmtWrite                      // UPDATE, DELETE, INSERT, MERGE
)

// sqlStmt is one script command classified: what it does, on which
// tables, and which row-lock strength it takes.
type sqlStmt struct {
	Kind      stmtKind
	Savepoint string   // the savepoint's name for SAVEPOINT, RELEASE and ROLLBACK TO
	Lock      string   // the lock clause, e.g. "FOR UPDATE" (stmtLock, or a write that also locks)
	Locked    []string // tables whose rows a locking clause locks
	Written   []string // tables the statement updates, deletes from, inserts into or merges into
}

// locksOrWrites reports whether the statement takes row locks or writes,
// so its (sub)transaction gets a transaction id.
func (s sqlStmt) locksOrWrites() bool { return len(s.Locked) > 0 || len(s.Written) > 0 }

// writesRow reports whether the statement modifies or exclusively locks
// rows of table: what turns an earlier lock into a MultiXact when done
// in a subtransaction.
func (s sqlStmt) writesRow(table string) bool {
	for _, t := range s.Written {
		if t == table {
			return true
		}
	}
	if s.Lock == "FOR UPDATE" || s.Lock == "FOR NO KEY UPDATE" {
		for _, t := range s.Locked {
			if t == table {
				return true
			}
		}
	}
	return false
}

// classifySQL reads one script command: comments are stripped, keywords
// compared case-insensitively, string literals and quoted identifiers
// skipped. It never fails: what it does not recognise is stmtOther.
func classifySQL(text string) sqlStmt {
	trimmed := strings.TrimSpace(stripSQLComments(text))
	if strings.HasPrefix(trimmed, `\`) {
		return sqlStmt{Kind: stmtMeta}
	}
	toks := sqlTokens(trimmed)
	if len(toks) == 0 {
		return sqlStmt{Kind: stmtOther}
	}
	word := func(i int) string {
		if i < len(toks) {
			return toks[i]
		}
		return ""
	}
	switch word(0) {
	case "begin", "start":
		if word(0) == "begin" || word(1) == "transaction" {
			return sqlStmt{Kind: stmtBegin}
		}
	case "commit", "end", "abort":
		if word(1) != "prepared" { // COMMIT PREPARED ends another transaction
			return sqlStmt{Kind: stmtEnd}
		}
	case "prepare":
		if word(1) == "transaction" {
			return sqlStmt{Kind: stmtEnd}
		}
	case "savepoint":
		return sqlStmt{Kind: stmtSavepoint, Savepoint: word(1)}
	case "release":
		if word(1) == "savepoint" {
			return sqlStmt{Kind: stmtRelease, Savepoint: word(2)}
		}
		return sqlStmt{Kind: stmtRelease, Savepoint: word(1)}
	case "rollback":
		i := 1
		if word(i) == "work" || word(i) == "transaction" {
			i++
		}
		if word(i) == "prepared" {
			return sqlStmt{Kind: stmtOther}
		}
		if word(i) != "to" {
			return sqlStmt{Kind: stmtEnd}
		}
		i++
		if word(i) == "savepoint" {
			i++
		}
		return sqlStmt{Kind: stmtRollbackTo, Savepoint: word(i)}
	}
	return classifyDML(toks)
}

// classifyDML finds the row locks and writes of a query, CTEs included.
func classifyDML(toks []string) sqlStmt {
	var st sqlStmt
	word := func(i int) string {
		if i >= 0 && i < len(toks) {
			return toks[i]
		}
		return ""
	}
	// tableAt returns the table named at i, skipping ONLY.
	tableAt := func(i int) string {
		if word(i) == "only" {
			i++
		}
		return tableName(word(i))
	}
	var fromTables []string
	for i, tok := range toks {
		switch tok {
		case "from", "join":
			if word(i-1) != "delete" && word(i+1) != "(" {
				if t := tableAt(i + 1); t != "" {
					fromTables = append(fromTables, t)
				}
			}
		case "update":
			switch word(i - 1) {
			case "for", "key", "do": // a lock clause, or ON CONFLICT DO UPDATE (the insert's table)
				continue
			}
			if t := tableAt(i + 1); t != "" {
				st.Written = append(st.Written, t)
			}
		case "delete":
			if word(i+1) == "from" {
				if t := tableAt(i + 2); t != "" {
					st.Written = append(st.Written, t)
				}
			}
		case "insert", "merge":
			if word(i+1) == "into" {
				if t := tableAt(i + 2); t != "" {
					st.Written = append(st.Written, t)
				}
			}
		case "for":
			lock := ""
			next := i + 1
			switch {
			case word(i+1) == "update":
				lock, next = "FOR UPDATE", i+2
			case word(i+1) == "no" && word(i+2) == "key" && word(i+3) == "update":
				lock, next = "FOR NO KEY UPDATE", i+4
			case word(i+1) == "share":
				lock, next = "FOR SHARE", i+2
			case word(i+1) == "key" && word(i+2) == "share":
				lock, next = "FOR KEY SHARE", i+3
			}
			if lock == "" {
				continue
			}
			st.Lock = strongerLock(st.Lock, lock)
			if word(next) == "of" {
				for j := next + 1; j < len(toks); j += 2 {
					if t := tableName(word(j)); t != "" {
						st.Locked = append(st.Locked, t)
					}
					if word(j+1) != "," {
						break
					}
				}
			} else {
				st.Locked = append(st.Locked, fromTables...)
			}
		}
	}
	st.Locked, st.Written = uniq(st.Locked), uniq(st.Written)
	switch {
	case len(st.Written) > 0:
		st.Kind = stmtWrite
	case st.Lock != "":
		st.Kind = stmtLock
	default:
		st.Kind = stmtOther
	}
	return st
}

// lockStrength orders the row-lock clauses, weakest first.
var lockStrength = map[string]int{"": 0, "FOR KEY SHARE": 1, "FOR SHARE": 2, "FOR NO KEY UPDATE": 3, "FOR UPDATE": 4}

func strongerLock(a, b string) string {
	if lockStrength[b] > lockStrength[a] {
		return b
	}
	return a
}

// tableName reduces a (possibly schema-qualified, possibly quoted) name
// to the table's own lower-case name; "" when tok is not a name.
func tableName(tok string) string {
	if tok == "" || sqlKeywords[tok] {
		return ""
	}
	if i := strings.LastIndexByte(tok, '.'); i >= 0 {
		tok = tok[i+1:]
	}
	tok = strings.Trim(tok, `"`)
	if tok == "" || !(isIdentStart(rune(tok[0])) || tok[0] >= 0x80) {
		return ""
	}
	return tok
}

// sqlKeywords are words that follow FROM/JOIN/UPDATE without being a table.
var sqlKeywords = map[string]bool{"select": true, "lateral": true, "set": true, "where": true, "(": true, "values": true}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// stripSQLComments removes -- and (nested) /* */ comments, leaving string
// literals, quoted identifiers and dollar-quoted bodies alone.
func stripSQLComments(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			depth := 0
			for i < len(text) {
				if strings.HasPrefix(text[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(text[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			b.WriteByte(' ')
		case c == '\'' || c == '"':
			j := quotedEnd(text, i)
			b.WriteString(text[i:j])
			i = j
		case c == '$':
			if tag, ok := dollarTag(text[i:]); ok {
				end := strings.Index(text[i+len(tag):], tag)
				j := len(text)
				if end >= 0 {
					j = i + len(tag) + end + len(tag)
				}
				b.WriteString(text[i:j])
				i = j
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// quotedEnd returns the index just after the quoted text starting at i
// ('…' or "…", a doubled quote standing for itself).
func quotedEnd(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		if text[j] == q {
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(text)
}

// dollarTag returns the $tag$ opening s, if s opens a dollar quote ($1 is
// a parameter, not a quote).
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			if j > 1 && s[1] >= '0' && s[1] <= '9' {
				return "", false
			}
			return s[:j+1], true
		}
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80) {
			return "", false
		}
	}
	return "", false
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// sqlTokens splits comment-free SQL into lower-case words (identifiers,
// possibly qualified with dots and quoted parts kept) and single
// punctuation characters; literals become a placeholder "'" token.
func sqlTokens(text string) []string { return sqlTokensAt(text, nil) }

// sqlTokensAt is sqlTokens, also appending to offsets (when not nil) the
// byte offset in text of each token.
func sqlTokensAt(text string, offsets *[]int) []string {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '\'':
			toks = appendTok(toks, offsets, i, "'")
			i = quotedEnd(text, i)
		case c == '$':
			if tag, ok := dollarTag(text[i:]); ok {
				end := strings.Index(text[i+len(tag):], tag)
				if end < 0 {
					return toks
				}
				toks = appendTok(toks, offsets, i, "'")
				i += len(tag) + end + len(tag)
				continue
			}
			toks = appendTok(toks, offsets, i, "$")
			i++
		case c == '"' || isIdentStart(rune(c)) || c >= 0x80:
			j := i
			for j < len(text) {
				d := text[j]
				if d == '"' {
					j = quotedEnd(text, j)
					continue
				}
				if d == '_' || d == '.' || d == '$' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' || d >= 0x80 {
					j++
					continue
				}
				break
			}
			word := text[i:j]
			if !strings.Contains(word, `"`) {
				word = strings.ToLower(word)
			}
			toks = appendTok(toks, offsets, i, word)
			i = j
		default:
			toks = appendTok(toks, offsets, i, string(c))
			i++
		}
	}
	return toks
}

// appendTok appends a token found at offset at, and its offset when
// offsets is not nil.
func appendTok(toks []string, offsets *[]int, at int, tok string) []string {
	if offsets != nil {
		*offsets = append(*offsets, at)
	}
	return append(toks, tok)
}

// scriptCommand is one command of a workload's script, with where it is.
type scriptCommand struct {
	Workload, Script string
	File             string // the copy under the run's scripts/, if any
	Line             int    // in the script, 0 if unknown
	Text             string
	Stmt             sqlStmt
}

// series names the command as evidence: "script:FILE:LINE".
func (c scriptCommand) series() string {
	name := c.Script
	if c.File != "" {
		name = c.File
	}
	if c.Line > 0 {
		return fmt.Sprintf("script:%s:%d", name, c.Line)
	}
	return "script:" + name
}

// workloadScript is a script of a workload with its commands classified.
type workloadScript struct {
	Workload, Script, File string
	Commands               []scriptCommand
}

// workloadScripts returns every workload script of the run with its
// commands: from the manifest, or (an old run without command texts)
// from the copies under scripts/. Lines come from summary.json.
func workloadScripts(run *timeline.Run) []workloadScript {
	return classifyScripts(run, nil)
}

// savepointScripts returns the workload scripts of the run that open a
// savepoint, classified: all that the subtransaction rules
// (subtransaction-overflow, multixact-slru-thrash) read, since a script
// without a SAVEPOINT gives them nothing. The others are not classified
// at all: for a generated script of 100,000 commands that took ~90 MB of
// allocation per rule (issue 14). Within one Diagnose the scripts are
// classified once, for both rules.
func savepointScripts(run *timeline.Run) []workloadScript {
	classified.Lock()
	if classified.run == run && classified.done {
		defer classified.Unlock()
		return classified.scripts
	}
	classified.Unlock()
	scripts := classifyScripts(run, func(texts []string) bool { return slices.ContainsFunc(texts, maySavepoint) })
	classified.Lock()
	if classified.run == run {
		classified.scripts, classified.done = scripts, true
	}
	classified.Unlock()
	return scripts
}

// classified holds savepointScripts' answer for the run being diagnosed:
// Diagnose names the run (cacheScripts) and empties it when done, so that
// nothing of a run stays once it is diagnosed. Another run (a concurrent
// Diagnose, a rule's test) is classified without it.
var classified struct {
	sync.Mutex
	run     *timeline.Run
	scripts []workloadScript
	done    bool
}

// cacheScripts keeps savepointScripts' answer for run until the returned
// function is called.
func cacheScripts(run *timeline.Run) (release func()) {
	classified.Lock()
	classified.run, classified.scripts, classified.done = run, nil, false
	classified.Unlock()
	return func() {
		classified.Lock()
		if classified.run == run {
			classified.run, classified.scripts, classified.done = nil, nil, false
		}
		classified.Unlock()
	}
}

// maySavepoint reports whether a command's text may be a SAVEPOINT.
func maySavepoint(text string) bool { return mayMention(text, "savepoint") }

// mayMention reports whether text may hold one of the (lower-case ASCII)
// keywords: it has one in any case, or a non-ASCII character (whose lower
// case the rules' lexers might read as ASCII). It does not allocate: it
// decides cheaply which scripts are worth parsing.
func mayMention(text string, words ...string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= utf8.RuneSelf {
			return true
		}
		for _, w := range words {
			if c|0x20 == w[0] && i+len(w) <= len(text) && strings.EqualFold(text[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// classifyScripts is workloadScripts of the scripts whose command texts
// keep accepts (all with a nil keep).
func classifyScripts(run *timeline.Run, keep func(texts []string) bool) []workloadScript {
	var out []workloadScript
	for _, w := range run.Manifest.Workloads {
		for si, s := range w.Scripts {
			ws := workloadScript{Workload: w.Name, Script: s.Name, File: s.File}
			texts := s.Commands
			var lines []int
			if len(texts) == 0 && s.File != "" && run.Dir != "" {
				texts, lines = splitScriptFile(filepath.Join(run.Dir, timeline.ScriptsDir, filepath.Base(s.File)))
			}
			if keep != nil && !keep(texts) {
				continue
			}
			ws.Commands = make([]scriptCommand, 0, len(texts))
			summary := scriptSummary(run, w.Name, s.Name, si)
			for ci, text := range texts {
				c := scriptCommand{Workload: w.Name, Script: s.Name, File: s.File, Text: text, Stmt: classifySQL(text)}
				switch {
				case ci < len(lines):
					c.Line = lines[ci]
				case summary != nil && ci < len(summary.Commands):
					c.Line = summary.Commands[ci].Line
				}
				ws.Commands = append(ws.Commands, c)
			}
			out = append(out, ws)
		}
	}
	return out
}

// scriptSummary finds a script's totals (for its commands' lines).
func scriptSummary(run *timeline.Run, workload, script string, index int) *timeline.ScriptSummary {
	if run.Summary == nil {
		return nil
	}
	for wi := range run.Summary.Workloads {
		w := &run.Summary.Workloads[wi]
		if w.Name != workload {
			continue
		}
		for i := range w.Scripts {
			if w.Scripts[i].Name == script {
				return &w.Scripts[i]
			}
		}
		if index < len(w.Scripts) {
			return &w.Scripts[index]
		}
	}
	return nil
}

// splitScriptFile reads a pgbench script file into commands: a line
// starting with a backslash is a meta command, SQL runs to its semicolon.
// It is the fallback for runs whose manifest lacks command texts.
func splitScriptFile(path string) (texts []string, lines []int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	var cur strings.Builder
	curLine := 0
	for n, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 {
			if trimmed == "" || strings.HasPrefix(trimmed, "--") {
				continue
			}
			if strings.HasPrefix(trimmed, `\`) {
				texts, lines = append(texts, trimmed), append(lines, n+1)
				continue
			}
			curLine = n + 1
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(stripSQLComments(cur.String())), ";") {
			texts, lines = append(texts, strings.TrimSpace(cur.String())), append(lines, curLine)
			cur.Reset()
		}
	}
	if strings.TrimSpace(stripSQLComments(cur.String())) != "" {
		texts, lines = append(texts, strings.TrimSpace(cur.String())), append(lines, curLine)
	}
	return texts, lines
}

// shortSQL is a command's text on one line, cut for a headline.
func shortSQL(text string, max int) string {
	s := strings.Join(strings.Fields(stripSQLComments(text)), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
