package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a scenario (or in a script or SQL file it names),
// located at file:line:col so that an editor can jump to it.
type Error struct {
	File string
	Pos  Pos    // zero when the problem has no place (an unreadable file)
	Msg  string // what is wrong
	Hint string // what to do about it; optional
}

// Error prints the problem as file:line:col: msg (hint).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Pos.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d", e.Pos.Line)
		if e.Pos.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Pos.Col)
		}
	}
	if e.Pos.Line < 0 {
		b.WriteString(" (a --set value)") // placed by Parse at its argument; kept in Scenario as a line below 0
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteByte(')')
	}
	return b.String()
}

// Errors is every problem Load found, so that one run of the tool shows
// them all; use errors.As to get it from the error Load returns.
type Errors []*Error

// Error prints one problem a line, by position: the problems of each file
// together (files in the order they first appear), by line and column.
func (es Errors) Error() string {
	sorted := es.sorted()
	lines := make([]string, len(sorted))
	for i, e := range sorted {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the single errors to errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted returns a copy ordered by file (first appearance), line and column;
// problems at the same place keep their order.
func (es Errors) sorted() Errors {
	fileRank := make(map[string]int)
	for _, e := range es {
		if _, ok := fileRank[e.File]; !ok {
			fileRank[e.File] = len(fileRank)
		}
	}
	out := append(Errors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if fa, fb := fileRank[a.File], fileRank[b.File]; fa != fb {
			return fa < fb
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
	return out
}

// finish orders the problems for Parse's result: the scenario file first,
// then other files (scripts) by name, each by position; exact repeats
// (one anchored mistake reached through several aliases) are dropped.
func (es Errors) finish(scenarioFile string) Errors {
	out := append(Errors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.File == scenarioFile) != (b.File == scenarioFile) {
			return a.File == scenarioFile
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
	dedup := out[:0]
	seen := make(map[Error]bool)
	for _, e := range out {
		if seen[*e] {
			continue
		}
		seen[*e] = true
		dedup = append(dedup, e)
	}
	return dedup
}

// closest returns the candidate a misspelt word most likely meant, or ""
// when none is close: the same word up to case and '-'/'_' ("sampleInterval",
// "sample-interval"), a unique prefix, or within a small edit distance.
func closest(word string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
	}
	w := norm(word)
	if w == "" {
		return ""
	}
	for _, c := range candidates {
		if norm(c) == w {
			return c
		}
	}
	best, bestDist := "", -1
	limit := min(max(len(w)/4, 1), 3)
	for _, c := range candidates {
		d := editDistance(w, norm(c))
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return best
	}
	var prefixed []string
	for _, c := range candidates {
		if len(w) >= 3 && strings.HasPrefix(norm(c), w) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the Damerau–Levenshtein distance (with adjacent
// transpositions, the commonest typo) between two short words.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// suggest formats the "did you mean" of an unknown word, or lists the
// choices when nothing is close.
func suggest(word string, candidates []string) (didYouMean, choices string) {
	if c := closest(word, candidates); c != "" {
		return fmt.Sprintf("; did you mean %q?", c), ""
	}
	return "", strings.Join(candidates, ", ")
}

// Gather joins what several checks of the scenario file found into one
// list, so that one run shows every problem: each problem once, those of
// the scenario file first, then other files' by name, each file's by
// position. A check's error that wraps problems ("target db: …") gives
// its words to each of them; any other error is a problem of the file
// without a place. Nil when there is none.
func Gather(file string, errs ...error) error {
	var all Errors
	for _, err := range errs {
		gather(file, "", err, &all)
	}
	if len(all) == 0 {
		return nil
	}
	return all.finish(file)
}

func gather(file, prefix string, err error, into *Errors) {
	if err == nil {
		return
	}
	if e, ok := err.(*Error); ok {
		c := *e
		c.Msg = prefix + c.Msg
		*into = append(*into, &c)
		return
	}
	switch w := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range w.Unwrap() {
			gather(file, prefix, inner, into)
		}
		return
	case interface{ Unwrap() error }:
		if inner := w.Unwrap(); inner != nil {
			if words, ok := strings.CutSuffix(err.Error(), inner.Error()); ok {
				gather(file, prefix+words, inner, into)
				return
			}
		}
	}
	*into = append(*into, &Error{File: file, Msg: prefix + err.Error()})
}
