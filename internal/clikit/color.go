package clikit

import (
	"bytes"
	"io"
	"sync"
)

// Colors paints text for a terminal with ANSI colours, or leaves it plain:
// the one place where firedrill decides whether its output is coloured.
// The zero value paints nothing.
type Colors struct{ on bool }

// ANSI SGR sequences of the few colours firedrill uses.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
	sgrDim    = "\x1b[2m"
)

// ColorsFor decides colour for output to a stream: on only when the
// stream is a terminal, the environment has no NO_COLOR (no-color.org:
// any non-empty value turns colour off), TERM is not "dumb", and the user
// did not give --no-color.
func ColorsFor(isTerminal bool, getenv func(string) string, noColor bool) Colors {
	if noColor || !isTerminal {
		return Colors{}
	}
	if getenv != nil && (getenv("NO_COLOR") != "" || getenv("TERM") == "dumb") {
		return Colors{}
	}
	return Colors{on: true}
}

// StdoutColors is the colour decision for env's standard output.
func (env *Env) StdoutColors() Colors {
	return ColorsFor(env.StdoutTerminal, env.Getenv, env.NoColor)
}

// StderrColors is the colour decision for env's standard error.
func (env *Env) StderrColors() Colors {
	return ColorsFor(env.StderrTerminal, env.Getenv, env.NoColor)
}

// Enabled says whether c paints.
func (c Colors) Enabled() bool { return c.on }

func (c Colors) paint(sgr, s string) string {
	if !c.on || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// Bad paints what failed or is critical (red, bold).
func (c Colors) Bad(s string) string { return c.paint(sgrBold+sgrRed, s) }

// Good paints what passed (green).
func (c Colors) Good(s string) string { return c.paint(sgrGreen, s) }

// Warn paints what deserves attention but did not fail (yellow).
func (c Colors) Warn(s string) string { return c.paint(sgrYellow, s) }

// Note paints what is informational (cyan).
func (c Colors) Note(s string) string { return c.paint(sgrCyan, s) }

// Faint paints what is skipped or secondary (dim).
func (c Colors) Faint(s string) string { return c.paint(sgrDim, s) }

// Strong paints a heading (bold).
func (c Colors) Strong(s string) string { return c.paint(sgrBold, s) }

// Severity paints text by a finding's severity ("critical", "warning",
// "info", in any case).
func (c Colors) Severity(severity, s string) string {
	switch string(bytes.ToLower([]byte(severity))) {
	case "critical":
		return c.Bad(s)
	case "warning":
		return c.Warn(s)
	case "info":
		return c.Note(s)
	}
	return s
}

// Verdict paints text by whether a check passed.
func (c Colors) Verdict(pass bool, s string) string {
	if pass {
		return c.Good(s)
	}
	return c.Bad(s)
}

// LineWriter hands each complete line written to w through paint before
// writing it, so that text laid out by a tabwriter or written by a
// package that knows nothing of colour is coloured after its layout (an
// escape sequence inside a tabwriter cell would skew the columns).
// colors is asked on every write, so a flag parsed after the writer was
// made (--no-color) still counts; while it paints nothing, writes pass
// straight through. A partial line waits for its end or FlushLines.
func LineWriter(w io.Writer, colors func() Colors, paint func(c Colors, line string) string) io.Writer {
	return &lineWriter{w: w, colors: colors, paint: paint}
}

type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	colors  func() Colors
	paint   func(Colors, string) string
	c       Colors // the decision of the current write
	pending []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.colors()
	if !c.on && len(l.pending) == 0 {
		return l.w.Write(p)
	}
	l.c = c
	l.pending = append(l.pending, p...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			break
		}
		out.WriteString(l.paint(l.c, string(l.pending[:i])))
		out.WriteByte('\n')
		l.pending = l.pending[i+1:]
	}
	if out.Len() > 0 {
		if _, err := l.w.Write(out.Bytes()); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes a last line that has no newline.
func (l *lineWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(l.w, l.paint(l.c, string(l.pending)))
	l.pending = nil
	return err
}

// FlushLines writes what a LineWriter holds of a line without a newline;
// it does nothing for any other writer.
func FlushLines(w io.Writer) error {
	if l, ok := w.(*lineWriter); ok {
		return l.Flush()
	}
	return nil
}
