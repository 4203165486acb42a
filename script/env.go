package script

import (
	"io"
	"os"
	"strconv"
)

// Env is what evaluating an expression needs from one client: its
// variables, its random generator, and where debug() writes. An Env is
// owned by one client and not safe for concurrent use.
type Env struct {
	Vars *Vars
	Rand *Rand
	// Debug is where debug() prints, in pgbench's format
	// "debug(script=0,command=1): int 42"; nil means os.Stderr.
	Debug io.Writer
	// Script and Command are the 0-based indexes of the script and the
	// command being run; debug() prints Command+1, as pgbench does. The
	// engine keeps them current.
	Script, Command int

	buf []byte // debug()'s line, reused so that printing allocates nothing
}

// debug prints a value as pgbench's debug() does. A failed write is not an
// evaluation error (pgbench ignores fprintf's result too).
func (env *Env) debug(v Value) {
	b := append(env.buf[:0], "debug(script="...)
	b = strconv.AppendInt(b, int64(env.Script), 10)
	b = append(b, ",command="...)
	b = strconv.AppendInt(b, int64(env.Command)+1, 10)
	b = append(b, "): "...)
	switch v.Type {
	case TypeNull:
		b = append(b, "null"...)
	case TypeBool:
		b = append(b, "boolean "...)
		b = v.AppendText(b)
	case TypeInt:
		b = append(b, "int "...)
		b = v.AppendText(b)
	case TypeDouble:
		b = append(b, "double "...)
		b = v.AppendText(b)
	}
	b = append(b, '\n')
	env.buf = b
	w := env.Debug
	if w == nil {
		w = os.Stderr
	}
	_, _ = w.Write(b)
}
