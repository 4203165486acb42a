package httpdialect

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/script"
)

// maxTextLen is how much of a request line a command's Text keeps, as
// pgbench keeps 127 bytes of a SQL command.
const maxTextLen = 127

// Command parses a request: its request line at src[at], the header
// lines under it, and a body after an empty line.
func (*Syntax) Command(src []byte, at int, syms *script.Symbols) (any, string, int, error) {
	lineEnd := endOfLine(src, at)
	line := trimRight(src[at:lineEnd])
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || !isMethod(line[:sp]) {
		return nil, "", 0, &script.SyntaxError{Off: at, Msg: fmt.Sprintf("not an HTTP request line: %q (want METHOD /path, as in GET /users/:id; header lines go under a request)", clip(line))}
	}
	rest := line[sp+1:]
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	targetAt := at + len(line) - len(rest)
	if i := bytes.IndexByte(rest, ' '); i >= 0 {
		tail := bytes.TrimLeft(rest[i:], " ")
		if !bytes.HasPrefix(tail, []byte("HTTP/")) {
			return nil, "", 0, &script.SyntaxError{Off: targetAt + i, Msg: "a space in the request's path: write it as %20"}
		}
		rest = rest[:i] // "GET /x HTTP/1.1" as copied from a trace: the version is firedrill's
	}
	if len(rest) == 0 || rest[0] != '/' {
		return nil, "", 0, &script.SyntaxError{Off: targetAt, Msg: fmt.Sprintf("the request's path %q must start with '/' (the target's url gives the scheme and host)", clip(rest))}
	}
	for i, c := range rest {
		if c < 0x21 || c == 0x7f {
			return nil, "", 0, &script.SyntaxError{Off: targetAt + i, Msg: fmt.Sprintf("a control byte 0x%02x in the request's path", c)}
		}
	}
	req := &Request{Method: string(line[:sp]), ID: -1}
	var err error
	if req.Target, err = parseTemplate(src, targetAt, targetAt+len(rest), syms); err != nil {
		return nil, "", 0, err
	}
	path := rest
	if q := bytes.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	req.Endpoint = req.Method + " " + string(path)
	text := maskQuery(string(line))
	if len(text) > maxTextLen {
		text = text[:maxTextLen]
	}

	i := next(src, lineEnd)
	// Header lines, directly under the request line.
	for i < len(src) {
		end := endOfLine(src, i)
		l := trimRight(src[i:end])
		switch {
		case len(bytes.TrimLeft(l, " \t")) == 0:
			return req, text, parseBody(src, i, req, syms), nil
		case l[0] == '\\' || l[0] == '#' || isRequestLine(l):
			return req, text, i, nil
		}
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 || !isToken(l[:colon]) {
			return nil, "", 0, &script.SyntaxError{Off: i, Msg: fmt.Sprintf("want a header line Name: value under the request, an empty line before its body, or a new request; got %q", clip(l))}
		}
		name := string(l[:colon])
		if forbiddenHeader(name) {
			return nil, "", 0, &script.SyntaxError{Off: i, Msg: fmt.Sprintf("header %s is firedrill's to send (it frames the request on the keep-alive connection)", name)}
		}
		v := colon + 1
		for v < len(l) && (l[v] == ' ' || l[v] == '\t') {
			v++
		}
		value, err := parseTemplate(src, i+v, i+len(l), syms)
		if err != nil {
			return nil, "", 0, err
		}
		req.Headers = append(req.Headers, Header{Name: name, Value: value})
		i = next(src, end)
	}
	return req, text, i, nil
}

// parseBody reads the body after the empty line at src[at], if one
// follows: the lines up to the next empty line, meta-command or the end.
// It returns the offset after the request.
func parseBody(src []byte, at int, req *Request, syms *script.Symbols) int {
	i := next(src, endOfLine(src, at))
	start, end := i, i
	for i < len(src) {
		e := endOfLine(src, i)
		l := trimRight(src[i:e])
		if len(bytes.TrimLeft(l, " \t")) == 0 || l[0] == '\\' || (start == i && (l[0] == '#' || isRequestLine(l))) {
			break
		}
		end = i + len(l)
		i = next(src, e)
	}
	if end == start {
		return start // an empty line and no body
	}
	// A body's text never fails as a template: an odd ':' is literal.
	req.Body, _ = parseTemplate(src, start, end, syms)
	req.Body = joinLines(req.Body)
	req.HasBody = true
	return i
}

// joinLines makes a body's line ends "\n" (a script written on Windows
// has "\r\n").
func joinLines(t Template) Template {
	for i := range t.Parts {
		if t.Parts[i].Var == script.NoVar {
			t.Parts[i].Text = strings.ReplaceAll(t.Parts[i].Text, "\r\n", "\n")
		}
	}
	return t
}

