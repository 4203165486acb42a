// Package httpdialect is the language HTTP workloads' scripts are written
// in: a request line (METHOD /path?query with :variables), its header
// lines and body, and the meta-commands \check and \gset that act on the
// reply, between pgbench's meta-commands (\set, \if, \sleep …). The
// backend, its client and its tests share it; script/ parses the
// meta-commands and hands the rest to Syntax.
package httpdialect

import (
	"github.com/firedrill/firedrill/script"
)

// Script is the HTTP dialect: requests between the meta-commands.
func Script() script.Dialect { return script.Dialect{Name: "http", Syntax: syntax} }

// syntax is the dialect's one Syntax value (a pointer: a Dialect must be
// comparable).
var syntax = &Syntax{} // never changed

// Syntax parses HTTP requests and the meta-commands that act on their
// replies.
type Syntax struct{}

var _ script.Syntax = (*Syntax)(nil)

// Request is one HTTP request of a script, as written: what the client
// sends (its :variables replaced) and what it checks and stores of the
// reply.
type Request struct {
	Method string
	// Target is the path and query as written, joined to the target's
	// URL; variables are percent-encoded where they land.
	Target Template
	// Endpoint names the request in statistics: the method and the path
	// as written, before '?' ("GET /users/:id").
	Endpoint string
	Headers  []Header
	// Body is sent with a Content-Length when HasBody.
	Body    Template
	HasBody bool
	// Checks are the \check lines after the request, in order;
	// StatusChecked says one of them is about the status, which then
	// replaces the default (a status of 400 or more fails).
	Checks        []Check
	StatusChecked bool
	// Gsets are the \gset lines after the request, in order.
	Gsets []Gset
	// ID is the endpoint's index in the target's statistics, set by the
	// target before the run (Workload); -1 until then.
	ID int
}

// Header is one header line of a request.
type Header struct {
	Name  string
	Value Template
}

// Template is text with :variables: literal parts and variables in order.
type Template struct {
	Parts []Part
}

// Part is a piece of a Template: literal text, or a variable.
type Part struct {
	Text string        // the literal, or the reference as written (":id")
	Var  script.VarRef // script.NoVar for literal text
}

// Literal reports whether t has no variable.
func (t *Template) Literal() bool {
	for _, p := range t.Parts {
		if p.Var != script.NoVar {
			return false
		}
	}
	return true
}

// String is the template as written.
func (t *Template) String() string {
	n := 0
	for _, p := range t.Parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range t.Parts {
		b = append(b, p.Text...)
	}
	return string(b)
}

// Escape says how a variable's value is written where it lands.
type Escape uint8

// The escapes: none (headers and bodies), or percent-encoding (paths
// and queries: every byte but letters, digits and -._~).
const (
	Raw Escape = iota
	Percent
)

// Append appends the template to buf with its variables' values, escaped
// by esc, allocating nothing beyond growing buf. unset is the first
// variable without a value (script.NoVar when all have one).
func (t *Template) Append(buf []byte, vars *script.Vars, esc Escape) (out []byte, unset script.VarRef) {
	for i := range t.Parts {
		p := &t.Parts[i]
		if p.Var == script.NoVar {
			buf = append(buf, p.Text...)
			continue
		}
		start := len(buf)
		var ok bool
		if buf, ok = vars.AppendText(buf, p.Var); !ok {
			return buf, p.Var
		}
		if esc == Percent {
			buf = percentEncode(buf, start)
		}
	}
	return buf, script.NoVar
}

// percentEncode percent-encodes buf[start:] in place (growing buf).
func percentEncode(buf []byte, start int) []byte {
	extra := 0
	for _, c := range buf[start:] {
		if !unreserved(c) {
			extra += 2
		}
	}
	if extra == 0 {
		return buf
	}
	n := len(buf)
	for range extra {
		buf = append(buf, 0)
	}
	w := len(buf)
	for r := n - 1; r >= start; r-- {
		c := buf[r]
		if unreserved(c) {
			w--
			buf[w] = c
			continue
		}
		w -= 3
		buf[w], buf[w+1], buf[w+2] = '%', hexDigits[c>>4], hexDigits[c&15]
	}
	return buf
}

const hexDigits = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
