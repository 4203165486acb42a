package sqlcheck

import (
	"fmt"
	"slices"
	"strings"
)

// What an index can do for a scan: the missing-index rule hands over the
// conditions a scan applies to one table's rows (a plan's Filter and join
// condition, or the WHERE, ON and ORDER BY of the query block that names
// the table), and RecommendIndex designs the B-tree index that would
// serve them.

// Rel names the table a set of conditions is about: its alias and name as
// the query writes them, and whether unqualified columns are its own (true
// for a plan's Filter and a single-table query block).
type Rel struct {
	Names  []string // the alias (if any) and the table's name
	BareOK bool     // unqualified columns are the table's
}

func (r Rel) is(qualifier string) bool { return slices.Contains(r.Names, qualifier) }

// Conditions sorts a scan's conditions by what an index can do with
// them, so a rule can judge whether an index would spare the scan.
type Conditions struct {
	Eq     []string // col = value (a parameter, a constant, a column of another table), col IN (…), col = ANY (…)
	Ranges []string // col < value, col BETWEEN …
	Nulls  []string // "col IS NULL", "col IS NOT NULL": constant conditions for a partial index
	Other  []string // conditions an index on plain columns does not serve
}

// ParseConditions splits each condition at its top-level ANDs and sorts
// the conjuncts; conjuncts about other tables only are left out.
func ParseConditions(conds []string, r Rel) Conditions {
	var p Conditions
	for _, cond := range conds {
		for _, conj := range splitConjuncts(cond) {
			toks := trimParenToks(lockTokens(conj))
			if len(toks) == 0 || !mentionsRel(toks, r) {
				continue
			}
			kind, col := classifyConjunct(toks, r)
			switch kind {
			case "eq":
				p.Eq = appendNew(p.Eq, col)
			case "range":
				p.Ranges = appendNew(p.Ranges, col)
			case "null":
				p.Nulls = appendNew(p.Nulls, col)
			default:
				p.Other = append(p.Other, tokensText(toks))
			}
		}
	}
	return p
}

// parseFilter reads a single-table plan Filter.
func parseFilter(filter string) Conditions {
	return ParseConditions([]string{filter}, Rel{BareOK: true})
}

// classifyConjunct reads `col op value` or `value op col` where col is the
// table's column and value holds none of its columns.
func classifyConjunct(toks []lockTok, r Rel) (kind, col string) {
	n := len(toks)
	// col IS [NOT] NULL
	if n >= 3 && toks[n-1].text == "null" && toks[n-2].text == "is" {
		if c := relColumn(toks[:n-2], r); c != "" {
			return "null", c + " IS NULL"
		}
	}
	if n >= 4 && toks[n-1].text == "null" && toks[n-2].text == "not" && toks[n-3].text == "is" {
		if c := relColumn(toks[:n-3], r); c != "" {
			return "null", c + " IS NOT NULL"
		}
	}
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[":
			depth++
			continue
		case ")", "]":
			depth--
			continue
		}
		if depth != 0 {
			continue
		}
		op := ""
		switch {
		case t.kind == 'o' && (t.text == "=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
			op = t.text
		case t.kind == 'i' && (t.text == "in" || t.text == "between"):
			op = t.text
		case t.kind == 'o' || t.kind == 'i' && (t.text == "like" || t.text == "ilike" || t.text == "not" || t.text == "similar"):
			if t.kind == 'o' && (t.text == "(" || t.text == ")" || t.text == "," || t.text == "." || t.text == "::" ||
				t.text == "+" || t.text == "-" || t.text == "*" || t.text == "/" || t.text == "||" || t.text == "=>") {
				continue
			}
			return "other", ""
		default:
			continue
		}
		left, right := toks[:i], toks[i+1:]
		if op == "=" && len(right) > 0 && right[0].text == "any" {
			right = right[1:]
		}
		kind := "range"
		if op == "=" || op == "in" {
			kind = "eq"
		}
		if c := relColumn(left, r); c != "" && isValueFor(right, r) {
			return kind, c
		}
		if op != "in" && op != "between" {
			if c := relColumn(right, r); c != "" && isValueFor(left, r) {
				return kind, c
			}
		}
		return "other", ""
	}
	return "other", ""
}

