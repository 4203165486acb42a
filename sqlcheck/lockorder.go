package sqlcheck

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/sqllex"
)

// The static lock-order check of the deadlock rule. Each workload script
// is parsed with pgbench's grammar; every statement that takes row locks
// (UPDATE, DELETE, SELECT … FOR UPDATE/SHARE, INSERT … ON CONFLICT DO
// UPDATE) is reduced to a lock step: a table and the key its WHERE clause
// pins (`sku = :sku1`). The script is then run on paper many times, with
// its \set expressions evaluated by the same code the engine uses, so the
// keys each transaction locks, and their order, are those the load
// generator would produce. Two transactions deadlock when they lock the
// same rows in opposite orders: the check looks for pairs of steps whose
// order depends on the random values (cart order), and for scripts that
// take a table's rows, or two tables, in opposite orders.

// lockSimulations is how many transactions of each script are simulated.
const lockSimulations = 200

// keyOperand computes one key column's value for one transaction.
type keyOperand struct {
	literal string      // a constant, as text
	expr    script.Expr // or an expression over the script's variables
	src     string      // as written, for people (":sku1")
}

// LockStep is a statement that locks rows of one table, keyed by the
// equality conditions of its WHERE clause: one end of an inversion.
type LockStep struct {
	Table   string
	Cols    []string       // key columns, sorted; nil when no equality pins the rows
	keys    [][]keyOperand // per column: one operand, several for IN (…)
	Ordered bool           // a multi-row lock taken in ORDER BY order
	Cmd     int            // the command's index in its script
	Line    int            // its line in the script file, 0 if unknown
	Text    string         // the command's text
	How     string         // "UPDATE", "DELETE", "SELECT … FOR UPDATE" …
}

// KeyText is the step's key as written, for people: "sku = :sku1".
func (s *LockStep) KeyText() string {
	if len(s.Cols) == 0 {
		return "rows chosen by its WHERE clause"
	}
	var parts []string
	for i, c := range s.Cols {
		var ops []string
		for _, o := range s.keys[i] {
			ops = append(ops, o.src)
		}
		if len(ops) == 1 {
			parts = append(parts, c+" = "+ops[0])
		} else {
			parts = append(parts, c+" IN ("+strings.Join(ops, ", ")+")")
		}
	}
	return strings.Join(parts, " AND ")
}

// Operands are the step's key operands as written (":sku1", "42"),
// column by column: what a remedy tells people to sort.
func (s *LockStep) Operands() []string {
	var out []string
	for _, ops := range s.keys {
		for _, o := range ops {
			out = append(out, o.src)
		}
	}
	return out
}

// LockScript is one workload script reduced to what locks rows: the
// script an inversion's steps belong to.
type LockScript struct {
	Workload, Name, File string
	Start, Stop          float64 // the workload's window
	parsed               *script.Script
	syms                 *script.Symbols
	steps                map[int]*LockStep // by command index
	inputs               map[string]string // variables the script reads but never sets: defines, scale
	clients              int
}

// Where names one of the script's steps for evidence: "cart.sql:6".
func (ls *LockScript) Where(s *LockStep) string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", ls.Name, s.Line)
	}
	return fmt.Sprintf("%s (command %d)", ls.Name, s.Cmd+1)
}

// lockKey is the value of a step's key columns in one transaction.
type lockKey []keyPart

// keyPart is one column's value: its text, and its number when it is one.
type keyPart struct {
	text  string
	num   float64
	isNum bool
}

func newKeyPart(text string) keyPart {
	f, err := strconv.ParseFloat(text, 64)
	return keyPart{text: text, num: f, isNum: err == nil}
}

func (k lockKey) String() string {
	if len(k) == 1 {
		return k[0].text
	}
	parts := make([]string, len(k))
	for i, p := range k {
		parts[i] = p.text
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// compareKeys orders keys as the index would: numbers numerically,
// anything else as text.
func compareKeys(a, b lockKey) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.isNum && y.isNum:
			if x.num != y.num {
				if x.num < y.num {
					return -1
				}
				return 1
			}
		case x.text != y.text:
			return strings.Compare(x.text, y.text)
		}
	}
	return len(a) - len(b)
}

// lockHit is one row (or unknown set of rows) a simulated transaction
// locked.
type lockHit struct {
	step *LockStep
	key  lockKey // nil: unknown rows
}

// orderStats is what the simulations saw of two steps of one script run
// in that order inside one transaction, on the same table and key columns.
type orderStats struct {
	script       *LockScript
	first, then  *LockStep
	asc, desc    int // transactions where the first key was lower / higher
	ascEx, desEx [2]lockKey
	lo, hi       lockKey // the range of keys both steps locked
}

