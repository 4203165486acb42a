package diagnose

import (
	"fmt"
	"strings"
)

// What an index can do for a scan: the missing-index rule reads the
// conditions a scan applies to one table's rows (a plan's Filter and join
// condition, or the WHERE, ON and ORDER BY of the query block that names
// the table) and designs the B-tree index that would serve them.

// rel names the table a set of conditions is about: its alias and name as
// the query writes them, and whether unqualified columns are its own (true
// for a plan's Filter and a single-table query block).
type rel struct {
	names  []string
	bareOK bool
}

func (r rel) is(qualifier string) bool { return contains(r.names, qualifier) }

// filterPlan sorts conditions by what an index can do with them.
type filterPlan struct {
	eq     []string // col = value (a parameter, a constant, a column of another table), col IN (…), col = ANY (…)
	ranges []string // col < value, col BETWEEN …
	nulls  []string // "col IS NULL", "col IS NOT NULL": constant conditions for a partial index
	other  []string // conditions an index on plain columns does not serve
}

// parseConditions splits each condition at its top-level ANDs and sorts
// the conjuncts; conjuncts about other tables only are left out.
func parseConditions(conds []string, r rel) filterPlan {
	var p filterPlan
	for _, cond := range conds {
		for _, conj := range splitConjuncts(cond) {
			toks := trimParenToks(lockTokens(conj))
			if len(toks) == 0 || !mentionsRel(toks, r) {
				continue
			}
			kind, col := classifyConjunct(toks, r)
			switch kind {
			case "eq":
				p.eq = appendNew(p.eq, col)
			case "range":
				p.ranges = appendNew(p.ranges, col)
			case "null":
				p.nulls = appendNew(p.nulls, col)
			default:
				p.other = append(p.other, tokensText(toks))
			}
		}
	}
	return p
}

// parseFilter reads a single-table plan Filter.
func parseFilter(filter string) filterPlan {
	return parseConditions([]string{filter}, rel{bareOK: true})
}

