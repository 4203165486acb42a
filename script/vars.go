package script

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Names of the variables pgbench defines for every client.
const (
	VarScale       = "scale"
	VarClientID    = "client_id"
	VarRandomSeed  = "random_seed"
	VarDefaultSeed = "default_seed"
)

// Symbols maps variable names to slots. One table is shared by all scripts
// of a run, because pgbench's variables belong to the client, not the script.
// Parsing resolves every name it sees; \gset columns are resolved while
// clients run, so the table is safe for concurrent use.
type Symbols struct {
	mu    sync.RWMutex
	index map[string]VarRef
	names []string
}

// NewSymbols returns a table holding pgbench's automatic variables.
func NewSymbols() *Symbols {
	s := &Symbols{index: make(map[string]VarRef)}
	for _, n := range []string{VarScale, VarClientID, VarRandomSeed, VarDefaultSeed} {
		s.Ref(n)
	}
	return s
}

// Ref returns the slot of name, adding it if it is new.
func (s *Symbols) Ref(name string) VarRef {
	if r, ok := s.Lookup(name); ok {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.index[name]; ok {
		return r
	}
	r := VarRef(len(s.names))
	s.index[name] = r
	s.names = append(s.names, name)
	return r
}

// Lookup returns the slot of name if it is known.
func (s *Symbols) Lookup(name string) (VarRef, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.index[name]
	return r, ok
}

// Name returns the name of a slot.
func (s *Symbols) Name(r VarRef) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r < 0 || int(r) >= len(s.names) {
		return fmt.Sprintf("var#%d", r)
	}
	return s.names[r]
}

// Len is the number of slots.
func (s *Symbols) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.names)
}

// variable is one client variable: a string form, a typed form, or both,
// converted lazily in either direction as pgbench does.
type variable struct {
	str    string
	val    Value
	hasStr bool
	hasVal bool
}

// Vars holds one client's variables. It is not safe for concurrent use:
// each client owns its own.
type Vars struct {
	syms *Symbols
	vars []variable
	num  []byte // scratch for number formatting
}

// NewVars returns an empty variable set for the scripts sharing syms.
// Variables referenced by scripts parsed later grow the set on demand.
func NewVars(syms *Symbols) *Vars {
	return &Vars{syms: syms, vars: make([]variable, syms.Len())}
}

// Symbols returns the table the set was made for.
func (v *Vars) Symbols() *Symbols { return v.syms }

func (v *Vars) slot(r VarRef) *variable {
	if int(r) >= len(v.vars) {
		grown := make([]variable, v.syms.Len())
		copy(grown, v.vars)
		v.vars = grown
	}
	return &v.vars[r]
}

// IsSet reports whether the variable has a value.
func (v *Vars) IsSet(r VarRef) bool {
	if int(r) >= len(v.vars) || r < 0 {
		return false
	}
	x := &v.vars[r]
	return x.hasStr || x.hasVal
}

// SetString sets a variable from text (-D, \gset, \setshell); it is
// converted to a number, boolean or NULL only when an expression reads it.
func (v *Vars) SetString(r VarRef, s string) {
	*v.slot(r) = variable{str: s, hasStr: true}
}

// SetValue sets a variable to a computed value (\set).
func (v *Vars) SetValue(r VarRef, val Value) {
	*v.slot(r) = variable{val: val, hasVal: true}
}

// SetInt sets a variable to an integer.
func (v *Vars) SetInt(r VarRef, i int64) { v.SetValue(r, Value{Type: TypeInt, Int: i}) }

// Value returns the variable's typed value, parsing its text form the way
// pgbench does: "null", boolean words and prefixes, an int64, else a double.
func (v *Vars) Value(r VarRef) (Value, error) {
	if !v.IsSet(r) {
		return Value{}, fmt.Errorf("undefined variable %q", v.syms.Name(r))
	}
	x := &v.vars[r]
	if x.hasVal {
		return x.val, nil
	}
	val, err := parseVariableText(x.str)
	if err != nil {
		return Value{}, fmt.Errorf("malformed variable %q value: %q", v.syms.Name(r), x.str)
	}
	x.val, x.hasVal = val, true
	return val, nil
}

// AppendText appends the variable's text form (what is substituted into
// SQL) to buf, without allocating. ok is false if the variable is unset.
func (v *Vars) AppendText(buf []byte, r VarRef) (out []byte, ok bool) {
	if !v.IsSet(r) {
		return buf, false
	}
	x := &v.vars[r]
	if x.hasStr {
		return append(buf, x.str...), true
	}
	return x.val.AppendText(buf), true
}

// Text returns the variable's text form; ok is false if it is unset.
func (v *Vars) Text(r VarRef) (string, bool) {
	if !v.IsSet(r) {
		return "", false
	}
	x := &v.vars[r]
	if x.hasStr {
		return x.str, true
	}
	v.num = x.val.AppendText(v.num[:0])
	return string(v.num), true
}

// AppendText appends the value's text form as pgbench prints it: NULL,
// true/false, a decimal integer, or a double with 15 significant digits.
func (val Value) AppendText(buf []byte) []byte {
	switch val.Type {
	case TypeInt:
		return strconv.AppendInt(buf, val.Int, 10)
	case TypeDouble:
		return appendCDouble(buf, val.Dbl)
	case TypeBool:
		if val.Int != 0 {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	default:
		return append(buf, "NULL"...)
	}
}

// appendCDouble formats like pgbench's printf("%.15g"), with PostgreSQL's
// snprintf spelling of the special values (NaN, Infinity, -Infinity).
func appendCDouble(buf []byte, f float64) []byte {
	switch {
	case f != f:
		return append(buf, "NaN"...)
	case f > 1.7976931348623157e308:
		return append(buf, "Infinity"...)
	case f < -1.7976931348623157e308:
		return append(buf, "-Infinity"...)
	}
	return strconv.AppendFloat(buf, f, 'g', 15, 64)
}

// parseVariableText converts a variable's text to a typed value following
// pgbench's makeVariableValue.
func parseVariableText(s string) (Value, error) {
	n := len(s)
	if n == 0 {
		return Value{}, fmt.Errorf("empty value")
	}
	isPrefixOf := func(word string) bool { return n <= len(word) && strings.EqualFold(s, word[:n]) }
	switch {
	case strings.EqualFold(s, "null"):
		return Value{Type: TypeNull}, nil
	case isPrefixOf("true") || isPrefixOf("yes") || strings.EqualFold(s, "on"):
		return Value{Type: TypeBool, Int: 1}, nil
	case isPrefixOf("false") || isPrefixOf("no") || strings.EqualFold(s, "off") || strings.EqualFold(s, "of"):
		return Value{Type: TypeBool}, nil
	case looksLikeInt(s):
		i, err := strconv.ParseInt(strings.TrimLeft(s, " \t\n\r\f\v"), 10, 64)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: TypeInt, Int: i}, nil
	default:
		f, ok := parseCDouble(s)
		if !ok {
			return Value{}, fmt.Errorf("not a number")
		}
		return Value{Type: TypeDouble, Dbl: f}, nil
	}
}

// looksLikeInt mirrors pgbench's is_an_int: optional leading spaces, an
// optional sign, digits, nothing after. Like is_an_int it also accepts a
// string with no digits at all ("", "-"), which then fails to convert.
func looksLikeInt(s string) bool {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i == len(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