// tableOrder is one script taking rows of two tables in an order.
type tableOrder struct {
	script      *LockScript
	first, then *LockStep
}

// Inversion is a pair of lock orders that can close a cycle: a deadlock
// the scripts allow, whether or not the run saw it.
type Inversion struct {
	Table string // the table whose rows are taken in both orders ("a, b" for two tables)
	// One order, and the opposite one (the same script for cart order).
	A, B           *LockScript
	AFirst, AThen  *LockStep
	BFirst, BThen  *LockStep
	SameScript     bool        // one script's order depends on its random keys
	Chain          []*LockStep // SameScript: every step of the table so taken, in script order
	CrossTable     bool        // two tables taken in opposite orders
	ExampleA       string      // "17 then 42"
	ExampleB       string      // "42 then 17"
	Concurrent     bool        // the two scripts' workloads overlap in time
	AllOrdersKnown bool
}

// LockOrder is the lock-order check's result: the scripts that lock
// rows, and the inversions among them, concurrent ones first.
type LockOrder struct {
	Scripts    []*LockScript
	Inversions []Inversion
}

// ScriptSource is one workload script as the lock-order check reads it:
// its text and what the run says of its workload.
type ScriptSource struct {
	Workload, Name, File string
	Text                 []byte
	Dialect              script.Dialect
	Start, Stop          float64           // the workload's window
	Clients              int               // its clients: the values :client_id takes
	Inputs               map[string]string // variables the script reads but never sets: defines, scale
	// Lines, when it has one entry per command of the parsed script,
	// gives the commands' lines (0: keep the parser's), for a text made
	// of the commands alone.
	Lines []int
}

// AnalyzeLockOrder reads the workload scripts and finds lock-order
// inversions. It never fails: a script it cannot parse is left out.
func AnalyzeLockOrder(sources []ScriptSource) LockOrder {
	var res LockOrder
	for _, src := range sources {
		if ls := loadLockScript(src); ls != nil {
			res.Scripts = append(res.Scripts, ls)
		}
	}
	var pairs []*orderStats
	var tables []tableOrder
	for _, ls := range res.Scripts {
		p, t := simulateLocks(ls)
		pairs = append(pairs, p...)
		tables = append(tables, t...)
	}
	seen := map[string]bool{}
	add := func(inv Inversion) {
		key := fmt.Sprintf("%p/%p/%p/%p", inv.AFirst, inv.AThen, inv.BFirst, inv.BThen)
		rev := fmt.Sprintf("%p/%p/%p/%p", inv.BFirst, inv.BThen, inv.AFirst, inv.AThen)
		if seen[key] || seen[rev] {
			return
		}
		seen[key] = true
		res.Inversions = append(res.Inversions, inv)
	}
	// One script whose order depends on its keys deadlocks with itself:
	// the steps of one table so taken form one chain.
	chains := map[string]*Inversion{}
	var chainOrder []string
	for _, p := range pairs {
		if p.asc == 0 || p.desc == 0 {
			continue
		}
		key := fmt.Sprintf("%p/%s/%s", p.script, p.first.Table, strings.Join(p.first.Cols, ","))
		inv := chains[key]
		if inv == nil {
			inv = &Inversion{Table: p.first.Table, A: p.script, B: p.script,
				AFirst: p.first, AThen: p.then, BFirst: p.first, BThen: p.then, SameScript: true,
				ExampleA:   p.ascEx[0].String() + " then " + p.ascEx[1].String(),
				ExampleB:   p.ascEx[1].String() + " then " + p.ascEx[0].String(),
				Concurrent: true}
			chains[key] = inv
			chainOrder = append(chainOrder, key)
		}
		for _, st := range []*LockStep{p.first, p.then} {
			if !slices.Contains(inv.Chain, st) {
				inv.Chain = append(inv.Chain, st)
			}
		}
	}
	for _, key := range chainOrder {
		inv := chains[key]
		sort.Slice(inv.Chain, func(i, j int) bool { return inv.Chain[i].Cmd < inv.Chain[j].Cmd })
		add(*inv)
	}
	// Two fixed orders that disagree, on overlapping keys.
	for i, p := range pairs {
		for _, q := range pairs[i+1:] {
			if p.first.Table != q.first.Table || !sameCols(p.first.Cols, q.first.Cols) {
				continue
			}
			if (p.asc > 0 && p.desc > 0) || (q.asc > 0 && q.desc > 0) {
				continue // already reported as order-dependent
			}
			pAsc, qAsc := p.asc > 0, q.asc > 0
			if pAsc == qAsc || !keyRangesOverlap(p.lo, p.hi, q.lo, q.hi) {
				continue
			}
			a, b := p, q
			if !pAsc {
				a, b = q, p
			}
			add(Inversion{Table: p.first.Table, A: a.script, B: b.script,
				AFirst: a.first, AThen: a.then, BFirst: b.first, BThen: b.then,
				ExampleA:   a.ascEx[0].String() + " then " + a.ascEx[1].String(),
				ExampleB:   b.desEx[0].String() + " then " + b.desEx[1].String(),
				Concurrent: a.script == b.script || overlaps(a.script, b.script)})
		}
	}
	// Two tables taken in opposite orders.
	for i, p := range tables {
		for _, q := range tables[i+1:] {
			if p.first.Table != q.then.Table || p.then.Table != q.first.Table {
				continue
			}
			if p.script == q.script && p.first == q.then && p.then == q.first {
				continue
			}
			add(Inversion{Table: p.first.Table + ", " + p.then.Table, A: p.script, B: q.script,
				AFirst: p.first, AThen: p.then, BFirst: q.first, BThen: q.then, CrossTable: true,
				Concurrent: p.script == q.script || overlaps(p.script, q.script)})
		}
	}
	sort.SliceStable(res.Inversions, func(i, j int) bool {
		a, b := res.Inversions[i], res.Inversions[j]
		if a.Concurrent != b.Concurrent {
			return a.Concurrent
		}
		return a.SameScript && !b.SameScript
	})
	return res
}

