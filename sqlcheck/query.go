package sqlcheck

import (
	"regexp"
	"slices"
	"strings"
)

// Reading a statement's text: what a rule needs when it has the text
// (from pg_stat_statements or a script) but no plan.

var (
	sqlVarRef   = regexp.MustCompile(`:[A-Za-z_][A-Za-z0-9_]*|\$\d+|'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b`)
	sqlSpaces   = regexp.MustCompile(`\s+`)
	sqlComments = regexp.MustCompile(`/\*.*?\*/|--[^\n]*`)
)

// Normalize makes a statement comparable with its script command, so
// pg_stat_statements' text can be traced to the script line that sent it:
// comments, literals, :variables and $n aside, spaces collapsed, lower case.
func Normalize(q string) string {
	q = sqlComments.ReplaceAllString(q, " ")
	q = sqlVarRef.ReplaceAllString(q, "?")
	q = sqlSpaces.ReplaceAllString(strings.ToLower(q), " ")
	return strings.TrimRight(strings.TrimSpace(q), "; ")
}

// QueryTables lists the tables a statement's FROM and JOIN name.
func QueryTables(q string) []string {
	toks := lockTokens(q)
	var out []string
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != 'i' || (toks[i].text != "from" && toks[i].text != "join" && toks[i].text != "update" && toks[i].text != "into") {
			continue
		}
		j := i + 1
		if j < len(toks) && toks[j].text == "only" {
			j++
		}
		if t := qualifiedTail(toks, &j); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// QueryClauses reads a statement's top-level WHERE and ORDER BY texts.
func QueryClauses(q string) (where string, order []string) {
	toks := lockTokens(q)
	text := tokensText
	where = text(clause(toks, "where", "group", "having", "window", "order", "limit", "offset", "fetch", "for", "returning"))
	if i := topLevelIndex(toks, "order"); i >= 0 && i+1 < len(toks) && toks[i+1].text == "by" {
		body := clause(toks[i+1:], "by", "limit", "offset", "fetch", "for")
		for _, part := range splitTopComma(body) {
			order = append(order, text(part))
		}
	}
	return where, order
}

// tokensText writes tokens back as SQL text, spaced as people write it.
func tokensText(ts []lockTok) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			prev := ts[i-1].text
			switch {
			case t.text == ")" || t.text == "," || t.text == "::" || prev == "(" || prev == "::":
			case t.text == "(" && ts[i-1].kind == 'i':
			case t.text == "." || prev == ".":
			default:
				b.WriteByte(' ')
			}
		}
		if t.kind == 'q' {
			b.WriteString(`"` + strings.ReplaceAll(t.text, `"`, `""`) + `"`)
			continue
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func splitTopComma(toks []lockTok) [][]lockTok {
	var out [][]lockTok
	depth, start := 0, 0
	for i, t := range toks {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// oneLine squeezes a query onto one line and cuts it to n bytes.
func oneLine(q string, n int) string {
	s := strings.Join(strings.Fields(q), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
