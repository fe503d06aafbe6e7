package demo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of evaluate_expression: input length and nesting depth keep the
// recursive-descent parser's work and stack small.
const (
	maxExprChars = 1000
	maxExprDepth = 64
)

// exprFunc returns the one-argument function an expression may call by
// name. A switch, not a map, so there is no package-level mutable state.
func exprFunc(name string) (func(float64) float64, bool) {
	switch name {
	case "sqrt":
		return math.Sqrt, true
	case "abs":
		return math.Abs, true
	case "ln":
		return math.Log, true
	case "log":
		return math.Log10, true
	case "log2":
		return math.Log2, true
	case "exp":
		return math.Exp, true
	case "sin":
		return math.Sin, true
	case "cos":
		return math.Cos, true
	case "tan":
		return math.Tan, true
	case "floor":
		return math.Floor, true
	case "ceil":
		return math.Ceil, true
	case "round":
		return math.Round, true
	}
	return nil, false
}

// exprConst returns the named constant an expression may use.
func exprConst(name string) (float64, bool) {
	switch name {
	case "pi":
		return math.Pi, true
	case "e":
		return math.E, true
	}
	return 0, false
}

// evalExpr evaluates an arithmetic expression: numbers (1, 2.5, 1e3),
// + - * / % ^ (power, right-associative, binding tighter than unary minus,
// so -2^2 is -4), parentheses, the constants pi and e and the functions of
// exprFunc. It never executes code: it is a plain recursive-descent parser
// over a fixed grammar.
func evalExpr(src string) (float64, error) {
	if n := utf8.RuneCountInString(src); n > maxExprChars {
		return 0, fmt.Errorf("expression is too long: %d characters, the limit is %d", n, maxExprChars)
	}
	toks, err := lex(src)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tokEOF {
		return 0, fmt.Errorf("expression is empty")
	}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return 0, fmt.Errorf("unexpected %s at position %d", t, t.pos+1)
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("result is not a number (e.g. sqrt of a negative)")
	}
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("result is too large to represent")
	}
	return v, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp // one of + - * / % ^ ( ) ,
)

type token struct {
	kind tokKind
	text string
	num  float64
	pos  int // byte offset in the source
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokIdent:
		return "name " + strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

// lex splits src into tokens.
func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.IndexByte("+-*/%^(),", c) >= 0:
			toks = append(toks, token{kind: tokOp, text: string(c), pos: i})
			i++
		case c == '.' || (c >= '0' && c <= '9'):
			j := i
			for j < len(src) && (src[j] == '.' || (src[j] >= '0' && src[j] <= '9')) {
				j++
			}
			// An exponent: e or E, an optional sign, then digits.
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			f, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("invalid number %q at position %d", src[i:j], i+1)
			}
			toks = append(toks, token{kind: tokNum, text: src[i:j], num: f, pos: i})
			i = j
		case isIdentByte(c):
			j := i
			for j < len(src) && (isIdentByte(src[j]) || (src[j] >= '0' && src[j] <= '9')) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(src[i:j]), pos: i})
			i = j
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, fmt.Errorf("unexpected character %q at position %d", r, i+1)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(src)}), nil
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == s
}

func (p *parser) nest(depth int) error {
	if depth > maxExprDepth {
		return fmt.Errorf("expression is nested too deeply (limit %d)", maxExprDepth)
	}
	return nil
}

// expr := term (('+' | '-') term)*
func (p *parser) expr(depth int) (float64, error) {
	if err := p.nest(depth); err != nil {
		return 0, err
	}
	v, err := p.term(depth)
	if err != nil {
		return 0, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().text
		r, err := p.term(depth)
		if err != nil {
			return 0, err
		}
		if op == "+" {
			v += r
		} else {
			v -= r
		}
	}
	return v, nil
}

// term := unary (('*' | '/' | '%') unary)*
func (p *parser) term(depth int) (float64, error) {
	v, err := p.unary(depth)
	if err != nil {
		return 0, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op := p.next()
		r, err := p.unary(depth)
		if err != nil {
			return 0, err
		}
		switch op.text {
		case "*":
			v *= r
		case "/":
			if r == 0 {
				return 0, fmt.Errorf("division by zero at position %d", op.pos+1)
			}
			v /= r
		case "%":
			if r == 0 {
				return 0, fmt.Errorf("modulo by zero at position %d", op.pos+1)
			}
			v = math.Mod(v, r)
		}
	}
	return v, nil
}

// unary := ('-' | '+') unary | power
func (p *parser) unary(depth int) (float64, error) {
	if p.isOp("-") || p.isOp("+") {
		if err := p.nest(depth + 1); err != nil {
			return 0, err
		}
		neg := p.next().text == "-"
		v, err := p.unary(depth + 1)
		if neg {
			v = -v
		}
		return v, err
	}
	return p.power(depth)
}

// power := primary ('^' unary)?   (right-associative through unary)
func (p *parser) power(depth int) (float64, error) {
	base, err := p.primary(depth)
	if err != nil {
		return 0, err
	}
	if !p.isOp("^") {
		return base, nil
	}
	p.next()
	if err := p.nest(depth + 1); err != nil {
		return 0, err
	}
	exp, err := p.unary(depth + 1)
	if err != nil {
		return 0, err
	}
	return math.Pow(base, exp), nil
}

// primary := number | constant | func '(' expr ')' | '(' expr ')'
func (p *parser) primary(depth int) (float64, error) {
	t := p.next()
	switch {
	case t.kind == tokNum:
		return t.num, nil
	case t.kind == tokOp && t.text == "(":
		v, err := p.expr(depth + 1)
		if err != nil {
			return 0, err
		}
		if !p.isOp(")") {
			u := p.peek()
			return 0, fmt.Errorf("expected \")\" to close \"(\" at position %d, found %s", t.pos+1, u)
		}
		p.next()
		return v, nil
	case t.kind == tokIdent:
		if c, ok := exprConst(t.text); ok {
			return c, nil
		}
		f, ok := exprFunc(t.text)
		if !ok {
			return 0, fmt.Errorf("unknown name %q at position %d (functions: %s; constants: pi, e)", t.text, t.pos+1, funcNames())
		}
		if !p.isOp("(") {
			return 0, fmt.Errorf("function %q at position %d needs parentheses, e.g. %s(2)", t.text, t.pos+1, t.text)
		}
		open := p.next()
		v, err := p.expr(depth + 1)
		if err != nil {
			return 0, err
		}
		if !p.isOp(")") {
			return 0, fmt.Errorf("expected \")\" to close \"(\" at position %d, found %s", open.pos+1, p.peek())
		}
		p.next()
		return f(v), nil
	}
	return 0, fmt.Errorf("unexpected %s at position %d", t, t.pos+1)
}

func funcNames() string {
	return "abs, ceil, cos, exp, floor, ln, log, log2, round, sin, sqrt, tan"
}