func sameCols(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func keyRangesOverlap(alo, ahi, blo, bhi lockKey) bool {
	if alo == nil || blo == nil {
		return true
	}
	return compareKeys(alo, bhi) <= 0 && compareKeys(blo, ahi) <= 0
}

func overlaps(a, b *LockScript) bool {
	if a.Stop <= a.Start || b.Stop <= b.Start {
		return true
	}
	return a.Start < b.Stop && b.Start < a.Stop
}

// loadLockScript parses one script and finds its lock steps; nil if it
// cannot be parsed or locks nothing.
func loadLockScript(src ScriptSource) *LockScript {
	text := src.Text
	// Only UPDATE, DELETE, SELECT … FOR UPDATE/SHARE and INSERT (upserts)
	// lock rows: a script without them is not parsed (a generated script
	// of 100,000 commands held ~30 MB while parsed, on every live pass;
	// issue 14).
	if !MayMention(string(text), "update", "delete", "share", "insert") {
		return nil
	}
	syms := script.NewSymbols()
	dialect := src.Dialect
	parsed, err := script.ParseDialect(src.Name, text, syms, dialect)
	if err != nil || parsed == nil {
		return nil
	}
	ls := &LockScript{Workload: src.Workload, Name: src.Name, File: src.File, Start: src.Start, Stop: src.Stop,
		parsed: parsed, syms: syms, steps: map[int]*LockStep{},
		inputs: map[string]string{}, clients: max(src.Clients, 1)}
	for k, v := range src.Inputs {
		ls.inputs[k] = v
	}
	var lines []int
	if len(src.Lines) == len(parsed.Commands) {
		lines = src.Lines
	}
	for i, cmd := range parsed.Commands {
		if cmd.Kind != script.KindSQL || cmd.SQL == nil {
			continue
		}
		sql := cmd.SQL
		if dialect.QuestionMarks {
			numbered := *sql
			numbered.Query = numberPlaceholders(dialect.SQL, sql.Query)
			sql = &numbered
		}
		if st := parseLockStep(sql, syms); st != nil {
			st.Cmd, st.Text = i, cmd.Text
			st.Line = cmd.Pos.Line
			if i < len(lines) && lines[i] > 0 {
				st.Line = lines[i]
			}
			ls.steps[i] = st
		}
	}
	if len(ls.steps) == 0 {
		return nil
	}
	// Variables read by \set expressions but never set: scenario defines,
	// or a plausible stand-in so that random(1, :n) still draws keys.
	set := map[string]bool{}
	for _, cmd := range parsed.Commands {
		if cmd.Kind == script.KindSet || cmd.Kind == script.KindSetShell {
			set[syms.Name(cmd.Var)] = true
		}
	}
	for _, cmd := range parsed.Commands {
		if cmd.Kind != script.KindSet {
			continue
		}
		for _, name := range exprVars(cmd.Text) {
			if !set[name] && ls.inputs[name] == "" {
				switch name {
				case script.VarScale:
					ls.inputs[name] = "1"
				case script.VarClientID, script.VarRandomSeed, script.VarDefaultSeed:
				default:
					ls.inputs[name] = "100"
				}
			}
		}
	}
	return ls
}

// numberPlaceholders writes a statement's ? placeholders as $1, $2 …
// (PostgreSQL's), which the lock analysis reads; quoted text and comments,
// as the dialect d lexes them, are left alone.
func numberPlaceholders(d sqllex.Dialect, q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); {
		tok := sqllex.Next(d, q, i)
		if tok.Kind == sqllex.Punct && q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
		} else {
			b.WriteString(q[i:tok.End])
		}
		i = tok.End
	}
	return b.String()
}

