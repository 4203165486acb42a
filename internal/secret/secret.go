// Package secret keeps passwords out of everything firedrill prints or
// writes: the run directory, reports, JSON, logs and error messages.
//
// One function does the work, [Redactor.Redact]: it masks every password
// a connection string can carry, wherever such a string sits in a text —
// the userinfo of a URL of any scheme (postgres://, mysql://, redis://
// alike: the syntactic pass knows no kind), password= and sslpassword=
// query parameters (also with a percent-encoded key), and key/value conninfo
// with or without spaces around '=' and with quoted or backslash-escaped
// values (any key ending in "password", so PGPASSWORD=… too) — and then
// every password it has learned as a literal string: those written in
// the connection strings it was given, PGPASSWORD/PGSSLPASSWORD from the
// environment, and the one a backend's driver would send from outside the
// string (a passfile, a service file: Resolve). The syntactic pass needs
// no knowledge, so text of unknown origin (an old run directory, an
// error) is safe too; the literal pass catches a known password in a
// shape no syntax reveals.
//
// It is a leaf package (the standard library only) so that the run
// directory format (timeline), the runner and the command line all use
// the same redaction, without a database driver below them.
package secret

import (
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a password (the mask pgx uses in its own errors).
const Mask = "xxxxx"

// MinLiteral is the shortest learned password that is also masked as a
// plain substring of free text: masking every "ab" of a text would make
// it unreadable, and a password that short still is masked wherever a
// connection string's syntax shows it.
const MinLiteral = 4

// Redactor masks passwords in text. Its zero value and a nil *Redactor
// mask by syntax only; Learn teaches it the literal passwords of
// connection strings. It is safe for concurrent use.
type Redactor struct {
	mu       sync.RWMutex
	literals []string // longest first, so a password containing another is masked whole
	conns    []string // the connection strings learned, for resolvers added later
	// resolvers find the password a database's driver would send for a
	// connection string (Resolve).
	resolvers []func(connString string) string
}

// New returns a Redactor that knows the passwords of connStrings (see
// Learn) and those in the environment (PGPASSWORD, PGSSLPASSWORD). A
// backend adds what its driver would find (a passfile's) with Resolve.
func New(connStrings ...string) *Redactor {
	r := &Redactor{}
	r.LearnSecret(os.Getenv("PGPASSWORD"))
	r.LearnSecret(os.Getenv("PGSSLPASSWORD"))
	for _, cs := range connStrings {
		r.Learn(cs)
	}
	return r
}

// Resolve adds a database driver's way of finding the password it would
// send for a connection string (from the string, a passfile, a service
// file or its environment; "" is the default connection). It applies to
// the default connection, to every connection string learned so far and
// to those learned later.
func (r *Redactor) Resolve(password func(connString string) string) {
	if r == nil || password == nil {
		return
	}
	r.mu.Lock()
	r.resolvers = append(r.resolvers, password)
	conns := slices.Clone(r.conns)
	r.mu.Unlock()
	r.LearnSecret(password(""))
	for _, cs := range conns {
		r.LearnSecret(password(cs))
	}
}

// Learn records the passwords of a connection string (URL or key/value):
// those written in it, and the ones the resolvers find for it (Resolve).
// Learning from a string that is not a connection string is harmless.
func (r *Redactor) Learn(connString string) {
	if r == nil || connString == "" {
		return
	}
	for _, v := range scan(connString, true) {
		for _, s := range v.decoded(connString) {
			r.LearnSecret(s)
		}
	}
	r.mu.Lock()
	r.conns = append(r.conns, connString)
	resolvers := slices.Clone(r.resolvers)
	r.mu.Unlock()
	for _, password := range resolvers {
		r.LearnSecret(password(connString))
	}
}

// LearnSecret records one password to mask wherever it appears, also in
// its percent-encoded forms.
func (r *Redactor) LearnSecret(s string) {
	if r == nil || s == "" || s == Mask {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, form := range []string{s, url.PathEscape(s), url.QueryEscape(s), url.UserPassword("", s).String()[1:]} {
		if !slices.Contains(r.literals, form) {
			r.literals = append(r.literals, form)
		}
	}
	slices.SortFunc(r.literals, func(a, b string) int { return len(b) - len(a) })
}

// Redact returns text with every password masked: by the syntax of
// connection strings first, then every learned password of at least
// MinLiteral bytes as a plain substring. A URL ends at whitespace (error
// messages put text after it); Args treats a whole argument as one.
func (r *Redactor) Redact(text string) string {
	return r.redact(text, false)
}

// Redact masks passwords by syntax only (see Redactor.Redact): for text
// of unknown origin, such as an old run directory.
func Redact(text string) string { return (*Redactor)(nil).Redact(text) }

func (r *Redactor) redact(text string, whole bool) string {
	if spans := scan(text, whole); len(spans) > 0 {
		var b strings.Builder
		last := 0
		for _, sp := range spans {
			b.WriteString(text[last:sp.start])
			b.WriteString(Mask)
			last = sp.end
		}
		b.WriteString(text[last:])
		text = b.String()
	}
	if r == nil {
		return text
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, lit := range r.literals {
		if len(lit) >= MinLiteral {
			text = strings.ReplaceAll(text, lit, Mask)
		}
	}
	return text
}

// Args returns a copy of a command line with every password masked: each
// argument is redacted as a whole (so a URL with a space in a query value
// is one URL), and an argument that is exactly a learned password, however
// short, is masked.
func (r *Redactor) Args(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.redact(a, true)
		if r.isLiteral(a) {
			out[i] = Mask
		}
	}
	return out
}

func (r *Redactor) isLiteral(s string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Contains(r.literals, s)
}

// Error returns err with a redacted message; errors.Is and errors.As still
// see the original chain. It returns nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

var _ error = (*redactedError)(nil)

// Writer returns a writer that redacts each Write before passing it on to
// w. Each Write is redacted on its own, so write whole messages (as
// fmt.Fprintf does); it reports len(p) written on success. Writes from
// several goroutines (progress lines, the log, live findings all go to
// stderr) reach w one at a time, whole.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r  *Redactor
	mu sync.Mutex // one Write at a time reaches w
	w  io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	s := w.r.Redact(string(p))
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