// parseTemplate reads src[at:end] as text with :variables. A ':' is a
// variable's when a name (a letter or '_', then letters, digits, '_')
// follows and it does not directly follow a name's character (so
// "12:30" and "a:b" are text); "\:" is a literal ':'.
func parseTemplate(src []byte, at, end int, syms *script.Symbols) (Template, error) {
	var t Template
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			t.Parts = append(t.Parts, Part{Text: string(lit), Var: script.NoVar})
			lit = lit[:0]
		}
	}
	for i := at; i < end; {
		c := src[i]
		switch {
		case c == '\\' && i+1 < end && src[i+1] == ':':
			lit = append(lit, ':')
			i += 2
		case c == ':' && (i == at || !isNameChar(src[i-1])) && i+1 < end && isNameStart(src[i+1]):
			j := i + 2
			for j < end && isNameChar(src[j]) {
				j++
			}
			flush()
			t.Parts = append(t.Parts, Part{Text: string(src[i:j]), Var: syms.Ref(string(src[i+1 : j]))})
			i = j
		default:
			lit = append(lit, c)
			i++
		}
	}
	flush()
	return t, nil
}

// Meta parses the meta-commands the dialect owns: \check and \gset after
// a request, and refuses pipelines (requests are never pipelined).
func (*Syntax) Meta(name string, src []byte, at, end int, prev *script.Command, syms *script.Symbols) (bool, error) {
	switch name {
	case "check", "gset":
	case "startpipeline", "syncpipeline", "endpipeline":
		return true, &script.SyntaxError{Off: at - len(name) - 1, Msg: fmt.Sprintf("\\%s: HTTP requests are not pipelined (each waits for its reply on its keep-alive connection)", name)}
	case "aset":
		return true, &script.SyntaxError{Off: at - len(name) - 1, Msg: "\\aset has no meaning in an HTTP script: use \\gset name = $.json.path"}
	default:
		return false, nil
	}
	start := at - len(name) - 1
	var req *Request
	if prev != nil && prev.Kind == script.KindCustom {
		req, _ = prev.Custom.(*Request)
	}
	if req == nil {
		return true, &script.SyntaxError{Off: start, Msg: fmt.Sprintf("\\%s must follow an HTTP request", name)}
	}
	args := args{src: src, i: at, end: end}
	if name == "check" {
		c, err := parseCheck(&args, syms)
		if err != nil {
			return true, err
		}
		c.Text = strings.TrimSpace(string(src[at:end]))
		c.Line = lineOf(src, start)
		req.Checks = append(req.Checks, c)
		if c.What == CheckStatus {
			req.StatusChecked = true
		}
		return true, nil
	}
	g, err := parseGset(&args, syms)
	if err != nil {
		return true, err
	}
	req.Gsets = append(req.Gsets, g)
	return true, nil
}

// lineOf is the 1-based line of offset off.
func lineOf(src []byte, off int) int { return bytes.Count(src[:off], []byte("\n")) + 1 }

func endOfLine(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src)
}

// next is the offset after the newline at end (or the end).
func next(src []byte, end int) int { return min(end+1, len(src)) }

func trimRight(l []byte) []byte { return bytes.TrimRight(l, " \t\r\f\v") }

// isRequestLine says whether a line starts a request: METHOD and a path.
func isRequestLine(l []byte) bool {
	sp := bytes.IndexByte(l, ' ')
	return sp > 0 && isMethod(l[:sp]) && bytes.HasPrefix(bytes.TrimLeft(l[sp:], " "), []byte("/"))
}

// isMethod: capital letters, as every registered HTTP method is written.
func isMethod(w []byte) bool {
	if len(w) == 0 || len(w) > 20 {
		return false
	}
	for _, c := range w {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// isToken: RFC 9110's token characters, which a header name is made of.
func isToken(w []byte) bool {
	for _, c := range w {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return len(w) > 0
}

// forbiddenHeader names the headers that frame the request: a script's
// own would desynchronise the keep-alive connection.
func forbiddenHeader(name string) bool {
	return strings.EqualFold(name, "Content-Length") || strings.EqualFold(name, "Transfer-Encoding") || strings.EqualFold(name, "Host") || strings.EqualFold(name, "Connection")
}

func isNameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func isNameChar(c byte) bool { return isNameStart(c) || '0' <= c && c <= '9' }

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// Mask replaces a secret in a command's Text (the mask the rest of
// firedrill writes).
const Mask = "xxxxx"

// maskQuery masks the literal values of a request line's secret query
// parameters (SecretParam), so that reports show the endpoint but not
// the token.
func maskQuery(line string) string {
	head, query, ok := strings.Cut(line, "?")
	if !ok {
		return line
	}
	query, tail, _ := strings.Cut(query, " ")
	params := strings.Split(query, "&")
	for i, kv := range params {
		if k, v, ok := strings.Cut(kv, "="); ok && SecretParam(k) && v != "" && !strings.HasPrefix(v, ":") {
			params[i] = k + "=" + Mask
		}
	}
	out := head + "?" + strings.Join(params, "&")
	if tail != "" {
		out += " " + tail
	}
	return out
}

// SecretParam says whether a query parameter's name says it carries a
// secret (token=, api_key=, access_token=, sig= …).
func SecretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "key", "secret", "password", "passwd", "auth", "signature", "sig", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// SecretHeader says whether a header's value is a secret wherever it is
// written (Authorization, Cookie, *token*, *api-key* …).
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "authorization" || n == "proxy-authorization" || n == "cookie" || strings.Contains(n, "token") ||
		strings.Contains(n, "api-key") || strings.Contains(n, "apikey") || strings.Contains(n, "secret")
}
