package clikit

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// IsTerminal reports whether f is a terminal, the only place where ANSI
// colour codes are read rather than stored (isTerminal: the terminal
// ioctl on Linux, where /dev/null, a character device too, is not one).
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	return isTerminal(f)
}

// UseColor decides whether to colour output: only on a terminal, and
// never when NO_COLOR is set to anything (https://no-color.org) or TERM
// is "dumb".
func UseColor(getenv func(string) string, terminal bool) bool {
	if !terminal || getenv == nil {
		return false
	}
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// Color reports whether the command's standard output should carry
// colour: UseColor on Stdout, unless the user gave --no-color. It is the
// one colour decision every command and report asks.
func (env *Env) Color() bool {
	return !env.NoColor && UseColor(env.Getenv, env.StdoutTerminal)
}

// StderrColor is Color for standard error (progress and live findings).
func (env *Env) StderrColor() bool {
	return !env.NoColor && UseColor(env.Getenv, env.StderrTerminal)
}

// ANSI colours for Paint.
const (
	Red    = "31"
	Green  = "32"
	Yellow = "33"
	Cyan   = "36"
	Bold   = "1"
	Dim    = "2"
)

// Paint wraps s in an ANSI colour when on is true, and returns it as is
// otherwise.
func Paint(on bool, color, s string) string {
	if !on || s == "" {
		return s
	}
	return "\x1b[" + color + "m" + s + "\x1b[0m"
}

// LineWriter hands each complete line written to w through paint before
// writing it, so that text laid out by a tabwriter, or written by a
// package that knows nothing of colour, is coloured after its layout (an
// escape sequence inside a tabwriter cell would skew the columns). color
// is asked on every write, so a flag parsed after the writer was made
// (--no-color) still counts; while it says no, writes pass straight
// through. A partial line waits for its end or FlushLines.
func LineWriter(w io.Writer, color func() bool, paint func(line string) string) io.Writer {
	return &lineWriter{w: w, color: color, paint: paint}
}

type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	color   func() bool
	paint   func(string) string
	pending []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.color() && len(l.pending) == 0 {
		return l.w.Write(p)
	}
	l.pending = append(l.pending, p...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			break
		}
		line := string(l.pending[:i])
		if l.color() {
			line = l.paint(line)
		}
		out.WriteString(line)
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

// flush writes a last line that has no newline.
func (l *lineWriter) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	line := string(l.pending)
	if l.color() {
		line = l.paint(line)
	}
	l.pending = nil
	_, err := io.WriteString(l.w, line)
	return err
}

// FlushLines writes what a LineWriter holds of a line without a newline;
// it does nothing for any other writer.
func FlushLines(w io.Writer) error {
	if l, ok := w.(*lineWriter); ok {
		return l.flush()
	}
	return nil
}
