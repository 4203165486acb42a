package secret

import (
	"net/url"
	"strings"
)

// span is where a password's value sits in a text, and how it is written.
type span struct {
	start, end int
	form       valueForm
}

type valueForm int

const (
	urlUserinfo  valueForm = iota // percent-encoded, in scheme://user:PASSWORD@host
	urlQuery                      // percent-encoded, in ?password=PASSWORD&…
	kvPlain                       // key/value, backslash escapes: password=PASSWORD
	kvQuoted                      // key/value in single quotes: password='PASS WORD'
	doubleQuoted                  // not libpq's syntax, but written by people: PGPASSWORD="…"
)

// decoded returns the value as written and as a connection would use it.
func (sp span) decoded(text string) []string {
	raw := text[sp.start:sp.end]
	out := []string{raw}
	add := func(s string, err error) {
		if err == nil && s != raw {
			out = append(out, s)
		}
	}
	switch sp.form {
	case urlUserinfo:
		add(url.PathUnescape(raw))
	case urlQuery:
		add(url.QueryUnescape(raw))
	case kvPlain:
		add(unescapeBackslashes(raw), nil)
	case kvQuoted:
		add(unquote(raw, '\''), nil)
	case doubleQuoted:
		add(unquote(raw, '"'), nil)
		// libpq reads a double quote as part of a plain value.
		add(unescapeBackslashes(text[sp.start:skipToSpace(text, sp.start)]), nil)
	}
	return out
}

