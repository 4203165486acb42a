package sqlcheck

import (
	"strings"

	"github.com/firedrill/firedrill/sqllex"
)

// BodyStmt is one statement of a function body, classified, with where
// it runs: what the subtransaction and MultiXact rules look for.
type BodyStmt struct {
	Line int // in the body, from 1
	Text string
	Stmt Stmt
	// InSubxact: the statement runs in the protected part of a block
	// with an EXCEPTION clause, i.e. in a subtransaction.
	InSubxact bool
	InLoop    bool // inside a LOOP (FOR, WHILE, FOREACH)
}

// Body is what the rules need of a function's body: its statements and
// its blocks with an EXCEPTION clause.
type Body struct {
	Stmts []BodyStmt
	// ExceptionBlocks counts blocks with an EXCEPTION clause; LoopBlocks
	// those of them inside a loop (one subtransaction per iteration).
	ExceptionBlocks, LoopBlocks int
	// FirstBlockLine is the line of the first such block's BEGIN.
	FirstBlockLine int
}

// LockThenSubxactWrite is a row lock taken outside a subtransaction and
// a write of the same table inside one: the pattern that turns the row's
// xmax into a MultiXact (the lock's xid and the subtransaction's).
func (b Body) LockThenSubxactWrite() (lock, write BodyStmt, table string, ok bool) {
	for i, l := range b.Stmts {
		if l.InSubxact || len(l.Stmt.Locked) == 0 {
			continue
		}
		for _, w := range b.Stmts[i+1:] {
			if !w.InSubxact {
				continue
			}
			for _, t := range l.Stmt.Locked {
				if w.Stmt.WritesRow(t) {
					return l, w, t, true
				}
			}
		}
	}
	return BodyStmt{}, BodyStmt{}, "", false
}

// SubxactWrites are the statements that lock or write rows inside a
// subtransaction: each such entry gets a subtransaction xid.
func (b Body) SubxactWrites() []BodyStmt {
	var out []BodyStmt
	for _, s := range b.Stmts {
		if s.InSubxact && s.Stmt.LocksOrWrites() {
			out = append(out, s)
		}
	}
	return out
}

// ParsePLpgSQL reads a function's body well enough for the rules: its
// statements (split at semicolons outside quotes), which of them run in
// the protected part of a BEGIN … EXCEPTION … END block, and which in a
// loop. It never fails; what it does not recognise is a plain statement.
// A SQL-language function has no blocks: its statements are read alone.
func ParsePLpgSQL(text string) Body {
	var body Body
	type block struct {
		line    int
		inLoop  bool
		handler bool  // past its EXCEPTION keyword
		members []int // statements in its protected part
	}
	var stack []*block
	loops := 0
	text = StripComments(text)
	for _, piece := range splitBody(text) {
		var offsets []int
		all := sqlTokensAt(piece.text, &offsets)
		toks := all
		lead := len(piece.text) - len(strings.TrimLeft(piece.text, " \t\r\n"))
		// lineOf is the body line of the first of toks.
		lineOf := func(toks []string) int {
			at := len(piece.text)
			if len(toks) > 0 {
				at = offsets[len(all)-len(toks)]
			}
			return piece.line + strings.Count(piece.text[min(lead, at):at], "\n")
		}
		// Control words at the head of the statement open and close
		// blocks and loops; the rest is the statement itself.
		for len(toks) > 0 {
			switch toks[0] {
			case "declare", "else", "then":
				toks = toks[1:]
				continue
			case "<": // a label, <<name>>
				if len(toks) > 1 && toks[1] == "<" {
					if i := IndexWord(toks, ">"); i >= 0 {
						toks = toks[min(i+2, len(toks)):]
						continue
					}
				}
			case "begin":
				if len(toks) > 1 && (toks[1] == "transaction" || toks[1] == "work") {
					break // not a block (and not allowed in a function)
				}
				stack = append(stack, &block{line: lineOf(toks), inLoop: loops > 0})
				toks = toks[1:]
				continue
			case "exception", "when":
				if toks[0] == "exception" && (len(toks) < 2 || toks[1] != "when") {
					break
				}
				if toks[0] == "exception" && len(stack) > 0 && !stack[len(stack)-1].handler {
					b := stack[len(stack)-1]
					b.handler = true
					body.ExceptionBlocks++
					if b.inLoop {
						body.LoopBlocks++
					}
					if body.FirstBlockLine == 0 {
						body.FirstBlockLine = b.line
					}
				}
				toks = afterWord(toks, "then")
				continue
			case "if", "elsif", "while":
				rest := afterWord(toks, "then")
				if toks[0] == "while" {
					rest = afterWord(toks, "loop")
					loops++
				}
				toks = rest
				continue
			case "loop":
				loops++
				toks = toks[1:]
				continue
			case "for", "foreach":
				if i := IndexWord(toks, "loop"); i >= 0 {
					loops++
					toks = toks[i+1:]
					continue
				}
			case "end":
				next := ""
				if len(toks) > 1 {
					next = toks[1]
				}
				switch next {
				case "if", "case":
					toks = toks[2:]
				case "loop":
					loops = max(0, loops-1)
					toks = toks[2:]
				default:
					if n := len(stack); n > 0 {
						b := stack[n-1]
						stack = stack[:n-1]
						if b.handler {
							for _, i := range b.members {
								body.Stmts[i].InSubxact = true
							}
						}
					}
					toks = nil // END [label]
				}
				continue
			}
			break
		}
		if len(toks) == 0 {
			continue
		}
		// The statement proper starts after the control words.
		at := offsets[len(all)-len(toks)]
		st := BodyStmt{Line: lineOf(toks), Text: strings.TrimSpace(piece.text[at:]), Stmt: classifyDML(toks), InLoop: loops > 0}
		body.Stmts = append(body.Stmts, st)
		for _, b := range stack {
			if !b.handler {
				b.members = append(b.members, len(body.Stmts)-1)
			}
		}
	}
	return body
}

// afterWord returns toks after the first word w, or nil.
func afterWord(toks []string, w string) []string {
	if i := IndexWord(toks, w); i >= 0 {
		return toks[i+1:]
	}
	return nil
}

// IndexWord is where the word w first stands in toks (as Tokens splits
// a statement), or -1: how a rule finds a clause in a statement.
func IndexWord(toks []string, w string) int {
	for i, t := range toks {
		if t == w {
			return i
		}
	}
	return -1
}

// bodyPiece is a statement of a body with the line it starts on.
type bodyPiece struct {
	text string
	line int
}

// splitBody splits SQL at semicolons outside quotes, dollar quotes
// and comments.
func splitBody(text string) []bodyPiece {
	var out []bodyPiece
	start, line, startLine := 0, 1, 1
	flush := func(end int) {
		if s := text[start:end]; strings.TrimSpace(s) != "" {
			lead := len(s) - len(strings.TrimLeft(s, " \t\r\n"))
			out = append(out, bodyPiece{text: s, line: startLine + strings.Count(s[:lead], "\n")})
		}
	}
	for i := 0; i < len(text); {
		tok := sqllex.Next(sqllex.PostgreSQL, text, i)
		line += strings.Count(text[i:tok.End], "\n")
		if tok.Kind == sqllex.Punct && text[i] == ';' {
			flush(i)
			start, startLine = tok.End, line
		}
		i = tok.End
	}
	flush(len(text))
	return out
}
