package script

import (
	"strings"
)

// The compiled forms of an expression. Each evaluates without allocating:
// values are small structs returned by value, and a call's arguments live
// in an array on the stack.

// constExpr is a literal.
type constExpr struct{ val Value }

// varExpr reads a client variable.
type varExpr struct {
	ref  VarRef
	name string
}

// unaryExpr is a one-argument function or operator (NOT, abs, sqrt …).
type unaryExpr struct {
	fn  funcID
	arg Expr
}

// binaryExpr is a two-argument function or operator.
type binaryExpr struct {
	fn          funcID
	left, right Expr
}

// callExpr is a function of any other arity.
type callExpr struct {
	fn   funcID
	args []Expr
}

// andExpr and orExpr evaluate their right side only when needed.
type andExpr struct{ left, right Expr }
type orExpr struct{ left, right Expr }

// caseExpr is CASE WHEN … THEN … [ELSE …] END; otherwise is a NULL
// constant when ELSE is absent.
type caseExpr struct {
	when, then []Expr
	otherwise  Expr
}

var (
	_ Expr = (*constExpr)(nil)
	_ Expr = (*varExpr)(nil)
	_ Expr = (*unaryExpr)(nil)
	_ Expr = (*binaryExpr)(nil)
	_ Expr = (*callExpr)(nil)
	_ Expr = (*andExpr)(nil)
	_ Expr = (*orExpr)(nil)
	_ Expr = (*caseExpr)(nil)
)

// Eval returns the literal.
func (e *constExpr) Eval(*Env) (Value, error) { return e.val, nil }

// Eval reads the variable, converting its text form on first use.
func (e *varExpr) Eval(env *Env) (Value, error) { return env.Vars.Value(e.ref) }

// Eval applies the function to its evaluated argument.
func (e *unaryExpr) Eval(env *Env) (Value, error) {
	var args [1]Value
	var err error
	if args[0], err = e.arg.Eval(env); err != nil {
		return Value{}, err
	}
	return applyFunc(env, e.fn, args[:])
}

// Eval applies the function to its evaluated arguments, left first.
func (e *binaryExpr) Eval(env *Env) (Value, error) {
	var args [2]Value
	var err error
	if args[0], err = e.left.Eval(env); err != nil {
		return Value{}, err
	}
	if args[1], err = e.right.Eval(env); err != nil {
		return Value{}, err
	}
	return applyFunc(env, e.fn, args[:])
}

// Eval applies the function to its evaluated arguments, in order.
func (e *callExpr) Eval(env *Env) (Value, error) {
	if len(e.args) > maxFuncArgs {
		return Value{}, errTooManyArgs
	}
	var args [maxFuncArgs]Value
	for i, a := range e.args {
		v, err := a.Eval(env)
		if err != nil {
			return Value{}, err
		}
		args[i] = v
	}
	return applyFunc(env, e.fn, args[:len(e.args)])
}

// Eval is pgbench's lazy AND: NULL on the left gives NULL, false gives
// false, and only otherwise is the right side evaluated.
func (e *andExpr) Eval(env *Env) (Value, error) {
	l, err := e.left.Eval(env)
	if err != nil || l.Type == TypeNull {
		return Value{}, err
	}
	lb, err := l.asBool()
	if err != nil {
		return Value{}, err
	}
	if !lb {
		return boolValue(false), nil
	}
	return evalBoolOperand(env, e.right)
}

// Eval is pgbench's lazy OR: NULL on the left gives NULL, true gives true,
// and only otherwise is the right side evaluated.
func (e *orExpr) Eval(env *Env) (Value, error) {
	l, err := e.left.Eval(env)
	if err != nil || l.Type == TypeNull {
		return Value{}, err
	}
	lb, err := l.asBool()
	if err != nil {
		return Value{}, err
	}
	if lb {
		return boolValue(true), nil
	}
	return evalBoolOperand(env, e.right)
}

// evalBoolOperand is the right side of AND/OR: NULL or a boolean.
func evalBoolOperand(env *Env, x Expr) (Value, error) {
	r, err := x.Eval(env)
	if err != nil || r.Type == TypeNull {
		return Value{}, err
	}
	rb, err := r.asBool()
	if err != nil {
		return Value{}, err
	}
	return boolValue(rb), nil
}

// Eval evaluates conditions in order, by truth value (so a non-zero
// number counts as true), and then only the chosen branch.
func (e *caseExpr) Eval(env *Env) (Value, error) {
	for i, cond := range e.when {
		c, err := cond.Eval(env)
		if err != nil {
			return Value{}, err
		}
		if t, err := c.Truth(); err != nil {
			return Value{}, err
		} else if t {
			return e.then[i].Eval(env)
		}
	}
	return e.otherwise.Eval(env)
}

// exprString renders a compiled expression fully parenthesised, in prefix
// form, so tests can check how it was parsed: (+ 1 (* 2 3)).
func exprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *constExpr:
		switch e.val.Type {
		case TypeDouble:
			b.WriteString("d:")
		case TypeInt:
			b.WriteString("i:")
		}
		b.Write(e.val.AppendText(nil))
	case *varExpr:
		b.WriteString(":" + e.name)
	case *unaryExpr:
		writeCall(b, e.fn.String(), e.arg)
	case *binaryExpr:
		writeCall(b, e.fn.String(), e.left, e.right)
	case *callExpr:
		writeCall(b, e.fn.String(), e.args...)
	case *andExpr:
		writeCall(b, "and", e.left, e.right)
	case *orExpr:
		writeCall(b, "or", e.left, e.right)
	case *caseExpr:
		b.WriteString("(case")
		for i := range e.when {
			b.WriteString(" ")
			writeExpr(b, e.when[i])
			b.WriteString(" ")
			writeExpr(b, e.then[i])
		}
		b.WriteString(" else ")
		writeExpr(b, e.otherwise)
		b.WriteString(")")
	default:
		b.WriteString("?")
	}
}

func writeCall(b *strings.Builder, name string, args ...Expr) {
	b.WriteString("(" + name)
	for _, a := range args {
		b.WriteString(" ")
		writeExpr(b, a)
	}
	b.WriteString(")")
}