// classifyConjunct reads `col op value` or `value op col` where col is the
// table's column and value holds none of its columns.
func classifyConjunct(toks []lockTok, r rel) (kind, col string) {
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
func relColumn(toks []lockTok, r rel) string {
	toks = trimParenToks(toks)
	switch {
	case len(toks) == 1 && (toks[0].kind == 'i' || toks[0].kind == 'q') && r.bareOK && !sqlWords[toks[0].text]:
		return toks[0].text
	case len(toks) == 3 && toks[1].text == "." && r.is(toks[0].text) && (toks[2].kind == 'i' || toks[2].kind == 'q'):
		return toks[2].text
	}
	return ""
}

// mentionsRel reports whether a conjunct refers to the table's columns.
func mentionsRel(toks []lockTok, r rel) bool {
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
		if r.bareOK && !sqlWords[t.text] && (i+1 >= len(toks) || toks[i+1].text != "(") && (i == 0 || toks[i-1].text != "::") {
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
func isValueFor(toks []lockTok, r rel) bool {
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
		case !r.bareOK:
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
	if contains(list, s) {
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

// sortColumn is one ORDER BY key on a plain column.
type sortColumn struct {
	col  string
	desc bool
}

// sortColumns reads the sort keys on the table's plain columns; a key on
// an expression or on another table ends the list (an index on the
// table's columns cannot provide what follows).
func sortColumns(keys []string, r rel) []sortColumn {
	var out []sortColumn
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
		out = append(out, sortColumn{col: col, desc: desc})
	}
	return out
}

// indexAdvice is the index to create and why.
type indexAdvice struct {
	columns     []string
	primary     string // the CREATE INDEX CONCURRENTLY statement
	why         string
	alternative string
}

// short is the index for a headline: "a (posted_at) WHERE deleted_at IS NULL".
func (a indexAdvice) short() string {
	s := strings.TrimSuffix(strings.TrimPrefix(a.primary, "CREATE INDEX CONCURRENTLY ON "), ";")
	if s == "" {
		return "the filtered columns"
	}
	return s
}

// recommendIndex designs the index for the conditions and the ORDER BY
// a scan applies to one table: the equality columns first (any order
// serves them), then the ORDER BY columns (so the index delivers rows in
// order and a LIMIT stops early), or else the range column; IS [NOT] NULL
// conditions become the partial index's predicate.
func recommendIndex(table string, conds, sortKeys []string, r rel) indexAdvice {
	p := parseConditions(conds, r)
	sorts := sortColumns(sortKeys, r)
	var a indexAdvice
	var cols []string
	for _, c := range p.eq {
		cols = appendNew(cols, c)
	}
	mixed := false
	for i := 1; i < len(sorts); i++ {
		if sorts[i].desc != sorts[0].desc {
			mixed = true
		}
	}
	var keyCols []string
	for _, s := range sorts {
		if contains(cols, s.col) {
			continue
		}
		cols = append(cols, s.col)
		k := s.col
		if mixed && s.desc {
			k += " DESC"
		}
		keyCols = append(keyCols, k)
	}
	if len(sorts) == 0 && len(p.ranges) > 0 && !contains(cols, p.ranges[0]) {
		cols = append(cols, p.ranges[0])
		keyCols = append(keyCols, p.ranges[0])
	}
	if len(cols) == 0 && len(p.nulls) > 0 { // only IS NULL tests: index the column itself
		col := strings.Fields(p.nulls[0])[0]
		cols, keyCols = []string{col}, []string{col}
	}
	if len(cols) == 0 {
		return a
	}
	a.columns = cols
	key := append(append([]string{}, p.eq...), keyCols...)
	var partial []string
	for _, n := range p.nulls {
		if col := strings.Fields(n)[0]; !contains(cols, col) {
			partial = append(partial, n)
		}
	}
	a.primary = fmt.Sprintf("CREATE INDEX CONCURRENTLY ON %s (%s)", table, strings.Join(key, ", "))
	if len(partial) > 0 {
		a.primary += " WHERE " + strings.Join(partial, " AND ")
	}
	a.primary += ";"
	var why []string
	if len(p.eq) > 0 {
		why = append(why, fmt.Sprintf("%s first, since the query looks rows up by it (equality, a join key or an outer query's value)", strings.Join(p.eq, ", ")))
	}
	then := ""
	if len(why) > 0 {
		then = "then "
	}
	switch {
	case len(sorts) > 0:
		var sc []string
		for _, s := range sorts {
			sc = append(sc, s.col)
		}
		w := fmt.Sprintf("%s%s, so the index returns rows already in ORDER BY order (a B-tree reads backwards as well as forwards) and the scan stops after the LIMIT instead of reading and sorting the table", then, strings.Join(sc, ", "))
		for _, rg := range p.ranges {
			if contains(sc, rg) {
				w += fmt.Sprintf("; the range condition on %s becomes where the scan starts", rg)
			}
		}
		why = append(why, w)
	case len(p.ranges) > 0 && !contains(p.eq, p.ranges[0]):
		why = append(why, fmt.Sprintf("%s%s for the range condition", then, p.ranges[0]))
	}
	if len(partial) > 0 {
		why = append(why, fmt.Sprintf("the partial predicate `%s` keeps only the rows this query can return, so the index is smaller and cheaper to maintain; the query's WHERE must state it literally to use the index", strings.Join(partial, " AND ")))
		var nullCols []string
		for _, n := range partial {
			nullCols = append(nullCols, strings.Fields(n)[0])
		}
		alt := append(append([]string{}, nullCols...), key...)
		a.alternative = fmt.Sprintf("Alternative: the composite `CREATE INDEX CONCURRENTLY ON %s (%s);` serves the same query (IS NULL is an equality a B-tree can search) and also queries with other %s conditions, at the price of indexing every row.",
			table, strings.Join(alt, ", "), strings.Join(nullCols, ", "))
	}
	if len(p.other) > 0 {
		why = append(why, fmt.Sprintf("the remaining condition (%s) is checked on the rows the index yields", oneLine(strings.Join(p.other, " AND "), 80)))
	}
	if len(why) > 0 {
		a.why = "Why: " + strings.Join(why, "; ") + "."
	}
	return a
}

// tableBlock is what the query block that names a table asks of its rows.
type tableBlock struct {
	r           rel
	conds       []string // WHERE and ON conjuncts of the block
	joinConds   []string // the ON conjuncts about the table
	sortKeys    []string // the block's ORDER BY
	perOuterRow bool     // a correlated subquery: evaluated once per outer row
}

// sqlClauseEnds end a block's clauses.
var sqlClauseEnds = []string{"where", "group", "having", "window", "order", "limit", "offset", "fetch", "for", "union", "intersect", "except", "returning", "join", "inner", "left", "right", "full", "cross", "natural", "on", "using"}

// tableClauses finds the query block (the innermost parentheses) that
// names table in a FROM or JOIN, and reads its WHERE, ON and ORDER BY.
func tableClauses(query, table string) (tableBlock, bool) {
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
		b := tableBlock{r: rel{names: names, bareOK: blockTables(block) == 1}}
		for _, word := range []string{"where", "on"} {
			for _, part := range blockClauses(block, word) {
				for _, conj := range splitTop(part, "and") {
					if len(conj) == 0 {
						continue
					}
					b.conds = append(b.conds, tokensText(conj))
					if word == "on" && mentionsRel(trimParenToks(conj), b.r) {
						b.joinConds = append(b.joinConds, tokensText(conj))
					}
				}
			}
		}
		if k := topLevelIndex(block, "order"); k >= 0 && k+1 < len(block) && block[k+1].text == "by" {
			for _, key := range splitTopComma(clause(block[k+1:], "by", "limit", "offset", "fetch", "for", "union")) {
				b.sortKeys = append(b.sortKeys, tokensText(key))
			}
		}
		// Correlated: the block refers to a qualifier it does not define.
		if start > 0 {
			defined := blockNames(block)
			for k := 0; k+1 < len(block); k++ {
				if (block[k].kind == 'i' || block[k].kind == 'q') && block[k+1].text == "." && !contains(defined, block[k].text) {
					b.perOuterRow = true
				}
			}
		}
		return b, true
	}
	return tableBlock{}, false
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
	if j < len(block) && (block[j].kind == 'i' || block[j].kind == 'q') && !contains(sqlClauseEnds, block[j].text) && block[j].text != "where" {
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
		if depth != 0 || block[i].kind != 'i' || !contains(words, block[i].text) {
			continue
		}
		d := 0
		j := i + 1
		for ; j < len(block); j++ {
			if block[j].text == "(" {
				d++
			} else if block[j].text == ")" {
				d--
			} else if d == 0 && block[j].kind == 'i' && contains(sqlClauseEnds, block[j].text) {
				break
			}
		}
		out = append(out, block[i+1:j])
		i = j - 1
	}
	return out
}
