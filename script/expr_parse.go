package script

import (
	"errors"
	"fmt"
	"math"
)

// Operator precedence, lowest to highest, as exprparse.y declares it.
const (
	precOr    = 1 // OR (left)
	precAnd   = 2 // AND (left)
	precNot   = 3 // NOT (prefix, right)
	precIs    = 4 // IS [NOT] NULL|TRUE|FALSE, ISNULL, NOTNULL (postfix)
	precCmp   = 5 // = <> != < <= > >= (non-associative)
	precBit   = 6 // | # & << >> and prefix ~ (left)
	precAdd   = 7 // + - (left)
	precMul   = 8 // * / % (left)
	precUnary = 9 // prefix + and -
)

// maxExprNesting bounds recursion so that a pathological expression is an
// error rather than a crash.
const maxExprNesting = 5000

type exprAssoc uint8

const (
	assocNone exprAssoc = iota // not an infix or postfix operator
	assocLeft
	assocNonassoc
	assocPostfix
)

func infixPrec(k exprTokenKind) (int, exprAssoc) {
	switch k {
	case tokOr:
		return precOr, assocLeft
	case tokAnd:
		return precAnd, assocLeft
	case tokIs, tokIsNull, tokNotNull:
		return precIs, assocPostfix
	case tokEq, tokNe, tokLt, tokLe, tokGt, tokGe:
		return precCmp, assocNonassoc
	case tokBitOr, tokHash, tokBitAnd, tokShiftLeft, tokShiftRight:
		return precBit, assocLeft
	case tokPlus, tokMinus:
		return precAdd, assocLeft
	case tokStar, tokSlash, tokPercent:
		return precMul, assocLeft
	}
	return 0, assocNone
}

// binaryFuncs maps an infix operator to the function it applies.
var binaryFuncs = map[exprTokenKind]funcID{
	tokPlus: fnAdd, tokMinus: fnSub, tokStar: fnMul, tokSlash: fnDiv, tokPercent: fnMod,
	tokEq: fnEq, tokNe: fnNe, tokLt: fnLt, tokLe: fnLe,
	tokBitOr: fnBitOr, tokBitAnd: fnBitAnd, tokHash: fnBitXor,
	tokShiftLeft: fnShiftLeft, tokShiftRight: fnShiftRight,
}

// ParseExpr compiles a \set / \if expression. at is the position of src's
// first byte, so errors name file:line:col of the offending token; errors
// are *Error. Variables are resolved to slots of syms. The grammar,
// precedence and literals are pgbench's (exprparse.y, exprscan.l); a
// backslash-newline continues the expression on the next line, and a bare
// newline ends it.
func ParseExpr(src string, at Pos, syms *Symbols) (Expr, error) {
	p := &exprParser{lex: exprLexer{src: src}, src: src, at: at, syms: syms}
	if err := p.advance(); err != nil {
		return nil, err
	}
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.syntaxError(p.tok)
	}
	for off := p.tok.off; off < len(src); off++ {
		if c := src[off]; !isSpace(c) {
			return nil, p.errorAt(off, "expression continues after the end of the line; end the line with \\ to continue it")
		}
	}
	return e, nil
}

type exprParser struct {
	lex   exprLexer
	src   string
	at    Pos
	syms  *Symbols
	tok   exprToken
	depth int
}

// posAt converts a byte offset in the source to a file position.
func (p *exprParser) posAt(off int) Pos {
	pos := p.at
	for i := 0; i < off && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			pos.Line++
			pos.Col = 1
		} else {
			pos.Col++
		}
	}
	return pos
}

func (p *exprParser) errorAt(off int, msg string) *Error {
	return &Error{Pos: p.posAt(off), Msg: msg}
}

func (p *exprParser) syntaxError(t exprToken) *Error {
	what := t.describe()
	if t.kind == tokEOF && t.off < len(p.src) {
		what = "end of line (end the line with \\ to continue the expression)"
	}
	return p.errorAt(t.off, "syntax error at "+what)
}

// advance reads the next token into p.tok.
func (p *exprParser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		var le *exprLexError
		if errors.As(err, &le) {
			return p.errorAt(le.off, le.msg)
		}
		return p.errorAt(p.lex.off, err.Error())
	}
	p.tok = t
	return nil
}

// expect consumes a token of kind k or reports a syntax error.
func (p *exprParser) expect(k exprTokenKind) error {
	if p.tok.kind != k {
		return p.syntaxError(p.tok)
	}
	return p.advance()
}

