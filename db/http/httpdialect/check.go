package httpdialect

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/script"
)

// CheckWhat is what a \check looks at.
type CheckWhat uint8

// The things a \check can look at.
const (
	CheckStatus CheckWhat = iota + 1 // the status code
	CheckJSON                        // a value of the JSON body, by path
	CheckBody                        // the body's text (contains)
)

// Op is a \check's comparison.
type Op uint8

// The comparisons.
const (
	OpEq Op = iota + 1
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpIn       // status in 2xx
	OpContains // body contains "text"
)

var opNames = map[string]Op{"==": OpEq, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe, "in": OpIn, "contains": OpContains}

// Check is one \check: a condition on the reply that fails the
// transaction when false.
type Check struct {
	What CheckWhat
	Op   Op
	// Path is the JSON path of CheckJSON.
	Path Path
	// Want is the value compared with: for CheckStatus a number (or,
	// with OpIn, the class: 2 for 2xx), else a literal or a variable.
	Want Value
	// Text is the check as written after \check, and Line its line, for
	// the failure's message.
	Text string
	Line int
}

// Gset is one \gset: a variable set from the reply.
type Gset struct {
	Var script.VarRef
	// Path is the JSON path to read, or, when Header is set, nothing.
	Path Path
	// Header names the header to read instead of the body.
	Header string
}

// ValueKind is the type of a literal in a \check.
type ValueKind uint8

// The literals' types.
const (
	Number ValueKind = iota + 1
	String
	True
	False
	Null
	Variable
)

// Value is a \check's literal, or a variable.
type Value struct {
	Kind ValueKind
	Num  float64
	Str  string
	Var  script.VarRef
}

// args reads the words of a meta-command's line.
type args struct {
	src    []byte
	i, end int
}

func (a *args) skipSpace() {
	for a.i < a.end && (a.src[a.i] == ' ' || a.src[a.i] == '\t' || a.src[a.i] == '\r') {
		a.i++
	}
}

// word reads up to the next space; off is where it starts.
func (a *args) word() (w string, off int) {
	a.skipSpace()
	off = a.i
	for a.i < a.end && a.src[a.i] != ' ' && a.src[a.i] != '\t' && a.src[a.i] != '\r' {
		a.i++
	}
	return string(a.src[off:a.i]), off
}

func (a *args) errorf(off int, format string, v ...any) error {
	return &script.SyntaxError{Off: off, Msg: fmt.Sprintf(format, v...)}
}

const checkForms = `\check status == 200, \check status in 2xx, \check $.ok == true or \check body contains "text"`

func parseCheck(a *args, syms *script.Symbols) (Check, error) {
	subject, off := a.word()
	var c Check
	switch {
	case subject == "":
		return c, a.errorf(off, "\\check needs a condition: %s", checkForms)
	case subject == "status":
		c.What = CheckStatus
	case subject == "body":
		c.What = CheckBody
	case strings.HasPrefix(subject, "$"):
		c.What = CheckJSON
		p, err := ParsePath(subject)
		if err != nil {
			return c, a.errorf(off, "%v", err)
		}
		c.Path = p
	default:
		return c, a.errorf(off, "\\check %s: want %s", subject, checkForms)
	}
	op, opOff := a.word()
	c.Op = opNames[op]
	switch {
	case c.Op == 0:
		return c, a.errorf(opOff, "\\check %s: %q is not a comparison (==, !=, <, <=, >, >=%s)", subject, op, map[bool]string{true: ", in", false: ""}[c.What == CheckStatus])
	case c.What == CheckBody && c.Op != OpContains:
		return c, a.errorf(opOff, "\\check body: only contains, as in \\check body contains \"text\"")
	case c.What != CheckBody && c.Op == OpContains:
		return c, a.errorf(opOff, "contains is for the body: \\check body contains \"text\"")
	case c.What != CheckStatus && c.Op == OpIn:
		return c, a.errorf(opOff, "in is for the status: \\check status in 2xx")
	}
	a.skipSpace()
	valOff := a.i
	switch c.What {
	case CheckStatus:
		w, _ := a.word()
		if c.Op == OpIn {
			if len(w) != 3 || w[0] < '1' || w[0] > '5' || strings.ToLower(w[1:]) != "xx" {
				return c, a.errorf(valOff, "\\check status in %s: want a class, 1xx to 5xx", w)
			}
			c.Want = Value{Kind: Number, Num: float64(w[0] - '0')}
			break
		}
		n, err := strconv.Atoi(w)
		if err != nil || n < 100 || n > 999 {
			return c, a.errorf(valOff, "\\check status: %q is not a status code (100 to 999)", w)
		}
		c.Want = Value{Kind: Number, Num: float64(n)}
	default:
		if c.What == CheckBody && (a.i >= a.end || a.src[a.i] != '"' && a.src[a.i] != ':') {
			return c, a.errorf(valOff, "\\check body contains: want a quoted text, as in \"ok\"")
		}
		v, err := parseValue(a, syms)
		if err != nil {
			return c, err
		}
		if c.What == CheckBody && v.Kind != String && v.Kind != Variable {
			return c, a.errorf(valOff, "\\check body contains: want a quoted text, as in \"ok\"")
		}
		if (c.Op != OpEq && c.Op != OpNe) && v.Kind != Number && v.Kind != Variable && c.What == CheckJSON {
			return c, a.errorf(valOff, "\\check %s %s: only numbers are ordered", subject, op)
		}
		c.Want = v
	}
	a.skipSpace()
	if a.i < a.end {
		return c, a.errorf(a.i, "unexpected %q after the \\check's condition", string(a.src[a.i:a.end]))
	}
	return c, nil
}