// exprVars lists the :variables a meta command's text reads.
func exprVars(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != ':' || (i+1 < len(text) && text[i+1] == ':') || (i > 0 && text[i-1] == ':') {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == '_' || text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z' || text[j] >= '0' && text[j] <= '9') {
			j++
		}
		if j > i+1 {
			out = append(out, text[i+1:j])
		}
		i = j - 1
	}
	return out
}

// simulateLocks runs a script on paper and collects the order of its
// lock steps inside its transactions.
func simulateLocks(ls *LockScript) ([]*orderStats, []tableOrder) {
	rng := script.NewRand(0x5eed + uint64(len(ls.Name)))
	stats := map[[2]int]*orderStats{}
	tables := map[[2]int]tableOrder{}
	var order [][2]int
	cmds := ls.parsed.Commands
	control := make([][]int, len(cmds)) // per SQL command, the transaction control of its statements
	for i, cmd := range cmds {
		if cmd.Kind == script.KindSQL && cmd.SQL != nil {
			for _, stmt := range splitStatements(cmd.SQL.Query) {
				control[i] = append(control[i], txControl(stmt))
			}
		}
	}
	for n := 0; n < lockSimulations; n++ {
		vars := script.NewVars(ls.syms)
		for k, v := range ls.inputs {
			vars.SetString(ls.syms.Ref(k), v)
		}
		vars.SetInt(ls.syms.Ref(script.VarClientID), int64(n%ls.clients))
		vars.SetInt(ls.syms.Ref(script.VarRandomSeed), int64(rng.Uint64()>>1))
		vars.SetInt(ls.syms.Ref(script.VarDefaultSeed), int64(rng.Uint64()>>1))
		env := &script.Env{Vars: vars, Rand: rng, Debug: discard{}}
		var tx []lockHit
		inTx := false
		flush := func() {
			// A row already locked by the transaction is not taken again.
			held := map[string]bool{}
			kept := tx[:0]
			for _, h := range tx {
				if h.key != nil {
					id := h.step.Table + "/" + strings.Join(h.step.Cols, ",") + "/" + h.key.String()
					if held[id] {
						continue
					}
					held[id] = true
				}
				kept = append(kept, h)
			}
			tx = kept
			for i := range tx {
				for j := i + 1; j < len(tx); j++ {
					a, b := tx[i], tx[j]
					if a.step.Table != b.step.Table {
						k := [2]int{a.step.Cmd, b.step.Cmd}
						if _, ok := tables[k]; !ok {
							tables[k] = tableOrder{script: ls, first: a.step, then: b.step}
						}
						continue
					}
					if a.key == nil || b.key == nil || !sameCols(a.step.Cols, b.step.Cols) {
						continue
					}
					c := compareKeys(a.key, b.key)
					if c == 0 {
						continue
					}
					k := [2]int{a.step.Cmd, b.step.Cmd}
					st := stats[k]
					if st == nil {
						st = &orderStats{script: ls, first: a.step, then: b.step}
						stats[k] = st
						order = append(order, k)
					}
					if c < 0 {
						st.asc++
						st.ascEx = [2]lockKey{a.key, b.key}
					} else {
						st.desc++
						st.desEx = [2]lockKey{a.key, b.key}
					}
					for _, key := range []lockKey{a.key, b.key} {
						if st.lo == nil || compareKeys(key, st.lo) < 0 {
							st.lo = key
						}
						if st.hi == nil || compareKeys(key, st.hi) > 0 {
							st.hi = key
						}
					}
				}
			}
			tx = tx[:0]
		}
		for pc, steps := 0, 0; pc < len(cmds) && steps < 10*len(cmds)+100; steps++ {
			env.Command = pc
			cmd := cmds[pc]
			next := pc + 1
			switch cmd.Kind {
			case script.KindSet:
				if v, err := cmd.Expr.Eval(env); err == nil {
					vars.SetValue(cmd.Var, v)
				}
			case script.KindIf:
				next = simulateBranch(cmds, pc, env, rng)
			case script.KindElif, script.KindElse:
				next = cmd.End + 1
			case script.KindSQL:
				for _, c := range control[pc] {
					switch c {
					case txBegin:
						flush()
						inTx = true
						continue
					case txEnd:
						flush()
						inTx = false
						continue
					}
				}
				if st := ls.steps[pc]; st != nil {
					hits := st.hits(cmd.SQL, env)
					if inTx {
						tx = append(tx, hits...)
					} else {
						tx = append(tx[:0], hits...) // a statement is its own transaction
						flush()
					}
				}
			}
			pc = next
		}
		flush()
	}
	var out []*orderStats
	for _, k := range order {
		out = append(out, stats[k])
	}
	var tout []tableOrder
	keys := make([][2]int, 0, len(tables))
	for k := range tables {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		tout = append(tout, tables[k])
	}
	return out, tout
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// simulateBranch evaluates an \if chain as the engine does; a condition
// that cannot be evaluated on paper picks a branch at random.
func simulateBranch(cmds []*script.Command, pc int, env *script.Env, rng *script.Rand) int {
	for guard := 0; guard < len(cmds); guard++ {
		cmd := cmds[pc]
		switch cmd.Kind {
		case script.KindIf, script.KindElif:
			truth := rng.Uint64()&1 == 1
			if v, err := cmd.Expr.Eval(env); err == nil {
				if t, err := v.Truth(); err == nil {
					truth = t
				}
			}
			if truth {
				return pc + 1
			}
			if cmd.Next <= pc || cmd.Next >= len(cmds) {
				return len(cmds)
			}
			pc = cmd.Next
		default:
			return pc + 1
		}
	}
	return len(cmds)
}

// hits evaluates the step's key for one transaction: one hit per row,
// several (sorted, as an index scan takes them) for IN lists.
func (s *LockStep) hits(sql *script.SQL, env *script.Env) []lockHit {
	if len(s.Cols) == 0 {
		return []lockHit{{step: s}}
	}
	keys := []lockKey{{}}
	for _, ops := range s.keys {
		var vals []string
		for _, op := range ops {
			v, ok := op.value(env)
			if !ok {
				return []lockHit{{step: s}}
			}
			vals = append(vals, v)
		}
		var next []lockKey
		for _, k := range keys {
			for _, v := range vals {
				next = append(next, append(append(lockKey{}, k...), newKeyPart(v)))
			}
		}
		keys = next
	}
	sort.SliceStable(keys, func(i, j int) bool { return compareKeys(keys[i], keys[j]) < 0 })
	out := make([]lockHit, 0, len(keys))
	for _, k := range keys {
		out = append(out, lockHit{step: s, key: k})
	}
	return out
}

func (o keyOperand) value(env *script.Env) (string, bool) {
	if o.expr == nil {
		return o.literal, true
	}
	v, err := o.expr.Eval(env)
	if err != nil || v.Type == script.TypeNull {
		return "", false
	}
	return string(v.AppendText(nil)), true
}

// Transaction control, as far as lock lifetimes go.
const (
	txNone = iota
	txBegin
	txEnd
)

func txControl(stmt string) int {
	toks := lockTokens(stmt)
	if len(toks) == 0 {
		return txNone
	}
	w := func(i int) string {
		if i < len(toks) {
			return toks[i].text
		}
		return ""
	}
	switch w(0) {
	case "begin":
		return txBegin
	case "start":
		if w(1) == "transaction" {
			return txBegin
		}
	case "commit", "end", "abort":
		if w(1) != "prepared" {
			return txEnd
		}
	case "rollback":
		for _, t := range toks[1:] {
			if t.text == "to" || t.text == "prepared" {
				return txNone
			}
		}
		return txEnd
	case "prepare":
		if w(1) == "transaction" {
			return txEnd
		}
	}
	return txNone
}

// lockDialect is how the lock analysis lexes a command's Query: as
// PostgreSQL's SQL, with MySQL's `quoted names` too, since a MySQL
// command's ? placeholders are numbered $1 … before it is read.
const lockDialect = sqllex.PostgreSQL | sqllex.Backquotes

// splitStatements cuts a command (a \; compound) at top-level semicolons.
func splitStatements(q string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(q); {
		tok := sqllex.Next(lockDialect, q, i)
		if tok.Kind == sqllex.Punct {
			switch q[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ';':
				if depth == 0 {
					out = append(out, q[start:i])
					start = i + 1
				}
			}
		}
		i = tok.End
	}
	if strings.TrimSpace(q[start:]) != "" {
		out = append(out, q[start:])
	}
	return out
}

// skipQuote returns the index of the last byte of the quoted string at
// q[i].
func skipQuote(q string, i int) int { return sqllex.Next(lockDialect, q, i).End - 1 }

// lockTok is a SQL token: identifiers and keywords lower-cased (unless
// quoted), strings with their quotes, numbers, $n parameters, operators.
type lockTok struct {
	text string
	kind byte // 'i' identifier, 'q' quoted identifier, 's' string, 'n' number, 'p' parameter, 'o' operator/punctuation
}

// operatorChars are the characters that join into one operator (<=, ::, ||).
const operatorChars = "<>=!:|&"

func lockTokens(q string) []lockTok {
	var out []lockTok
	for i := 0; i < len(q); {
		tok := sqllex.Next(lockDialect, q, i)
		text := q[i:tok.End]
		switch tok.Kind {
		case sqllex.Space, sqllex.LineComment, sqllex.BlockComment:
		case sqllex.String, sqllex.DollarString:
			out = append(out, lockTok{text, 's'})
		case sqllex.QuotedName:
			out = append(out, lockTok{sqllex.Unquote(lockDialect, text), 'q'})
		case sqllex.Param:
			out = append(out, lockTok{text, 'p'})
		case sqllex.Number:
			out = append(out, lockTok{text, 'n'})
		case sqllex.Word:
			out = append(out, lockTok{strings.ToLower(text), 'i'})
		default:
			if q[i] == '.' && tok.End < len(q) && q[tok.End] >= '0' && q[tok.End] <= '9' { // .5
				tok.End = sqllex.Next(lockDialect, q, tok.End).End
				out = append(out, lockTok{q[i:tok.End], 'n'})
				break
			}
			if strings.IndexByte(operatorChars, q[i]) >= 0 {
				for tok.End < len(q) && strings.IndexByte(operatorChars, q[tok.End]) >= 0 {
					tok.End++
				}
				text = q[i:tok.End]
			}
			out = append(out, lockTok{text, 'o'})
		}
		i = tok.End
	}
	return out
}

// parseLockStep recognises a statement that locks rows and the key its
// WHERE clause pins; nil for anything else.
func parseLockStep(sql *script.SQL, syms *script.Symbols) *LockStep {
	if sql.Compound {
		return nil
	}
	toks := lockTokens(sql.Query)
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 3 {
		return nil
	}
	w := func(i int) string {
		if i >= 0 && i < len(toks) {
			return toks[i].text
		}
		return ""
	}
	params := func(n int) (script.VarRef, bool) {
		if n < 1 || n > len(sql.Params) {
			return script.NoVar, false
		}
		return sql.Params[n-1], true
	}
	var st LockStep
	var cond []lockTok
	switch {
	case w(0) == "update":
		i := 1
		if w(i) == "only" {
			i++
		}
		st.Table, st.How = qualifiedTail(toks, &i), "UPDATE"
		cond = clause(toks, "where", "returning")
	case w(0) == "delete" && w(1) == "from":
		i := 2
		if w(i) == "only" {
			i++
		}
		st.Table, st.How = qualifiedTail(toks, &i), "DELETE"
		cond = clause(toks, "where", "returning")
	case w(0) == "select":
		mode, skip := lockClause(toks)
		if mode == "" || skip {
			return nil
		}
		from := topLevelIndex(toks, "from")
		if from < 0 || w(from+1) == "(" {
			return nil
		}
		i := from + 1
		st.Table, st.How = qualifiedTail(toks, &i), "SELECT … "+mode
		cond = clause(toks, "where", "group", "having", "window", "order", "limit", "offset", "fetch", "for", "lock")
		st.Ordered = topLevelIndex(toks, "order") >= 0
	case w(0) == "insert" && w(1) == "into":
		return parseUpsert(toks, params, syms)
	default:
		return nil
	}
	if st.Table == "" {
		return nil
	}
	st.Cols, st.keys = equalityKeys(cond, params, syms)
	return &st
}

// qualifiedTail reads a possibly schema-qualified table name at *i and
// returns its last part.
func qualifiedTail(toks []lockTok, i *int) string {
	if *i >= len(toks) || (toks[*i].kind != 'i' && toks[*i].kind != 'q') {
		return ""
	}
	name := toks[*i].text
	*i++
	for *i+1 < len(toks) && toks[*i].text == "." {
		name = toks[*i+1].text
		*i += 2
	}
	return name
}

// topLevelIndex finds a keyword outside parentheses.
func topLevelIndex(toks []lockTok, word string) int {
	depth := 0
	for i, t := range toks {
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.kind == 'i' && t.text == word:
			return i
		}
	}
	return -1
}