// relColumn returns the column if toks are just one column of the table.
func relColumn(toks []lockTok, r Rel) string {
	toks = trimParenToks(toks)
	switch {
	case len(toks) == 1 && (toks[0].kind == 'i' || toks[0].kind == 'q') && r.BareOK && !sqlWords[toks[0].text]:
		return toks[0].text
	case len(toks) == 3 && toks[1].text == "." && r.is(toks[0].text) && (toks[2].kind == 'i' || toks[2].kind == 'q'):
		return toks[2].text
	}
	return ""
}

// mentionsRel reports whether a conjunct refers to the table's columns.
func mentionsRel(toks []lockTok, r Rel) bool {
	for i, t := range toks {
		if t.kind != 'i' && t.kind != 'q' {
			continue
		}
		if i+1 < len(toks) && toks[i+1].text == "." {
			if r.is(t.text) {
				return true
			}
			continue
		}
		if i > 0 && toks[i-1].text == "." {
			continue
		}
		if r.BareOK && !sqlWords[t.text] && (i+1 >= len(toks) || toks[i+1].text != "(") && (i == 0 || toks[i-1].text != "::") {
			return true
		}
	}
	return false
}

// sqlWords are keywords and type words that are not column names.
var sqlWords = map[string]bool{
	"null": true, "true": true, "false": true, "interval": true, "current_timestamp": true, "current_date": true,
	"localtimestamp": true, "current_time": true, "array": true, "any": true, "all": true, "and": true, "or": true,
	"not": true, "is": true, "in": true, "between": true, "symmetric": true, "with": true, "time": true, "zone": true,
	"without": true, "double": true, "precision": true, "like": true, "ilike": true, "escape": true, "case": true,
	"when": true, "then": true, "else": true, "end": true, "distinct": true, "from": true, "as": true, "exists": true,
	"select": true, "where": true, "timestamp": true, "date": true, "text": true, "integer": true, "bigint": true,
	"numeric": true, "varying": true, "character": true, "boolean": true,
}

// isValueFor reports whether an expression holds none of the table's
// columns: parameters, constants, function calls of them, and columns of
// other tables (an outer query's, the other side of a join).
func isValueFor(toks []lockTok, r Rel) bool {
	if len(toks) == 0 {
		return false
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.text == "::" { // a cast: skip the type's words and modifiers
			for i+1 < len(toks) && toks[i+1].kind == 'i' {
				i++
				if i+2 < len(toks) && toks[i+1].text == "(" && toks[i+2].kind == 'n' {
					for i+1 < len(toks) && toks[i+1].text != ")" {
						i++
					}
					i++
				}
			}
			continue
		}
		if t.kind != 'i' && t.kind != 'q' {
			continue
		}
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1].text
		}
		switch {
		case next == ".": // qualified: another table's column is a value here
			if r.is(t.text) {
				return false
			}
			i += 2
		case next == "(" || next == "=>" || (i+1 < len(toks) && toks[i+1].kind == 's'):
			// a function, a named argument, a typed literal
		case t.kind == 'i' && sqlWords[t.text]:
		case !r.BareOK:
			// an unqualified column in a block of several tables: not ours
		default:
			return false
		}
	}
	return true
}

// trimParenToks drops parentheses enclosing the whole token list.
func trimParenToks(toks []lockTok) []lockTok {
	for len(toks) >= 2 && toks[0].text == "(" && matchingParen(toks, 0) == len(toks)-1 {
		toks = toks[1 : len(toks)-1]
	}
	return toks
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// splitConjuncts cuts a condition at its top-level ANDs (not the AND of
// BETWEEN … AND …).
func splitConjuncts(cond string) []string {
	f := stripParens(strings.TrimSpace(cond))
	var out []string
	depth, start := 0, 0
	upper := strings.ToUpper(f)
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '\'':
			i = skipQuote(f, i)
		case '(':
			depth++
		case ')':
			depth--
		case ' ', '\n', '\t':
			if depth == 0 && len(upper) > i+4 && strings.HasPrefix(upper[i+1:], "AND") && i+4 < len(f) &&
				(f[i+4] == ' ' || f[i+4] == '\n' || f[i+4] == '\t' || f[i+4] == '(') && !betweenPending(upper[start:i]) {
				out = append(out, strings.TrimSpace(f[start:i]))
				start = i + 4
				i += 3
			}
		}
	}
	if s := strings.TrimSpace(f[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// betweenPending reports whether a conjunct so far is "x BETWEEN a", whose
// AND belongs to it.
func betweenPending(s string) bool {
	i := strings.LastIndex(s, " BETWEEN ")
	return i >= 0 && !strings.Contains(s[i:], " AND ")
}

// stripParens removes parentheses that enclose the whole expression.
func stripParens(s string) string {
	for {
		s = strings.TrimSpace(s)
		if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
			return s
		}
		depth := 0
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '\'':
				i = skipQuote(s, i)
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 && i != len(s)-1 {
					return s
				}
			}
		}
		s = s[1 : len(s)-1]
	}
}

