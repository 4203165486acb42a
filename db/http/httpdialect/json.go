package httpdialect

import (
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Path is a JSON path: $ followed by .name, ["name"] and [index] steps.
type Path struct {
	Steps []Step
	Text  string // as written
}

// Step is one step of a Path: an object's member, or an array's element.
type Step struct {
	Key   string
	Index int // the element when IsIndex
	// IsIndex says the step is [index].
	IsIndex bool
}

// ParsePath reads $.a.b[0]["c d"].
func ParsePath(s string) (Path, error) {
	p := Path{Text: s}
	if s == "" || s[0] != '$' {
		return p, fmt.Errorf("JSON path %q: start with $, as in $.items[0].id", s)
	}
	for i := 1; i < len(s); {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i+1 {
				return p, fmt.Errorf("JSON path %q: a name must follow '.' at %d", s, i+1)
			}
			p.Steps = append(p.Steps, Step{Key: s[i+1 : j]})
			i = j
		case '[':
			j := i + 1
			if j < len(s) && s[j] == '"' {
				k := j + 1
				for k < len(s) && s[k] != '"' {
					k++
				}
				if k+1 >= len(s) || s[k+1] != ']' {
					return p, fmt.Errorf("JSON path %q: [\"name\"] is not closed", s)
				}
				p.Steps = append(p.Steps, Step{Key: s[j+1 : k]})
				i = k + 2
				continue
			}
			for j < len(s) && s[j] != ']' {
				j++
			}
			if j >= len(s) {
				return p, fmt.Errorf("JSON path %q: '[' is not closed", s)
			}
			n, err := strconv.Atoi(s[i+1 : j])
			if err != nil || n < 0 {
				return p, fmt.Errorf("JSON path %q: [%s] is not an index (0, 1, …) or [\"name\"]", s, s[i+1:j])
			}
			p.Steps = append(p.Steps, Step{Index: n, IsIndex: true})
			i = j + 1
		default:
			return p, fmt.Errorf("JSON path %q: unexpected %q at %d (steps are .name, [index] and [\"name\"])", s, s[i], i+1)
		}
	}
	return p, nil
}

// Lookup finds the value at path in a JSON document and returns its raw
// bytes (a string with its quotes); found is false when the path leads
// nowhere or the document is not JSON up to the value. It allocates
// nothing.
func Lookup(doc []byte, path Path) (raw []byte, found bool) {
	i := skipSpace(doc, 0)
	for _, st := range path.Steps {
		if i >= len(doc) {
			return nil, false
		}
		var ok bool
		if st.IsIndex {
			i, ok = element(doc, i, st.Index)
		} else {
			i, ok = member(doc, i, st.Key)
		}
		if !ok {
			return nil, false
		}
	}
	end, ok := skipValue(doc, i, 0)
	if !ok {
		return nil, false
	}
	return doc[i:end], true
}

// maxDepth bounds nesting, so that a hostile reply cannot exhaust the
// stack.
const maxDepth = 512

// member returns the offset of the value of key in the object at i.
func member(doc []byte, i int, key string) (int, bool) {
	if doc[i] != '{' {
		return 0, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return 0, false
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return 0, false
		}
		end, ok := skipString(doc, i)
		if !ok {
			return 0, false
		}
		match := keyEquals(doc[i:end], key)
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return 0, false
		}
		i = skipSpace(doc, i+1)
		if match {
			return i, i < len(doc)
		}
		if i, ok = skipValue(doc, i, 0); !ok {
			return 0, false
		}
		i = skipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return 0, false
		}
		i = skipSpace(doc, i+1)
	}
	return 0, false
}

// element returns the offset of element n of the array at i.
func element(doc []byte, i, n int) (int, bool) {
	if doc[i] != '[' {
		return 0, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return 0, false
	}
	for k := 0; i < len(doc); k++ {
		if k == n {
			return i, true
		}
		var ok bool
		if i, ok = skipValue(doc, i, 0); !ok {
			return 0, false
		}
		i = skipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return 0, false
		}
		i = skipSpace(doc, i+1)
	}
	return 0, false
}

// keyEquals compares a raw JSON string with key, escapes decoded.
func keyEquals(raw []byte, key string) bool {
	s := raw[1 : len(raw)-1]
	for _, c := range s {
		if c == '\\' {
			var buf [128]byte
			dec, ok := AppendUnquoted(buf[:0], raw)
			return ok && string(dec) == key
		}
	}
	return string(s) == key
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string whose quote is at i.
func skipString(doc []byte, i int) (int, bool) {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the offset after the value at i.
func skipValue(doc []byte, i, depth int) (int, bool) {
	if i >= len(doc) || depth > maxDepth {
		return 0, false
	}
	switch c := doc[i]; {
	case c == '"':
		return skipString(doc, i)
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(doc, i+1)
		if i < len(doc) && doc[i] == closing {
			return i + 1, true
		}
		for i < len(doc) {
			if c == '{' {
				if doc[i] != '"' {
					return 0, false
				}
				end, ok := skipString(doc, i)
				if !ok {
					return 0, false
				}
				i = skipSpace(doc, end)
				if i >= len(doc) || doc[i] != ':' {
					return 0, false
				}
				i = skipSpace(doc, i+1)
			}
			var ok bool
			if i, ok = skipValue(doc, i, depth+1); !ok {
				return 0, false
			}
			i = skipSpace(doc, i)
			if i >= len(doc) {
				return 0, false
			}
			if doc[i] == closing {
				return i + 1, true
			}
			if doc[i] != ',' {
				return 0, false
			}
			i = skipSpace(doc, i+1)
		}
		return 0, false
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(doc) && (doc[j] >= '0' && doc[j] <= '9' || doc[j] == '.' || doc[j] == 'e' || doc[j] == 'E' || doc[j] == '+' || doc[j] == '-') {
			j++
		}
		return j, true
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(doc)-i >= len(lit) && string(doc[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
		}
	}
	return 0, false
}

// AppendUnquoted appends the text of the raw JSON string raw (quotes
// included) to buf, escapes decoded; ok is false for a malformed string.
func AppendUnquoted(buf, raw []byte) (out []byte, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return buf, false
	}
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			buf = append(buf, c)
			continue
		}
		i++
		if i >= len(s) {
			return buf, false
		}
		switch s[i] {
		case '"', '\\', '/':
			buf = append(buf, s[i])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if i+5 > len(s) {
				return buf, false
			}
			n, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 32)
			if err != nil {
				return buf, false
			}
			buf = utf8.AppendRune(buf, rune(n))
			i += 4
		default:
			return buf, false
		}
	}
	return buf, true
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