// parseValue reads a literal: a number, "text", true, false, null, or a
// :variable.
func parseValue(a *args, syms *script.Symbols) (Value, error) {
	a.skipSpace()
	off := a.i
	if a.i < a.end && a.src[a.i] == '"' {
		var b []byte
		a.i++
		for {
			if a.i >= a.end {
				return Value{}, a.errorf(off, "unterminated quoted text: the double quote opened here is not closed on its line")
			}
			c := a.src[a.i]
			if c == '"' {
				a.i++
				return Value{Kind: String, Str: string(b)}, nil
			}
			if c == '\\' && a.i+1 < a.end {
				a.i++
				c = a.src[a.i]
			}
			b = append(b, c)
			a.i++
		}
	}
	w, _ := a.word()
	switch {
	case w == "true":
		return Value{Kind: True}, nil
	case w == "false":
		return Value{Kind: False}, nil
	case w == "null":
		return Value{Kind: Null}, nil
	case len(w) > 1 && w[0] == ':' && validName(w[1:]):
		return Value{Kind: Variable, Var: syms.Ref(w[1:])}, nil
	}
	n, err := strconv.ParseFloat(w, 64)
	if err != nil || w == "" || strings.ContainsAny(w, "xXnN_") {
		return Value{}, a.errorf(off, "want a number, \"text\", true, false, null or a :variable; got %q", w)
	}
	return Value{Kind: Number, Num: n}, nil
}

func parseGset(a *args, syms *script.Symbols) (Gset, error) {
	name, off := a.word()
	if !validName(name) {
		return Gset{}, a.errorf(off, "\\gset %q: want \\gset name = $.json.path or \\gset name = header X-Name", name)
	}
	eq, eqOff := a.word()
	if eq != "=" {
		return Gset{}, a.errorf(eqOff, "\\gset %s: want = after the variable's name, as in \\gset %s = $.id", name, name)
	}
	g := Gset{Var: syms.Ref(name)}
	from, fromOff := a.word()
	switch {
	case from == "header":
		h, hOff := a.word()
		if !isToken([]byte(h)) {
			return Gset{}, a.errorf(hOff, "\\gset %s = header: name the header, as in header X-Request-Id", name)
		}
		g.Header = h
	case strings.HasPrefix(from, "$"):
		p, err := ParsePath(from)
		if err != nil {
			return Gset{}, a.errorf(fromOff, "%v", err)
		}
		g.Path = p
	default:
		return Gset{}, a.errorf(fromOff, "\\gset %s = %s: want a JSON path ($.items[0].id) or header X-Name", name, from)
	}
	a.skipSpace()
	if a.i < a.end {
		return Gset{}, a.errorf(a.i, "unexpected %q after the \\gset", string(a.src[a.i:a.end]))
	}
	return g, nil
}