// expr parses operators binding at least as tightly as minPrec, by
// precedence climbing. A prefix operator takes its operand by its own
// precedence whatever the context, as yacc resolves it: a * NOT b + c is
// a * (NOT (b + c)).
func (p *exprParser) expr(minPrec int) (Expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprNesting {
		return nil, p.errorAt(p.tok.off, fmt.Sprintf("expression nested more than %d deep", maxExprNesting))
	}
	left, err := p.prefix()
	if err != nil {
		return nil, err
	}
	lastNonassoc := 0 // precedence of a non-associative operator just applied
	for {
		op := p.tok
		prec, as := infixPrec(op.kind)
		if as == assocNone || prec < minPrec {
			return left, nil
		}
		if as == assocPostfix {
			if left, err = p.postfix(left); err != nil {
				return nil, err
			}
			lastNonassoc = 0
			continue
		}
		if as == assocNonassoc && lastNonassoc == prec {
			return nil, p.syntaxError(op) // a < b < c
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.expr(prec + 1)
		if err != nil {
			return nil, err
		}
		left = makeBinary(op.kind, left, right)
		lastNonassoc = 0
		if as == assocNonassoc {
			lastNonassoc = prec
		}
	}
}

func makeBinary(k exprTokenKind, left, right Expr) Expr {
	switch k {
	case tokAnd:
		return &andExpr{left, right}
	case tokOr:
		return &orExpr{left, right}
	case tokGt: // a > b is b < a, evaluated right side first as in pgbench
		return &binaryExpr{fnLt, right, left}
	case tokGe:
		return &binaryExpr{fnLe, right, left}
	}
	return &binaryExpr{binaryFuncs[k], left, right}
}

var nullConst = &constExpr{Value{Type: TypeNull}}

// postfix parses IS [NOT] NULL|TRUE|FALSE, ISNULL and NOTNULL after left.
func (p *exprParser) postfix(left Expr) (Expr, error) {
	op := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	switch op.kind {
	case tokIsNull:
		return &binaryExpr{fnIs, left, nullConst}, nil
	case tokNotNull:
		return &unaryExpr{fnNot, &binaryExpr{fnIs, left, nullConst}}, nil
	}
	negate := false
	if p.tok.kind == tokNot {
		negate = true
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	var right Expr
	switch p.tok.kind {
	case tokNull:
		right = nullConst
	case tokBool:
		right = &constExpr{boolValue(p.tok.b)}
	default:
		return nil, p.syntaxError(p.tok)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var e Expr = &binaryExpr{fnIs, left, right}
	if negate {
		e = &unaryExpr{fnNot, e}
	}
	return e, nil
}

// prefix parses a primary expression or a prefix operator and its operand.
func (p *exprParser) prefix() (Expr, error) {
	t := p.tok
	switch t.kind {
	case tokLParen:
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		return e, p.expect(tokRParen)
	case tokPlus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.expr(precUnary + 1)
	case tokMinus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokMaxIntPlusOne {
			// -9223372036854775808 is a constant, not 0 - (an overflow).
			return &constExpr{intValue(math.MinInt64)}, p.advance()
		}
		operand, err := p.expr(precUnary + 1)
		if err != nil {
			return nil, err
		}
		return &binaryExpr{fnSub, &constExpr{intValue(0)}, operand}, nil
	case tokTilde:
		if err := p.advance(); err != nil {
			return nil, err
		}
		operand, err := p.expr(precBit + 1)
		if err != nil {
			return nil, err
		}
		return &binaryExpr{fnBitXor, &constExpr{intValue(-1)}, operand}, nil
	case tokNot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		operand, err := p.expr(precNot + 1)
		if err != nil {
			return nil, err
		}
		return &unaryExpr{fnNot, operand}, nil
	case tokNull:
		return nullConst, p.advance()
	case tokBool:
		return &constExpr{boolValue(t.b)}, p.advance()
	case tokInt:
		return &constExpr{intValue(t.i)}, p.advance()
	case tokDouble:
		return &constExpr{doubleValue(t.f)}, p.advance()
	case tokVar:
		name := t.text[1:]
		return &varExpr{ref: p.syms.Ref(name), name: name}, p.advance()
	case tokIdent:
		return p.call()
	case tokCase:
		return p.caseExpr()
	}
	return nil, p.syntaxError(t)
}

// call parses name(args…) and checks the arity.
func (p *exprParser) call() (Expr, error) {
	name := p.tok
	fn, ok := lookupCallable(name.text)
	if !ok {
		return nil, p.errorAt(name.off, fmt.Sprintf("unexpected function name %q", name.text))
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect(tokLParen); err != nil {
		return nil, err
	}
	var args []Expr
	leadingComma := p.tok.kind == tokComma
	if leadingComma {
		// exprparse.y's elist may start empty and go on with ", expr":
		// pgbench accepts f(, x) as f(x).
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if leadingComma || p.tok.kind != tokRParen {
		for {
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.tok.kind != tokComma {
				break
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.expect(tokRParen); err != nil {
		return nil, err
	}

	n := len(args)
	arityErr := func(want string) error {
		return p.errorAt(name.off, fmt.Sprintf("unexpected number of arguments (%s): takes %s, got %d", name.text, want, n))
	}
	switch fn.arity {
	case arityVariadic:
		if n == 0 {
			return nil, p.errorAt(name.off, fmt.Sprintf("at least one argument expected (%s)", name.text))
		}
	case arityHash:
		if n < 1 || n > 2 {
			return nil, arityErr("1 or 2")
		}
		if n == 1 {
			args = append(args, p.defaultSeed())
		}
	case arityPermute:
		if n < 2 || n > 3 {
			return nil, arityErr("2 or 3")
		}
		if n == 2 {
			args = append(args, p.defaultSeed())
		}
	default:
		if n != fn.arity {
			return nil, arityErr(fmt.Sprint(fn.arity))
		}
	}
	switch len(args) {
	case 1:
		return &unaryExpr{fn.id, args[0]}, nil
	case 2:
		return &binaryExpr{fn.id, args[0], args[1]}, nil
	}
	return &callExpr{fn.id, args}, nil
}

// defaultSeed is the implicit seed argument of hash functions and permute.
func (p *exprParser) defaultSeed() Expr {
	return &varExpr{ref: p.syms.Ref(VarDefaultSeed), name: VarDefaultSeed}
}

// caseExpr parses CASE WHEN c THEN r [WHEN …] [ELSE e] END.
func (p *exprParser) caseExpr() (Expr, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokWhen {
		return nil, p.syntaxError(p.tok)
	}
	c := &caseExpr{otherwise: nullConst}
	for p.tok.kind == tokWhen {
		if err := p.advance(); err != nil {
			return nil, err
		}
		cond, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokThen); err != nil {
			return nil, err
		}
		result, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.when = append(c.when, cond)
		c.then = append(c.then, result)
	}
	if p.tok.kind == tokElse {
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.otherwise = e
	}
	return c, p.expect(tokEnd)
}
