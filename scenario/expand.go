package scenario

import (
	"bytes"
	"fmt"
	"sort"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Variables in scenario files: ${NAME} is the environment variable NAME,
// ${NAME:-default} is default when NAME is unset or empty, and $${ is a
// literal ${. Any other $ stays as it is, so PostgreSQL's $$ dollar
// quotes need no escaping. Expansion happens on the file's text before
// the YAML is decoded (a variable may stand for a number, a list, a
// whole line); errors are placed by the original text (posMap).

// expansion is the text after expanding variables, with what is needed
// to place positions of the expanded text in the original one.
type expansion struct {
	text []byte
	// spans are the substitutions, in order: each replaced orig[origStart:
	// origEnd) by text[start:end).
	spans []expandedSpan
	// lineStarts of the original and expanded texts: byte offsets.
	origLines, textLines []int
	orig                 []byte
}

type expandedSpan struct {
	start, end         int // in the expanded text
	origStart, origEnd int // in the original text
}

// expandVars expands the variables of src. lookup is the environment
// (os.LookupEnv); a nil lookup has nothing set. Every unset variable
// without a default and every malformed ${ is an Error at its
// file:line:col.
func expandVars(file string, src []byte, lookup func(string) (string, bool)) (*expansion, Errors) {
	x := &expansion{orig: src}
	if !bytes.Contains(src, []byte("${")) {
		x.text = src
		return x, nil
	}
	var out bytes.Buffer
	var errs Errors
	x.origLines = lineStarts(src)
	at := func(off int) Pos { return offsetPos(src, x.origLines, off) }
	for i := 0; i < len(src); {
		c := src[i]
		if c != '$' {
			out.WriteByte(c)
			i++
			continue
		}
		if bytes.HasPrefix(src[i:], []byte("$${")) {
			x.spans = append(x.spans, expandedSpan{start: out.Len(), end: out.Len() + 2, origStart: i, origEnd: i + 3})
			out.WriteString("${")
			i += 3
			continue
		}
		if !bytes.HasPrefix(src[i:], []byte("${")) {
			out.WriteByte(c)
			i++
			continue
		}
		end := bytes.IndexAny(src[i:], "}\n")
		if end < 0 || src[i+end] != '}' {
			errs = append(errs, &Error{File: file, Pos: at(i), Msg: "${ is not closed by } on its line",
				Hint: "write ${NAME} or ${NAME:-default}; $${ is a literal ${"})
			out.WriteByte(c)
			i++
			continue
		}
		ref := string(src[i+2 : i+end])
		name, def, hasDefault := cutDefault(ref)
		if !isVarName(name) {
			errs = append(errs, &Error{File: file, Pos: at(i), Msg: fmt.Sprintf("${%s}: %q is not a variable name", ref, name),
				Hint: "names are letters, digits and _, not starting with a digit; $${ is a literal ${"})
			out.WriteByte(c)
			i++
			continue
		}
		value, set := "", false
		if lookup != nil {
			value, set = lookup(name)
		}
		switch {
		case hasDefault && value == "":
			value = def
		case !set:
			errs = append(errs, &Error{File: file, Pos: at(i), Msg: fmt.Sprintf("environment variable %s is not set", name),
				Hint: fmt.Sprintf("set it (%s=… firedrill …), or give a default: ${%s:-value}", name, name)})
		}
		x.spans = append(x.spans, expandedSpan{start: out.Len(), end: out.Len() + len(value), origStart: i, origEnd: i + end + 1})
		out.WriteString(value)
		i += end + 1
	}
	x.text = out.Bytes()
	x.textLines = lineStarts(x.text)
	return x, errs
}

// cutDefault splits "NAME:-default".
func cutDefault(ref string) (name, def string, ok bool) {
	if i := bytes.Index([]byte(ref), []byte(":-")); i >= 0 {
		return ref[:i], ref[i+2:], true
	}
	return ref, "", false
}

// isVarName reports whether s is an environment variable's name as a
// shell takes it.
func isVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// changed says whether expansion changed anything.
func (x *expansion) changed() bool { return x != nil && x.spans != nil }

// origPos places a position of the expanded text (1-based line and
// character column, as yaml.v3 counts) in the original text: inside a
// substituted value it is where the ${ was.
func (x *expansion) origPos(line, col int) Pos {
	if !x.changed() || line < 1 {
		return Pos{Line: line, Col: col}
	}
	off := x.textOffset(line, col)
	k := sort.Search(len(x.spans), func(i int) bool { return x.spans[i].end > off })
	var origOff int
	switch {
	case k < len(x.spans) && off >= x.spans[k].start:
		origOff = x.spans[k].origStart
	case k == 0:
		origOff = off
	default:
		prev := x.spans[k-1]
		origOff = prev.origEnd + (off - prev.end)
	}
	p := offsetPos(x.orig, x.origLines, origOff)
	if col == 0 {
		p.Col = 0
	}
	return p
}

// textOffset is the byte offset of a line and character column of the
// expanded text.
func (x *expansion) textOffset(line, col int) int {
	if line > len(x.textLines) {
		return len(x.text)
	}
	off := x.textLines[line-1]
	for i := 1; i < col && off < len(x.text) && x.text[off] != '\n'; i++ {
		_, size := utf8.DecodeRune(x.text[off:])
		off += size
	}
	return off
}

// place rewrites the line and column of every node under n to the
// original text's, so that every position the loader takes from a node
// (errors, Scenario's Pos fields) is the file's as the user wrote it.
func (x *expansion) place(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] || !x.changed() {
		return
	}
	seen[n] = true
	if n.Line > 0 {
		p := x.origPos(n.Line, n.Column)
		n.Line, n.Column = p.Line, p.Col
	}
	for _, c := range n.Content {
		x.place(c, seen)
	}
	x.place(n.Alias, seen)
}

// lineStarts are the byte offsets where the lines of text start.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for i, c := range text {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offsetPos is the 1-based line and character column of a byte offset.
func offsetPos(text []byte, starts []int, off int) Pos {
	line := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) // first line after
	start := starts[line-1]
	return Pos{Line: line, Col: utf8.RuneCount(text[start:min(off, len(text))]) + 1}
}
