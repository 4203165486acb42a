package sqlcheck

import (
	"strings"
	"unicode/utf8"

	"github.com/firedrill/firedrill/sqllex"
)

// StmtKind is what a script command does to the transaction it runs in,
// as far as the rules need to know.
type StmtKind int

// The kinds of command, as far as transactions, savepoints and row locks
// go.
const (
	StmtOther      StmtKind = iota // a query that neither locks nor writes rows
	StmtMeta                       // a client-side command (\set, \sleep, \if …)
	StmtBegin                      // BEGIN, START TRANSACTION
	StmtEnd                        // COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION
	StmtSavepoint                  // SAVEPOINT name
	StmtRelease                    // RELEASE [SAVEPOINT] name
	StmtRollbackTo                 // ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name
	StmtLock                       // SELECT … FOR UPDATE/NO KEY UPDATE/SHARE/KEY SHARE
	StmtWrite                      // UPDATE, DELETE, INSERT, MERGE
)

// Stmt is one script command classified: what it does, on which
// tables, and which row-lock strength it takes.
type Stmt struct {
	Kind      StmtKind
	Savepoint string   // the savepoint's name for SAVEPOINT, RELEASE and ROLLBACK TO
	Lock      string   // the lock clause, e.g. "FOR UPDATE" (StmtLock, or a write that also locks)
	Locked    []string // tables whose rows a locking clause locks
	Written   []string // tables the statement updates, deletes from, inserts into or merges into
}

// LocksOrWrites reports whether the statement takes row locks or writes,
// so its (sub)transaction gets a transaction id.
func (s Stmt) LocksOrWrites() bool { return len(s.Locked) > 0 || len(s.Written) > 0 }

// WritesRow reports whether the statement modifies or exclusively locks
// rows of table: what turns an earlier lock into a MultiXact when done
// in a subtransaction.
func (s Stmt) WritesRow(table string) bool {
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

// Classify reads one script command: comments are stripped, keywords
// compared case-insensitively, string literals and quoted identifiers
// skipped. It never fails: what it does not recognise is StmtOther.
func Classify(text string) Stmt {
	trimmed := strings.TrimSpace(StripComments(text))
	if strings.HasPrefix(trimmed, `\`) {
		return Stmt{Kind: StmtMeta}
	}
	toks := Tokens(trimmed)
	if len(toks) == 0 {
		return Stmt{Kind: StmtOther}
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
			return Stmt{Kind: StmtBegin}
		}
	case "commit", "end", "abort":
		if word(1) != "prepared" { // COMMIT PREPARED ends another transaction
			return Stmt{Kind: StmtEnd}
		}
	case "prepare":
		if word(1) == "transaction" {
			return Stmt{Kind: StmtEnd}
		}
	case "savepoint":
		return Stmt{Kind: StmtSavepoint, Savepoint: word(1)}
	case "release":
		if word(1) == "savepoint" {
			return Stmt{Kind: StmtRelease, Savepoint: word(2)}
		}
		return Stmt{Kind: StmtRelease, Savepoint: word(1)}
	case "rollback":
		i := 1
		if word(i) == "work" || word(i) == "transaction" {
			i++
		}
		if word(i) == "prepared" {
			return Stmt{Kind: StmtOther}
		}
		if word(i) != "to" {
			return Stmt{Kind: StmtEnd}
		}
		i++
		if word(i) == "savepoint" {
			i++
		}
		return Stmt{Kind: StmtRollbackTo, Savepoint: word(i)}
	}
	return classifyDML(toks)
}

// classifyDML finds the row locks and writes of a query, CTEs included.
func classifyDML(toks []string) Stmt {
	var st Stmt
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
		return TableName(word(i))
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
					if t := TableName(word(j)); t != "" {
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
		st.Kind = StmtWrite
	case st.Lock != "":
		st.Kind = StmtLock
	default:
		st.Kind = StmtOther
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

// TableName reduces a (possibly schema-qualified, possibly quoted) name
// to the table's own lower-case name; "" when tok is not a name.
func TableName(tok string) string {
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

// StripComments removes -- and (nested) /* */ comments, leaving string
// literals, quoted identifiers and dollar-quoted bodies alone; a block
// comment becomes a space.
func StripComments(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		tok := sqllex.Next(sqllex.PostgreSQL, text, i)
		switch tok.Kind {
		case sqllex.LineComment:
		case sqllex.BlockComment:
			b.WriteByte(' ')
		default:
			b.WriteString(text[i:tok.End])
		}
		i = tok.End
	}
	return b.String()
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// Tokens splits comment-free SQL into lower-case words (identifiers,
// possibly qualified with dots and quoted parts kept) and single
// punctuation characters; literals become a placeholder "'" token.
func Tokens(text string) []string { return sqlTokensAt(text, nil) }

// sqlTokensAt is Tokens, also appending to offsets (when not nil) the
// byte offset in text of each token.
func sqlTokensAt(text string, offsets *[]int) []string {
	var toks []string
	for i := 0; i < len(text); {
		tok := sqllex.Next(sqllex.PostgreSQL, text, i)
		switch tok.Kind {
		case sqllex.Space, sqllex.LineComment, sqllex.BlockComment:
		case sqllex.String, sqllex.DollarString:
			if tok.Unterminated && tok.Kind == sqllex.DollarString {
				return toks
			}
			toks = appendTok(toks, offsets, i, "'")
		case sqllex.Word, sqllex.QuotedName:
			// A name qualified with dots, its parts quoted or not, is one
			// token.
			end := tok.End
			for end < len(text) {
				next := sqllex.Next(sqllex.PostgreSQL, text, end)
				if next.Kind == sqllex.Word || next.Kind == sqllex.QuotedName || next.Kind == sqllex.Number ||
					next.Kind == sqllex.Param || next.Kind == sqllex.Punct && text[end] == '.' {
					end = next.End
					continue
				}
				break
			}
			word := text[i:end]
			if !strings.Contains(word, `"`) {
				word = strings.ToLower(word)
			}
			toks = appendTok(toks, offsets, i, word)
			tok.End = end
		default:
			toks = appendTok(toks, offsets, i, text[i:tok.End])
		}
		i = tok.End
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

// MaySavepoint reports whether a command's text may be a SAVEPOINT.
func MaySavepoint(text string) bool { return MayMention(text, "savepoint") }

// MayMention reports whether text may hold one of the (lower-case ASCII)
// keywords: it has one in any case, or a non-ASCII character (whose lower
// case the rules' lexers might read as ASCII). It does not allocate: it
// decides cheaply which scripts are worth parsing.
func MayMention(text string, words ...string) bool {
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

// SplitScript cuts a pgbench script's text into commands, with the line
// each starts on: a line starting with a backslash is a meta command, SQL
// runs to its semicolon. It is the fallback for runs whose manifest lacks
// command texts.
func SplitScript(text string) (texts []string, lines []int) {
	var cur strings.Builder
	curLine := 0
	for n, line := range strings.Split(text, "\n") {
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
		if strings.HasSuffix(strings.TrimSpace(StripComments(cur.String())), ";") {
			texts, lines = append(texts, strings.TrimSpace(cur.String())), append(lines, curLine)
			cur.Reset()
		}
	}
	if strings.TrimSpace(StripComments(cur.String())) != "" {
		texts, lines = append(texts, strings.TrimSpace(cur.String())), append(lines, curLine)
	}
	return texts, lines
}

// Shorten is a command's text on one line without its comments, cut to
// max bytes for a finding's headline.
func Shorten(text string, max int) string {
	s := strings.Join(strings.Fields(StripComments(text)), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
