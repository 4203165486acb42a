package clikit

import "os"

// IsTerminal reports whether f is a terminal (a character device), the
// only place where ANSI colour codes are read rather than stored.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
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
// colour (UseColor on Stdout).
func (env *Env) Color() bool { return UseColor(env.Getenv, env.StdoutTerminal) }

// ANSI colours for Paint.
const (
	Red    = "31"
	Green  = "32"
	Yellow = "33"
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