// clause returns the tokens after the top-level keyword start up to the
// first top-level keyword of ends.
func clause(toks []lockTok, start string, ends ...string) []lockTok {
	i := topLevelIndex(toks, start)
	if i < 0 {
		return nil
	}
	depth := 0
	for j := i + 1; j < len(toks); j++ {
		t := toks[j]
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.kind == 'i':
			for _, e := range ends {
				if t.text == e {
					return toks[i+1 : j]
				}
			}
		}
	}
	return toks[i+1:]
}

// lockClause finds SELECT's row-lock clause: its strength, and whether it
// skips locked rows or fails at once (NOWAIT), which cannot deadlock.
func lockClause(toks []lockTok) (mode string, noWait bool) {
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.text == "for" && i+1 < len(toks):
			var words []string
			j := i + 1
			for ; j < len(toks) && len(words) < 3; j++ {
				words = append(words, toks[j].text)
				if toks[j].text == "update" || toks[j].text == "share" {
					break
				}
			}
			switch strings.Join(words, " ") {
			case "update", "no key update", "share", "key share":
				mode = "FOR " + strings.ToUpper(strings.Join(words, " "))
				for k := j + 1; k < len(toks); k++ {
					if toks[k].text == "nowait" || toks[k].text == "skip" {
						noWait = true
					}
				}
				return mode, noWait
			}
		case depth == 0 && t.text == "lock" && i+3 < len(toks) && toks[i+1].text == "in" && toks[i+2].text == "share" && toks[i+3].text == "mode":
			return "LOCK IN SHARE MODE", false // MySQL's FOR SHARE
		}
	}
	return "", false
}