// unquote reads a value in quotes q with backslash escapes, as libpq
// does, up to the closing quote (or the end).
func unquote(s string, q byte) string {
	s = strings.TrimPrefix(s, string(q))
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
		case s[i] == q:
			return b.String()
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unescapeBackslashes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// scan finds the password values of every connection string in text, in
// order and without overlap. With whole, a URL runs to the end of the
// text (a command-line argument); otherwise it ends at whitespace.
func scan(text string, whole bool) []span {
	var spans []span
	for i := 0; i < len(text); {
		if n := schemeLen(text, i); n > 0 {
			end := len(text)
			if !whole {
				if k := strings.IndexAny(text[i+n:], spaces); k >= 0 {
					end = i + n + k
				}
			}
			spans = append(spans, scanURL(text, i+n, end)...)
			i = end
			continue
		}
		if !isWord(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isWord(text[j]) {
			j++
		}
		if isPasswordKey(text[i:j]) {
			if sp, next, ok := scanKeyValue(text, j); ok {
				if sp.end > sp.start {
					spans = append(spans, sp)
				}
				i = next
				continue
			}
		}
		i = j
	}
	return spans
}

const spaces = " \t\n\r\v\f"

func isSpace(c byte) bool { return strings.IndexByte(spaces, c) >= 0 }

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isPasswordKey says whether a key names a password: password,
// sslpassword, PGPASSWORD, db_passwd …
func isPasswordKey(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, "password") || strings.HasSuffix(k, "passwd")
}

// schemeLen is the length of a URL's scheme with its "://" at text[i:]
// (RFC 3986: a letter, then letters, digits, '+', '-' and '.'), or 0.
// Every kind's URLs carry a password in the same places, so no scheme
// is special: a text of unknown origin is masked without knowing which
// kinds firedrill has. A scheme is read from its start only, which keeps
// the scan linear.
func schemeLen(text string, i int) int {
	if !isLetter(text[i]) || i > 0 && isSchemeChar(text[i-1]) {
		return 0
	}
	j := i + 1
	for j < len(text) && isSchemeChar(text[j]) {
		j++
	}
	if !strings.HasPrefix(text[j:], "://") {
		return 0
	}
	return j + len("://") - i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// scanURL finds the password in a URL's userinfo and its password query
// parameters; the URL, after its scheme, is text[start:end].
func scanURL(text string, start, end int) []span {
	u := text[start:end]
	authEnd := strings.IndexAny(u, "/?#")
	if authEnd < 0 {
		authEnd = len(u)
	}
	auth := u[:authEnd]
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		// A '/' in an unencoded password ends the authority early
		// (scheme://u:pa/ss@host): take an '@' before the query.
		q := strings.IndexAny(u, "?#")
		if q < 0 {
			q = len(u)
		}
		at = strings.LastIndexByte(u[:q], '@')
	}
	if at < 0 && !validHostPorts(auth) {
		// So does a '?' or '#' (scheme://u:p?ss@host): the authority
		// then has no valid port, and the password runs to the last '@'.
		at = strings.LastIndexByte(u, '@')
	}
	var spans []span
	queryFrom := 0
	if at >= 0 {
		if c := strings.IndexByte(u[:at], ':'); c >= 0 {
			spans = append(spans, span{start + c + 1, start + at, urlUserinfo})
		}
		queryFrom = at + 1
	}
	rest := u[queryFrom:]
	for k := 0; k < len(rest); k++ {
		if rest[k] != '?' && rest[k] != '&' {
			continue
		}
		e := k + 1
		for e < len(rest) && rest[e] != '=' && rest[e] != '&' && rest[e] != '?' {
			e++
		}
		if e == len(rest) {
			break
		}
		if rest[e] != '=' {
			k = e - 1 // each byte is read once: the scan stays linear
			continue
		}
		key, err := url.QueryUnescape(rest[k+1 : e])
		if err != nil {
			key = rest[k+1 : e]
		}
		if !isPasswordKey(key) {
			continue
		}
		v := e + 1
		ve := v
		for ve < len(rest) && rest[ve] != '&' {
			ve++
		}
		if ve > v {
			spans = append(spans, span{start + queryFrom + v, start + queryFrom + ve, urlQuery})
		}
		k = ve - 1
	}
	return spans
}

// validHostPorts says whether a URL authority without userinfo reads as
// hosts with numeric ports: h, h:5432, [::1]:5432, h1:5432,h2.
func validHostPorts(auth string) bool {
	for _, hp := range strings.Split(auth, ",") {
		if strings.HasPrefix(hp, "[") {
			if i := strings.IndexByte(hp, ']'); i >= 0 {
				hp = hp[i+1:]
			}
		}
		if c := strings.LastIndexByte(hp, ':'); c >= 0 {
			for _, d := range hp[c+1:] {
				if d < '0' || d > '9' {
					return false
				}
			}
		}
	}
	return true
}

// scanKeyValue reads "= value" after a password key that ends at
// text[j], as libpq reads conninfo: spaces around '=', a value in single
// quotes with backslash escapes, or up to whitespace with backslash
// escapes. ok is false when no '=' follows the key.
func scanKeyValue(text string, j int) (sp span, next int, ok bool) {
	k := j
	for k < len(text) && isSpace(text[k]) {
		k++
	}
	if k == len(text) || text[k] != '=' {
		return span{}, 0, false
	}
	v := k + 1
	for v < len(text) && isSpace(text[v]) {
		v++
	}
	e := v
	form := kvPlain
	switch {
	case v == len(text):
	case text[v] == '\'' || text[v] == '"':
		q := text[v]
		form = kvQuoted
		if q == '"' {
			form = doubleQuoted
		}
		for e = v + 1; e < len(text); e++ {
			if text[e] == '\\' {
				e++
				continue
			}
			if text[e] == q {
				e++
				break
			}
		}
		// What sticks to the closing quote is still the value to a
		// reader that does not know quotes (libpq rejects it).
		e = skipToSpace(text, e)
	default:
		e = skipToSpace(text, v)
	}
	e = min(e, len(text))
	return span{v, e, form}, e, true
}

// skipToSpace returns the index of the first whitespace at or after i,
// stepping over backslash escapes.
func skipToSpace(text string, i int) int {
	for ; i < len(text) && !isSpace(text[i]); i++ {
		if text[i] == '\\' {
			i++
		}
	}
	return min(i, len(text))
}