// SortColumn is one ORDER BY key on a plain column.
type SortColumn struct {
	Col  string
	Desc bool
}

// SortColumns reads the sort keys on the table's plain columns; a key on
// an expression or on another table ends the list (an index on the
// table's columns cannot provide what follows).
func SortColumns(keys []string, r Rel) []SortColumn {
	var out []SortColumn
	for _, k := range keys {
		toks := lockTokens(k)
		desc := false
		for len(toks) > 0 {
			last := toks[len(toks)-1].text
			switch {
			case last == "desc":
				desc = true
				toks = toks[:len(toks)-1]
				continue
			case last == "asc":
				toks = toks[:len(toks)-1]
				continue
			case (last == "first" || last == "last") && len(toks) >= 2 && toks[len(toks)-2].text == "nulls":
				toks = toks[:len(toks)-2]
				continue
			}
			break
		}
		col := relColumn(toks, r)
		if col == "" {
			break
		}
		out = append(out, SortColumn{Col: col, Desc: desc})
	}
	return out
}

// IndexAdvice is the index to create and why, for a finding's remedy.
type IndexAdvice struct {
	Columns     []string // the index's columns; none when no index would serve
	Create      string   // the CREATE INDEX CONCURRENTLY statement
	Why         string   // "Why: …", the columns' order explained
	Alternative string   // another index, and its price, if there is one
}

// Short is the index for a headline: "a (posted_at) WHERE deleted_at IS NULL".
func (a IndexAdvice) Short() string {
	s := strings.TrimSuffix(strings.TrimPrefix(a.Create, "CREATE INDEX CONCURRENTLY ON "), ";")
	if s == "" {
		return "the filtered columns"
	}
	return s
}

