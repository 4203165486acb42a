package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"regexp"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// Kinds of mxCause.
const (
	causeSavepoint  = "savepoint"       // a row lock, then a write of it inside a SAVEPOINT
	causeAutosave   = "pgjdbc-autosave" // the same, the SAVEPOINT being pgJDBC's autosave
	causeException  = "exception-block" // the same, the subtransaction being a PL/pgSQL EXCEPTION block
	causeShare      = "for-share"       // SELECT … FOR SHARE / FOR KEY SHARE: shared row locks
	causeForeignKey = "foreign-key"     // an insert checks its foreign key with FOR KEY SHARE
)

// mxCause is one way a run's workloads make MultiXacts, as its scripts
// and the functions they call show it.
type mxCause struct {
	Kind     string
	Workload string
	Phrase   string // for the headline
	Evidence []diagnose.Evidence
	Remedy   string
}

// pgjdbcAutosave is the savepoint pgJDBC sets before each statement with
// autosave=always (and =conservative).
const pgjdbcAutosave = "pgjdbc_autosave"

// calledFunction finds a call in a script command's text.
var calledFunction = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_$]*)\s*\(`)

// callsIn are the functions of fns that text calls, and those they call
// in turn, each once, callers first.
func callsIn(text string, fns []fnBody) []fnBody {
	byName := map[string][]int{}
	for i, f := range fns {
		byName[strings.ToLower(f.Fn.Name)] = append(byName[strings.ToLower(f.Fn.Name)], i)
	}
	var out []fnBody
	seen := map[int]bool{}
	queue := []string{text}
	for len(queue) > 0 && len(out) < len(fns) {
		t := queue[0]
		queue = queue[1:]
		for _, m := range calledFunction.FindAllStringSubmatch(t, -1) {
			for _, i := range byName[strings.ToLower(m[1])] {
				if !seen[i] {
					seen[i] = true
					out = append(out, fns[i])
					queue = append(queue, fns[i].Fn.Body)
				}
			}
		}
	}
	return out
}

// fnName names a function as findings do: "bump()" or "app.bump()".
func fnName(f pgmetric.Function) string {
	if f.Schema == "" || f.Schema == "public" {
		return f.Name + "()"
	}
	return f.Schema + "." + f.Name + "()"
}

// multixactCauses lists what the run's scripts, and the functions they
// call, do that makes MultiXacts, beyond the savepoint pattern the
// caller found (patterns): PL/pgSQL EXCEPTION blocks, shared row locks,
// foreign-key checks. It reads every workload script that may do one of
// them, so it is only called once a finding is certain.
func multixactCauses(run *timeline.Run, patterns []lockSavepointWrite) []mxCause {
	var out []mxCause
	for _, p := range patterns {
		if p.Savepoint.Stmt.Savepoint == pgjdbcAutosave {
			out = append(out, mxCause{Kind: causeAutosave, Workload: p.Workload,
				Phrase: fmt.Sprintf("%s's SAVEPOINT is pgJDBC's autosave (autosave=always): every statement runs in a subtransaction", p.Script),
				Evidence: []diagnose.Evidence{{Series: p.Savepoint.series(), Text: fmt.Sprintf("`%s`: the savepoint pgJDBC sets before each statement "+
					"when the connection has autosave=always or conservative", sqlcheck.Shorten(p.Savepoint.Text, 40))}},
				Remedy: "Drop pgJDBC's autosave (autosave=never, the default) and retry failed transactions in the application instead; " +
					"or keep autosave=conservative only where statements may fail on a changed plan."})
		}
	}
	fns := runFunctions(run)
	fks := runForeignKeys(run)
	var names []string
	for _, f := range fns {
		names = append(names, strings.ToLower(f.Fn.Name))
	}
	words := append([]string{"share", "insert", "update"}, names...)
	scripts := classifyScripts(run, func(texts []string) bool {
		return slices.ContainsFunc(texts, func(t string) bool { return sqlcheck.MayMention(t, words...) })
	})
	seen := map[string]bool{}
	add := func(key string, c mxCause) {
		if !seen[key] {
			seen[key] = true
			out = append(out, c)
		}
	}
	for _, ws := range scripts {
		locked := map[string]scriptCommand{} // tables locked earlier in the transaction
		for _, c := range ws.Commands {
			switch c.Stmt.Kind {
			case sqlcheck.StmtBegin, sqlcheck.StmtEnd:
				locked = map[string]scriptCommand{}
				continue
			case sqlcheck.StmtMeta:
				continue
			}
			if c.Stmt.Lock == "FOR SHARE" || c.Stmt.Lock == "FOR KEY SHARE" {
				add(causeShare+ws.Script+c.Stmt.Lock, shareCause(ws.Workload, ws.Script, c.series(), c.Text, c.Stmt))
			}
			for _, fk := range fks {
				if insertsChecking(c.Stmt, c.Text, fk) {
					add(causeForeignKey+fk.Name, fkCause(ws.Workload, ws.Script, c.series(), c.Text, fk))
				}
			}
			for _, f := range callsIn(c.Text, fns) {
				call := fmt.Sprintf("%s (called at %s)", fnName(f.Fn), c.where())
				fnSeries := "function:" + fnName(f.Fn)
				if l, w, table, ok := f.LockThenSubxactWrite(); ok {
					add(causeException+f.Fn.Name, exceptionCause(ws.Workload, call, fnSeries, f, &l, nil, w, table))
				} else {
					for _, w := range f.SubxactWrites() {
						for _, t := range w.Stmt.Written {
							if lc, ok := locked[t]; ok {
								add(causeException+f.Fn.Name, exceptionCause(ws.Workload, call, fnSeries, f, nil, &lc, w, t))
							}
						}
					}
				}
				for _, s := range f.Stmts {
					if s.Stmt.Lock == "FOR SHARE" || s.Stmt.Lock == "FOR KEY SHARE" {
						add(causeShare+f.Fn.Name+s.Stmt.Lock, shareCause(ws.Workload, call, fmt.Sprintf("%s:%d", fnSeries, s.Line), s.Text, s.Stmt))
					}
					for _, fk := range fks {
						if insertsChecking(s.Stmt, s.Text, fk) {
							add(causeForeignKey+fk.Name, fkCause(ws.Workload, call, fmt.Sprintf("%s:%d", fnSeries, s.Line), s.Text, fk))
						}
					}
				}
			}
			for _, t := range c.Stmt.Locked {
				if _, ok := locked[t]; !ok {
					locked[t] = c
				}
			}
		}
	}
	return out
}

// insertsChecking reports whether a statement makes fk's check lock the
// referenced row: an INSERT into the referencing table, or an UPDATE of
// it that sets a column of the key.
func insertsChecking(st sqlcheck.Stmt, text string, fk pgmetric.ForeignKey) bool {
	if !slices.Contains(st.Written, strings.ToLower(fk.Table)) {
		return false
	}
	toks := sqlcheck.Tokens(sqlcheck.StripComments(text))
	for i, t := range toks {
		if t == "insert" && i+2 < len(toks) && toks[i+1] == "into" && sqlcheck.TableName(toks[i+2]) == strings.ToLower(fk.Table) {
			return true
		}
	}
	// An UPDATE: the key's columns between SET and WHERE.
	set, where := sqlcheck.IndexWord(toks, "set"), sqlcheck.IndexWord(toks, "where")
	if set < 0 {
		return false
	}
	if where < 0 {
		where = len(toks)
	}
	for _, t := range toks[set+1 : max(set+1, where)] {
		for _, col := range fk.Columns {
			if t == strings.ToLower(col) {
				return true
			}
		}
	}
	return false
}

func exceptionCause(workload, call, fnSeries string, f fnBody, fnLock *sqlcheck.BodyStmt, scriptLock *scriptCommand, w sqlcheck.BodyStmt, table string) mxCause {
	c := mxCause{Kind: causeException, Workload: workload}
	var lockText string
	if fnLock != nil {
		lockText = fmt.Sprintf("locks %s rows %s (line %d)", table, fnLock.Stmt.Lock, fnLock.Line)
		c.Evidence = append(c.Evidence, diagnose.Evidence{Series: fmt.Sprintf("%s:%d", fnSeries, fnLock.Line),
			Text: fmt.Sprintf("%s takes a row lock outside its EXCEPTION block: `%s`", call, sqlcheck.Shorten(fnLock.Text, 80))})
	} else {
		lockText = fmt.Sprintf("runs after %s locked %s rows %s", scriptLock.where(), table, scriptLock.Stmt.Lock)
		c.Evidence = append(c.Evidence, diagnose.Evidence{Series: scriptLock.series(),
			Text: fmt.Sprintf("the script locks the row before the call: `%s`", sqlcheck.Shorten(scriptLock.Text, 80))})
	}
	c.Phrase = fmt.Sprintf("function %s %s, then writes them inside a BEGIN … EXCEPTION block (line %d) — a subtransaction, as a SAVEPOINT",
		call, lockText, w.Line)
	c.Evidence = append(c.Evidence, diagnose.Evidence{Series: fmt.Sprintf("%s:%d", fnSeries, w.Line),
		Text: fmt.Sprintf("inside the EXCEPTION block that begins at line %d, it writes the same table %s: `%s`", f.FirstBlockLine, table, sqlcheck.Shorten(w.Text, 80))})
	c.Remedy = fmt.Sprintf("In %s, take the row lock inside the BEGIN … EXCEPTION block that updates the row, or take the EXCEPTION "+
		"block out and handle the error in the caller: the lock and the update must be in the same (sub)transaction.", fnName(f.Fn))
	return c
}

func shareCause(workload, where, series, text string, st sqlcheck.Stmt) mxCause {
	tables := strings.Join(st.Locked, ", ")
	return mxCause{Kind: causeShare, Workload: workload,
		Phrase: fmt.Sprintf("%s takes %s row locks on %s: concurrent transactions that lock the same row share it as a MultiXact", where, st.Lock, tables),
		Evidence: []diagnose.Evidence{{Series: series, Text: fmt.Sprintf("%s: `%s` — a shared row lock; two transactions holding it on one row make a MultiXact",
			where, sqlcheck.Shorten(text, 80))}},
		Remedy: fmt.Sprintf("Take %s out where the transaction only reads the row (the snapshot already protects the read), or lock "+
			"it FOR UPDATE / FOR NO KEY UPDATE where it will be written anyway: an exclusive lock queues instead of sharing.", st.Lock)}
}

func fkCause(workload, where, series, text string, fk pgmetric.ForeignKey) mxCause {
	return mxCause{Kind: causeForeignKey, Workload: workload,
		Phrase: fmt.Sprintf("%s writes %s, whose foreign key %s checks the %s row with FOR KEY SHARE: concurrent writes for the same %s row share that lock as a MultiXact",
			where, fk.Table, fk.Name, fk.RefTable, fk.RefTable),
		Evidence: []diagnose.Evidence{{Series: series, Text: fmt.Sprintf("%s: `%s` — foreign key %s (%s) → %s (%s) locks the referenced row FOR KEY SHARE",
			where, sqlcheck.Shorten(text, 80), fk.Name, strings.Join(fk.Columns, ", "), fk.RefTable, strings.Join(fk.RefColumns, ", "))}},
		Remedy: fmt.Sprintf("Spread the writes that reference one %s row (a hot parent makes a MultiXact on every concurrent check), keep "+
			"the transactions that insert into %s short, and do not update the %s row in those same transactions; PostgreSQL 17's "+
			"multixact_member_buffers and multixact_offset_buffers enlarge the caches.", fk.RefTable, fk.Table, fk.RefTable)}
}

// where names a script command for a headline: "bump.sql:4".
func (c scriptCommand) where() string {
	if c.Line > 0 {
		return fmt.Sprintf("%s:%d", c.Script, c.Line)
	}
	return c.Script
}

// subxactCall is a script command that calls a function whose EXCEPTION
// block writes: each entry to the block is a subtransaction with an xid.
type subxactCall struct {
	Workload string
	Command  scriptCommand
	Fn       fnBody
	Write    sqlcheck.BodyStmt // the first write inside the block
}

func (c subxactCall) phrase() string {
	per := "each call opens one"
	if c.Fn.LoopBlocks > 0 {
		per = "one per loop iteration"
	}
	return fmt.Sprintf("%s calls %s, whose BEGIN … EXCEPTION block (line %d) writes inside a subtransaction: %s",
		c.Command.where(), fnName(c.Fn.Fn), c.Fn.FirstBlockLine, per)
}

func (c subxactCall) evidence() diagnose.Evidence {
	return diagnose.Evidence{Series: fmt.Sprintf("function:%s:%d", fnName(c.Fn.Fn), c.Write.Line),
		Text: fmt.Sprintf("%s (called at %s, workload %s) writes inside its EXCEPTION block%s: `%s`", fnName(c.Fn.Fn),
			c.Command.where(), c.Workload, map[bool]string{true: ", in a loop", false: ""}[c.Fn.LoopBlocks > 0], sqlcheck.Shorten(c.Write.Text, 80))}
}

// subxactCalls finds the script commands that call (directly or through
// other functions) a function whose EXCEPTION blocks write, loops first.
func subxactCalls(run *timeline.Run) []subxactCall {
	var fns []fnBody
	for _, f := range runFunctions(run) {
		if len(f.SubxactWrites()) > 0 {
			fns = append(fns, f)
		}
	}
	if len(fns) == 0 {
		return nil
	}
	all := runFunctions(run)
	var names []string
	for _, f := range all {
		names = append(names, strings.ToLower(f.Fn.Name))
	}
	var out []subxactCall
	seen := map[string]bool{}
	for _, ws := range classifyScripts(run, func(texts []string) bool {
		return slices.ContainsFunc(texts, func(t string) bool { return sqlcheck.MayMention(t, names...) })
	}) {
		for _, c := range ws.Commands {
			for _, f := range callsIn(c.Text, all) {
				w := f.SubxactWrites()
				if len(w) == 0 || seen[ws.Script+f.Fn.Name] {
					continue
				}
				seen[ws.Script+f.Fn.Name] = true
				out = append(out, subxactCall{Workload: ws.Workload, Command: c, Fn: f, Write: w[0]})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b subxactCall) int { return b.Fn.LoopBlocks - a.Fn.LoopBlocks })
	return out
}

// causeEvidence is the evidence of what makes the MultiXacts: the first
// three lock-then-savepoint patterns of the scripts and the first three
// causes found in functions and foreign keys.
func causeEvidence(patterns []lockSavepointWrite, causes []mxCause) []diagnose.Evidence {
	var out []diagnose.Evidence
	for _, p := range patterns[:min(3, len(patterns))] {
		out = append(out, p.evidence()...)
	}
	for _, c := range causes[:min(3, len(causes))] {
		out = append(out, c.Evidence...)
	}
	return out
}