// equalityKeys finds the conjuncts `col = operand` and `col IN (…)` of a
// WHERE clause whose operands are constants or script variables.
func equalityKeys(cond []lockTok, params func(int) (script.VarRef, bool), syms *script.Symbols) ([]string, [][]keyOperand) {
	keys := map[string][]keyOperand{}
	for _, conj := range splitTop(cond, "and") {
		for len(conj) >= 2 && conj[0].text == "(" && conj[len(conj)-1].text == ")" && matchingParen(conj, 0) == len(conj)-1 {
			conj = conj[1 : len(conj)-1]
		}
		col, rest := columnPrefix(conj)
		if col == "" || len(rest) < 2 {
			continue
		}
		switch {
		case rest[0].text == "=":
			if rest[1].text == "any" && len(rest) > 3 && rest[2].text == "(" {
				inner := rest[3 : len(rest)-1]
				if len(inner) > 2 && inner[0].text == "array" && inner[1].text == "[" {
					if ops := operandList(inner[2:len(inner)-1], params, syms); ops != nil {
						keys[col] = ops
					}
				}
				continue
			}
			if op, ok := makeOperand(rest[1:], params, syms); ok {
				keys[col] = []keyOperand{op}
			}
		case rest[0].text == "in" && rest[1].text == "(" && rest[len(rest)-1].text == ")":
			if ops := operandList(rest[2:len(rest)-1], params, syms); ops != nil {
				keys[col] = ops
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	cols := make([]string, 0, len(keys))
	for c := range keys {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	out := make([][]keyOperand, len(cols))
	for i, c := range cols {
		out[i] = keys[c]
	}
	return cols, out
}

// columnPrefix reads `col` or `alias.col` at the start of a conjunct.
func columnPrefix(conj []lockTok) (string, []lockTok) {
	if len(conj) == 0 || (conj[0].kind != 'i' && conj[0].kind != 'q') {
		return "", nil
	}
	i := 0
	col := conj[0].text
	for i+2 < len(conj) && conj[i+1].text == "." && (conj[i+2].kind == 'i' || conj[i+2].kind == 'q') {
		col = conj[i+2].text
		i += 2
	}
	return col, conj[i+1:]
}

func splitTop(toks []lockTok, word string) [][]lockTok {
	var out [][]lockTok
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case t.text == "(" || t.text == "[":
			depth++
		case t.text == ")" || t.text == "]":
			depth--
		case depth == 0 && t.kind == 'i' && t.text == word:
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

func matchingParen(toks []lockTok, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch toks[i].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func operandList(toks []lockTok, params func(int) (script.VarRef, bool), syms *script.Symbols) []keyOperand {
	var out []keyOperand
	depth, start := 0, 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) {
			switch toks[i].text {
			case "(", "[":
				depth++
			case ")", "]":
				depth--
			}
			if toks[i].text != "," || depth != 0 {
				continue
			}
		}
		op, ok := makeOperand(toks[start:i], params, syms)
		if !ok {
			return nil
		}
		out = append(out, op)
		start = i + 1
	}
	return out
}

// pgbenchFuncs are the SQL functions an operand may use that pgbench's
// expression language computes the same way.
var pgbenchFuncs = map[string]bool{"least": true, "greatest": true, "abs": true, "mod": true, "int": true}

// makeOperand turns a constant or an arithmetic expression over $n
// parameters into something evaluable per transaction.
func makeOperand(toks []lockTok, params func(int) (script.VarRef, bool), syms *script.Symbols) (keyOperand, bool) {
	// Drop casts (::int, ::bigint) and trailing parenthesised types.
	var clean []lockTok
	for i := 0; i < len(toks); i++ {
		if toks[i].text == "::" && i+1 < len(toks) {
			i++
			continue
		}
		clean = append(clean, toks[i])
	}
	if len(clean) == 0 {
		return keyOperand{}, false
	}
	if len(clean) == 1 {
		switch t := clean[0]; t.kind {
		case 's':
			lit := strings.ReplaceAll(t.text[1:len(t.text)-1], "''", "'")
			return keyOperand{literal: lit, src: t.text}, true
		case 'n':
			return keyOperand{literal: normalizeNumber(t.text), src: t.text}, true
		}
	}
	var expr, src strings.Builder
	for i, t := range clean {
		switch t.kind {
		case 'p':
			n, _ := strconv.Atoi(t.text[1:])
			ref, ok := params(n)
			if !ok {
				return keyOperand{}, false
			}
			name := syms.Name(ref)
			expr.WriteString(" :" + name)
			src.WriteString(":" + name)
		case 'n':
			expr.WriteString(" " + t.text)
			src.WriteString(t.text)
		case 'i':
			if !pgbenchFuncs[t.text] || i+1 >= len(clean) || clean[i+1].text != "(" {
				return keyOperand{}, false // a column or a function pgbench does not know
			}
			expr.WriteString(" " + t.text)
			src.WriteString(t.text)
		case 'o':
			switch t.text {
			case "+", "-", "*", "/", "%", "(", ")", ",":
				expr.WriteString(" " + t.text)
				if t.text == "," {
					src.WriteString(", ")
				} else if t.text == "(" || t.text == ")" {
					src.WriteString(t.text)
				} else {
					src.WriteString(" " + t.text + " ")
				}
			default:
				return keyOperand{}, false
			}
		default:
			return keyOperand{}, false
		}
	}
	e, err := script.ParseExpr(strings.TrimSpace(expr.String()), script.Pos{File: "key", Line: 1, Col: 1}, syms)
	if err != nil {
		return keyOperand{}, false
	}
	return keyOperand{expr: e, src: src.String()}, true
}

func normalizeNumber(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}

// parseUpsert reads INSERT … (cols) VALUES (…) ON CONFLICT (target) DO
// UPDATE: the conflicting row is locked, keyed by the conflict target.
func parseUpsert(toks []lockTok, params func(int) (script.VarRef, bool), syms *script.Symbols) *LockStep {
	i := 2
	table := qualifiedTail(toks, &i)
	if table == "" {
		return nil
	}
	conflict := -1
	for j := i; j+1 < len(toks); j++ {
		if toks[j].text == "on" && toks[j+1].text == "conflict" {
			conflict = j
			break
		}
	}
	if conflict < 0 {
		return nil
	}
	doUpdate := false
	for j := conflict; j+1 < len(toks); j++ {
		if toks[j].text == "do" && toks[j+1].text == "update" {
			doUpdate = true
		}
	}
	if !doUpdate {
		return nil
	}
	st := &LockStep{Table: table, How: "INSERT … ON CONFLICT DO UPDATE"}
	// Column list and a single VALUES row.
	if i >= len(toks) || toks[i].text != "(" {
		return st
	}
	end := matchingParen(toks, i)
	if end < 0 {
		return st
	}
	var cols []string
	for _, t := range toks[i+1 : end] {
		if t.kind == 'i' || t.kind == 'q' {
			cols = append(cols, t.text)
		}
	}
	j := end + 1
	if j >= len(toks) || toks[j].text != "values" || j+1 >= len(toks) || toks[j+1].text != "(" {
		return st
	}
	vend := matchingParen(toks, j+1)
	if vend < 0 || vend+1 != conflict && (vend+1 >= len(toks) || toks[vend+1].text != "on") {
		return st // several rows: keys unknown
	}
	var values [][]lockTok
	depth, start := 0, j+2
	for k := j + 2; k <= vend; k++ {
		switch toks[k].text {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				values = append(values, toks[start:k])
			}
			depth--
		case ",":
			if depth == 0 {
				values = append(values, toks[start:k])
				start = k + 1
			}
		}
	}
	if len(values) != len(cols) {
		return st
	}
	var target []string
	if conflict+2 < len(toks) && toks[conflict+2].text == "(" {
		tend := matchingParen(toks, conflict+2)
		for _, t := range toks[conflict+3 : max(tend, conflict+3)] {
			if t.kind == 'i' || t.kind == 'q' {
				target = append(target, t.text)
			}
		}
	}
	if len(target) == 0 {
		return st
	}
	sort.Strings(target)
	for _, c := range target {
		idx := -1
		for k, name := range cols {
			if name == c {
				idx = k
			}
		}
		if idx < 0 {
			return &LockStep{Table: table, How: st.How}
		}
		op, ok := makeOperand(values[idx], params, syms)
		if !ok {
			return &LockStep{Table: table, How: st.How}
		}
		st.Cols = append(st.Cols, c)
		st.keys = append(st.keys, []keyOperand{op})
	}
	return st
}