// RecommendIndex designs the index for the conditions and the ORDER BY
// a scan applies to one table: the equality columns first (any order
// serves them), then the ORDER BY columns (so the index delivers rows in
// order and a LIMIT stops early), or else the range column; IS [NOT] NULL
// conditions become the partial index's predicate.
func RecommendIndex(table string, conds, sortKeys []string, r Rel) IndexAdvice {
	p := ParseConditions(conds, r)
	sorts := SortColumns(sortKeys, r)
	var a IndexAdvice
	var cols []string
	for _, c := range p.Eq {
		cols = appendNew(cols, c)
	}
	mixed := false
	for i := 1; i < len(sorts); i++ {
		if sorts[i].Desc != sorts[0].Desc {
			mixed = true
		}
	}
	var keyCols []string
	for _, s := range sorts {
		if slices.Contains(cols, s.Col) {
			continue
		}
		cols = append(cols, s.Col)
		k := s.Col
		if mixed && s.Desc {
			k += " DESC"
		}
		keyCols = append(keyCols, k)
	}
	if len(sorts) == 0 && len(p.Ranges) > 0 && !slices.Contains(cols, p.Ranges[0]) {
		cols = append(cols, p.Ranges[0])
		keyCols = append(keyCols, p.Ranges[0])
	}
	if len(cols) == 0 && len(p.Nulls) > 0 { // only IS NULL tests: index the column itself
		col := strings.Fields(p.Nulls[0])[0]
		cols, keyCols = []string{col}, []string{col}
	}
	if len(cols) == 0 {
		return a
	}
	a.Columns = cols
	key := append(append([]string{}, p.Eq...), keyCols...)
	var partial []string
	for _, n := range p.Nulls {
		if col := strings.Fields(n)[0]; !slices.Contains(cols, col) {
			partial = append(partial, n)
		}
	}
	a.Create = fmt.Sprintf("CREATE INDEX CONCURRENTLY ON %s (%s)", table, strings.Join(key, ", "))
	if len(partial) > 0 {
		a.Create += " WHERE " + strings.Join(partial, " AND ")
	}
	a.Create += ";"
	var why []string
	if len(p.Eq) > 0 {
		why = append(why, fmt.Sprintf("%s first, since the query looks rows up by it (equality, a join key or an outer query's value)", strings.Join(p.Eq, ", ")))
	}
	then := ""
	if len(why) > 0 {
		then = "then "
	}
	switch {
	case len(sorts) > 0:
		var sc []string
		for _, s := range sorts {
			sc = append(sc, s.Col)
		}
		w := fmt.Sprintf("%s%s, so the index returns rows already in ORDER BY order (a B-tree reads backwards as well as forwards) and the scan stops after the LIMIT instead of reading and sorting the table", then, strings.Join(sc, ", "))
		for _, rg := range p.Ranges {
			if slices.Contains(sc, rg) {
				w += fmt.Sprintf("; the range condition on %s becomes where the scan starts", rg)
			}
		}
		why = append(why, w)
	case len(p.Ranges) > 0 && !slices.Contains(p.Eq, p.Ranges[0]):
		why = append(why, fmt.Sprintf("%s%s for the range condition", then, p.Ranges[0]))
	}
	if len(partial) > 0 {
		why = append(why, fmt.Sprintf("the partial predicate `%s` keeps only the rows this query can return, so the index is smaller and cheaper to maintain; the query's WHERE must state it literally to use the index", strings.Join(partial, " AND ")))
		var nullCols []string
		for _, n := range partial {
			nullCols = append(nullCols, strings.Fields(n)[0])
		}
		alt := append(append([]string{}, nullCols...), key...)
		a.Alternative = fmt.Sprintf("Alternative: the composite `CREATE INDEX CONCURRENTLY ON %s (%s);` serves the same query (IS NULL is an equality a B-tree can search) and also queries with other %s conditions, at the price of indexing every row.",
			table, strings.Join(alt, ", "), strings.Join(nullCols, ", "))
	}
	if len(p.Other) > 0 {
		why = append(why, fmt.Sprintf("the remaining condition (%s) is checked on the rows the index yields", oneLine(strings.Join(p.Other, " AND "), 80)))
	}
	if len(why) > 0 {
		a.Why = "Why: " + strings.Join(why, "; ") + "."
	}
	return a
}

// TableBlock is what the query block that names a table asks of its
// rows, read from a statement's text when no plan is at hand.
type TableBlock struct {
	Rel         Rel
	Conds       []string // WHERE and ON conjuncts of the block
	JoinConds   []string // the ON conjuncts about the table
	SortKeys    []string // the block's ORDER BY
	PerOuterRow bool     // a correlated subquery: evaluated once per outer row
}

// sqlClauseEnds end a block's clauses.
var sqlClauseEnds = []string{"where", "group", "having", "window", "order", "limit", "offset", "fetch", "for", "union", "intersect", "except", "returning", "join", "inner", "left", "right", "full", "cross", "natural", "on", "using"}