func validName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// Describe is the check as written, for a failure's message.
func (c *Check) Describe() string { return "\\check " + c.Text }

// StatusOK says whether a status passes a status check.
func (c *Check) StatusOK(status int) bool {
	w := int(c.Want.Num)
	switch c.Op {
	case OpIn:
		return status/100 == w
	case OpEq:
		return status == w
	case OpNe:
		return status != w
	case OpLt:
		return status < w
	case OpLe:
		return status <= w
	case OpGt:
		return status > w
	case OpGe:
		return status >= w
	}
	return false
}

// BodyOK says whether the body passes a CheckBody or CheckJSON check;
// vars gives a variable's value. It allocates nothing.
func (c *Check) BodyOK(body []byte, vars *script.Vars, scratch []byte) (ok bool, grown []byte) {
	want, scratch, known := c.want(vars, scratch)
	if !known {
		return false, scratch
	}
	if c.What == CheckBody {
		return bytes.Contains(body, want.bytes), scratch
	}
	raw, found := Lookup(body, c.Path)
	if !found {
		return c.Op == OpNe, scratch // nothing there is unequal to anything
	}
	cmp, comparable := compareJSON(raw, want)
	if !comparable {
		return c.Op == OpNe, scratch
	}
	switch c.Op {
	case OpEq:
		return cmp == 0, scratch
	case OpNe:
		return cmp != 0, scratch
	case OpLt:
		return cmp < 0, scratch
	case OpLe:
		return cmp <= 0, scratch
	case OpGt:
		return cmp > 0, scratch
	case OpGe:
		return cmp >= 0, scratch
	}
	return false, scratch
}

// wanted is a check's value at run time.
type wanted struct {
	kind  ValueKind
	num   float64
	bytes []byte
}

func (c *Check) want(vars *script.Vars, scratch []byte) (wanted, []byte, bool) {
	v := c.Want
	if v.Kind != Variable {
		return wanted{kind: v.Kind, num: v.Num, bytes: unsafeBytes(v.Str)}, scratch, true
	}
	scratch, ok := vars.AppendText(scratch[:0], v.Var)
	if !ok {
		return wanted{}, scratch, false
	}
	w := wanted{kind: String, bytes: scratch}
	if n, err := strconv.ParseFloat(unsafeString(scratch), 64); err == nil {
		w.kind, w.num = Number, n
	}
	return w, scratch, true
}

// compareJSON compares a raw JSON value with a wanted one: -1, 0, 1, and
// whether they are of types that compare at all.
func compareJSON(raw []byte, w wanted) (int, bool) {
	switch w.kind {
	case Number:
		if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			if w.bytes != nil && raw[0] == '"' { // a variable's text against a JSON string
				return compareString(raw, w.bytes)
			}
			return 0, false
		}
		n, err := strconv.ParseFloat(unsafeString(raw), 64)
		if err != nil {
			return 0, false
		}
		switch {
		case n < w.num:
			return -1, true
		case n > w.num:
			return 1, true
		}
		return 0, true
	case String:
		if len(raw) == 0 || raw[0] != '"' {
			return 0, false
		}
		return compareString(raw, w.bytes)
	case True:
		return boolCmp(bytes.Equal(raw, []byte("true")))
	case False:
		return boolCmp(bytes.Equal(raw, []byte("false")))
	case Null:
		return boolCmp(bytes.Equal(raw, []byte("null")))
	}
	return 0, false
}

func boolCmp(eq bool) (int, bool) {
	if eq {
		return 0, true
	}
	return 1, true
}

// compareString compares a raw JSON string with text, decoding the
// string's escapes as it goes, without allocating.
func compareString(raw, text []byte) (int, bool) {
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return bytes.Compare(s, text), true
	}
	var buf [256]byte
	dec, ok := AppendUnquoted(buf[:0], raw)
	if !ok {
		return 0, false
	}
	return bytes.Compare(dec, text), true
}