// TableClauses finds the query block (the innermost parentheses) that
// names table in a FROM or JOIN, and reads its WHERE, ON and ORDER BY.
func TableClauses(query, table string) (TableBlock, bool) {
	toks := lockTokens(query)
	for i := 1; i < len(toks); i++ {
		if toks[i-1].text != "from" && toks[i-1].text != "join" && toks[i-1].text != "only" {
			continue
		}
		alias, name, _ := fromItem(toks, i)
		if name != table {
			continue
		}
		names := []string{table}
		if alias != name {
			names = []string{alias, table}
		}
		// The enclosing block.
		start, depth := 0, 0
		for k := i - 1; k >= 0; k-- {
			if toks[k].text == ")" {
				depth++
			} else if toks[k].text == "(" {
				if depth == 0 {
					start = k + 1
					break
				}
				depth--
			}
		}
		end := len(toks)
		if start > 0 {
			if m := matchingParen(toks, start-1); m > 0 {
				end = m
			}
		}
		block := toks[start:end]
		b := TableBlock{Rel: Rel{Names: names, BareOK: blockTables(block) == 1}}
		for _, word := range []string{"where", "on"} {
			for _, part := range blockClauses(block, word) {
				for _, conj := range splitTop(part, "and") {
					if len(conj) == 0 {
						continue
					}
					b.Conds = append(b.Conds, tokensText(conj))
					if word == "on" && mentionsRel(trimParenToks(conj), b.Rel) {
						b.JoinConds = append(b.JoinConds, tokensText(conj))
					}
				}
			}
		}
		if k := topLevelIndex(block, "order"); k >= 0 && k+1 < len(block) && block[k+1].text == "by" {
			for _, key := range splitTopComma(clause(block[k+1:], "by", "limit", "offset", "fetch", "for", "union")) {
				b.SortKeys = append(b.SortKeys, tokensText(key))
			}
		}
		// Correlated: the block refers to a qualifier it does not define.
		if start > 0 {
			defined := blockNames(block)
			for k := 0; k+1 < len(block); k++ {
				if (block[k].kind == 'i' || block[k].kind == 'q') && block[k+1].text == "." && !slices.Contains(defined, block[k].text) {
					b.PerOuterRow = true
				}
			}
		}
		return b, true
	}
	return TableBlock{}, false
}

// blockTables counts the tables a block's FROM list and JOINs name.
func blockTables(block []lockTok) int {
	return len(blockNames(block)) / 2
}

// blockNames lists each table of a block's FROM list and JOINs as alias
// and name (the name twice when it has no alias).
func blockNames(block []lockTok) []string {
	var out []string
	depth := 0
	for i := 0; i < len(block); i++ {
		t := block[i]
		switch {
		case t.text == "(":
			depth++
			continue
		case t.text == ")":
			depth--
			continue
		case depth != 0 || t.kind != 'i' || (t.text != "from" && t.text != "join"):
			continue
		}
		j := i + 1
		for {
			alias, name, next := fromItem(block, j)
			if name == "" {
				break
			}
			out = append(out, alias, name)
			j = next
			if t.text == "from" && j < len(block) && block[j].text == "," {
				j++
				continue
			}
			break
		}
	}
	return out
}

// fromItem reads one FROM item at j: a table or a parenthesised
// subquery, with its alias; next is the index after it.
func fromItem(block []lockTok, j int) (alias, name string, next int) {
	for j < len(block) && (block[j].text == "lateral" || block[j].text == "only") {
		j++
	}
	if j < len(block) && block[j].text == "(" {
		m := matchingParen(block, j)
		if m < 0 {
			return "", "", j
		}
		j, name = m+1, "(subquery)"
	} else if name = qualifiedTail(block, &j); name == "" {
		return "", "", j
	}
	alias = name
	if j < len(block) && block[j].text == "as" {
		j++
	}
	if j < len(block) && (block[j].kind == 'i' || block[j].kind == 'q') && !slices.Contains(sqlClauseEnds, block[j].text) && block[j].text != "where" {
		alias = block[j].text
		j++
	}
	return alias, name, j
}

// blockClauses returns the token runs after each top-level occurrence of
// the keywords, up to the next clause.
func blockClauses(block []lockTok, words ...string) [][]lockTok {
	var out [][]lockTok
	depth := 0
	for i := 0; i < len(block); i++ {
		switch block[i].text {
		case "(":
			depth++
			continue
		case ")":
			depth--
			continue
		}
		if depth != 0 || block[i].kind != 'i' || !slices.Contains(words, block[i].text) {
			continue
		}
		d := 0
		j := i + 1
		for ; j < len(block); j++ {
			if block[j].text == "(" {
				d++
			} else if block[j].text == ")" {
				d--
			} else if d == 0 && block[j].kind == 'i' && slices.Contains(sqlClauseEnds, block[j].text) {
				break
			}
		}
		out = append(out, block[i+1:j])
		i = j - 1
	}
	return out
}
