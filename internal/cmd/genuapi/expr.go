package main

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// value is an integer constant with a simplified C type: signedness and
// width (32 or 64 bits).
type value struct {
	v        *big.Int
	unsigned bool
	long     bool
	ioc      *iocInfo // set when the value came from an _IO* macro
}

// iocInfo records how an ioctl request number was composed.
type iocInfo struct {
	dir       string // "_IO", "_IOR", "_IOW", "_IOWR"
	typ, nr   int64
	argType   string // C spelling of the argument type, empty for _IO
	argGoType string
}

func (v value) width() uint {
	if v.long {
		return 64
	}
	return 32
}

// norm wraps unsigned values to their width and widens values that do not
// fit in 32 bits, as C's literal typing does.
func (v value) norm() value {
	if v.unsigned {
		m := new(big.Int).Lsh(big.NewInt(1), v.width())
		v.v = new(big.Int).Mod(v.v, m)
	}
	if !v.long && (v.v.BitLen() > 32 || (!v.unsigned && v.v.BitLen() > 31)) {
		v.long = true
	}
	return v
}

// exprParser evaluates a C integer constant expression.
type exprParser struct {
	g    *gen
	toks []token
	pos  int
}

func (g *gen) eval(toks []token) (value, error) {
	e := &exprParser{g: g, toks: toks}
	v, err := e.parse(0)
	if err != nil {
		return value{}, err
	}
	if e.pos != len(toks) {
		return value{}, fmt.Errorf("trailing tokens at %s", e.toks[e.pos])
	}
	return v, nil
}

func (e *exprParser) peek() string {
	if e.pos >= len(e.toks) {
		return ""
	}
	return e.toks[e.pos].text
}

var binPrec = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
	"<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

func (e *exprParser) parse(minPrec int) (value, error) {
	lhs, err := e.unary()
	if err != nil {
		return value{}, err
	}
	for {
		op := e.peek()
		prec, ok := binPrec[op]
		if !ok || prec < minPrec || e.pos >= len(e.toks) || e.toks[e.pos].kind != tokPunct {
			return lhs, nil
		}
		e.pos++
		rhs, err := e.parse(prec + 1)
		if err != nil {
			return value{}, err
		}
		lhs, err = binary(op, lhs, rhs)
		if err != nil {
			return value{}, err
		}
	}
}

func boolVal(b bool) value {
	if b {
		return value{v: big.NewInt(1)}
	}
	return value{v: big.NewInt(0)}
}

func binary(op string, a, b value) (value, error) {
	r := value{v: new(big.Int)}
	if op != "<<" && op != ">>" {
		r.unsigned = a.unsigned || b.unsigned
		r.long = a.long || b.long
	} else {
		r.unsigned, r.long = a.unsigned, a.long
	}
	switch op {
	case "+":
		r.v.Add(a.v, b.v)
	case "-":
		r.v.Sub(a.v, b.v)
	case "*":
		r.v.Mul(a.v, b.v)
	case "/", "%":
		if b.v.Sign() == 0 {
			return value{}, fmt.Errorf("division by zero")
		}
		if op == "/" {
			r.v.Quo(a.v, b.v)
		} else {
			r.v.Rem(a.v, b.v)
		}
	case "<<":
		if !b.v.IsUint64() || b.v.Uint64() > 128 {
			return value{}, fmt.Errorf("shift by %s", b.v)
		}
		r.v.Lsh(a.v, uint(b.v.Uint64()))
		if !r.unsigned && r.v.BitLen() > int(r.width())-1 {
			r.long = true
		}
	case ">>":
		if !b.v.IsUint64() || b.v.Uint64() > 128 {
			return value{}, fmt.Errorf("shift by %s", b.v)
		}
		r.v.Rsh(a.v, uint(b.v.Uint64()))
	case "&":
		r.v.And(a.norm().v, b.norm().v)
	case "|":
		r.v.Or(a.v, b.v)
	case "^":
		r.v.Xor(a.v, b.v)
	case "==":
		return boolVal(a.v.Cmp(b.v) == 0), nil
	case "!=":
		return boolVal(a.v.Cmp(b.v) != 0), nil
	case "<":
		return boolVal(a.v.Cmp(b.v) < 0), nil
	case ">":
		return boolVal(a.v.Cmp(b.v) > 0), nil
	case "<=":
		return boolVal(a.v.Cmp(b.v) <= 0), nil
	case ">=":
		return boolVal(a.v.Cmp(b.v) >= 0), nil
	case "&&":
		return boolVal(a.v.Sign() != 0 && b.v.Sign() != 0), nil
	case "||":
		return boolVal(a.v.Sign() != 0 || b.v.Sign() != 0), nil
	}
	if r.v.BitLen() > 128 {
		return value{}, fmt.Errorf("value of %s overflows", op)
	}
	return r.norm(), nil
}

func (e *exprParser) unary() (value, error) {
	if e.pos >= len(e.toks) {
		return value{}, fmt.Errorf("unexpected end of expression")
	}
	t := e.toks[e.pos]
	switch {
	case t.kind == tokPunct && (t.text == "-" || t.text == "+" || t.text == "~" || t.text == "!"):
		e.pos++
		v, err := e.unary()
		if err != nil {
			return value{}, err
		}
		r := v
		r.v = new(big.Int)
		switch t.text {
		case "-":
			r.v.Neg(v.v)
		case "+":
			r.v.Set(v.v)
		case "~":
			r.v.Not(v.v)
		case "!":
			return boolVal(v.v.Sign() == 0), nil
		}
		return r.norm(), nil
	case t.text == "(":
		// A cast or a parenthesised expression.
		if typ, n, ok := e.g.castType(e.toks[e.pos+1:]); ok {
			e.pos += 1 + n + 1
			v, err := e.unary()
			if err != nil {
				return value{}, err
			}
			si := scalars[typ]
			r := value{v: new(big.Int).Set(v.v), long: si.size == 8, unsigned: strings.HasPrefix(si.goType, "u")}
			if !r.unsigned {
				m := new(big.Int).Lsh(big.NewInt(1), uint(si.size*8))
				r.v.Mod(r.v, m)
				if r.v.BitLen() == int(si.size*8) {
					r.v.Sub(r.v, m)
				}
			}
			return r.norm(), nil
		}
		e.pos++
		v, err := e.parse(0)
		if err != nil {
			return value{}, err
		}
		if e.peek() != ")" {
			return value{}, fmt.Errorf("want ) at %v", e.toks[min(e.pos, len(e.toks)-1)])
		}
		e.pos++
		return v, nil
	case t.kind == tokNumber:
		e.pos++
		return parseNumber(t.text)
	case t.kind == tokChar:
		e.pos++
		s, err := strconv.Unquote(t.text)
		if err != nil || len(s) != 1 {
			return value{}, fmt.Errorf("bad character literal %s", t.text)
		}
		return value{v: big.NewInt(int64(s[0]))}, nil
	case t.kind == tokIdent:
		e.pos++
		if e.peek() == "(" {
			return e.call(t.text)
		}
		return e.g.lookup(t.text)
	}
	return value{}, fmt.Errorf("unexpected %s", t)
}

// castType reports whether toks start with "type )" and returns the type.
func (g *gen) castType(toks []token) (string, int, bool) {
	var words []string
	for i, t := range toks {
		if t.text == ")" {
			s := strings.Join(words, " ")
			if _, ok := scalars[s]; ok && len(words) > 0 {
				return s, i, true
			}
			return "", 0, false
		}
		if t.kind != tokIdent {
			return "", 0, false
		}
		words = append(words, t.text)
	}
	return "", 0, false
}

func parseNumber(s string) (value, error) {
	lit := strings.TrimRight(s, "uUlL")
	suffix := strings.ToLower(s[len(lit):])
	v := new(big.Int)
	base := 10
	switch {
	case strings.HasPrefix(lit, "0x") || strings.HasPrefix(lit, "0X"):
		base, lit = 16, lit[2:]
	case len(lit) > 1 && lit[0] == '0':
		base, lit = 8, lit[1:]
	}
	if _, ok := v.SetString(lit, base); !ok {
		return value{}, fmt.Errorf("bad number %q", s)
	}
	r := value{v: v, unsigned: strings.Contains(suffix, "u"), long: strings.Contains(suffix, "l")}
	// Hex and octal literals that do not fit a signed type become unsigned.
	if base != 10 && !r.unsigned {
		if !r.long && v.BitLen() == 32 {
			r.unsigned = true
		} else if v.BitLen() == 64 {
			r.unsigned, r.long = true, true
		}
	}
	return r.norm(), nil
}

// call evaluates the function-like macros constant expressions use here:
// sizeof and the ioctl encoders.
func (e *exprParser) call(name string) (value, error) {
	e.pos++ // (
	var args [][]token
	var cur []token
	depth := 0
	for {
		if e.pos >= len(e.toks) {
			return value{}, fmt.Errorf("unterminated call to %s", name)
		}
		t := e.toks[e.pos]
		e.pos++
		if t.text == "(" {
			depth++
		}
		if t.text == ")" {
			if depth == 0 {
				args = append(args, cur)
				break
			}
			depth--
		}
		if t.text == "," && depth == 0 {
			args = append(args, cur)
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	switch name {
	case "sizeof":
		t, err := e.g.typeFromTokens(args[0])
		if err != nil {
			return value{}, err
		}
		return value{v: big.NewInt(t.size), unsigned: true, long: true}, nil
	case "BIT":
		n, err := e.g.eval(args[0])
		if err != nil {
			return value{}, err
		}
		if !n.v.IsUint64() || n.v.Uint64() > 63 {
			return value{}, fmt.Errorf("BIT(%s)", n.v)
		}
		return value{v: new(big.Int).Lsh(big.NewInt(1), uint(n.v.Uint64())), unsigned: true, long: true}, nil
	case "DRM_IO", "DRM_IOR", "DRM_IOW", "DRM_IOWR":
		args = append([][]token{{{kind: tokChar, text: "'d'"}}}, args...)
		name = strings.TrimPrefix(name, "DRM")
		return e.g.ioc(name, args)
	case "_IO", "_IOR", "_IOW", "_IOWR":
		return e.g.ioc(name, args)
	}
	return value{}, fmt.Errorf("unsupported macro call %s", name)
}

// ioc encodes an ioctl request number the way asm-generic/ioctl.h does on
// amd64 and arm64: nr in bits 0-7, type in 8-15, size in 16-29, direction
// (1 write, 2 read) in 30-31.
func (g *gen) ioc(name string, args [][]token) (value, error) {
	want := map[string]int{"_IO": 2, "_IOR": 3, "_IOW": 3, "_IOWR": 3}[name]
	if len(args) != want {
		return value{}, fmt.Errorf("%s wants %d arguments, got %d", name, want, len(args))
	}
	typ, err := g.eval(args[0])
	if err != nil {
		return value{}, err
	}
	nr, err := g.eval(args[1])
	if err != nil {
		return value{}, err
	}
	info := &iocInfo{dir: name, typ: typ.v.Int64(), nr: nr.v.Int64()}
	var size int64
	if want == 3 {
		t, err := g.typeFromTokens(args[2])
		if err != nil {
			return value{}, err
		}
		size = t.size
		info.argType = tokensText(args[2])
		info.argGoType = g.goTypeOf(t)
	}
	dir := map[string]int64{"_IO": 0, "_IOW": 1, "_IOR": 2, "_IOWR": 3}[name]
	if size >= 1<<14 || info.nr > 0xff || info.typ > 0xff {
		return value{}, fmt.Errorf("%s out of range", name)
	}
	n := dir<<30 | size<<16 | info.typ<<8 | info.nr
	return value{v: big.NewInt(n), unsigned: true, ioc: info}, nil
}

func tokensText(toks []token) string {
	var parts []string
	for _, t := range toks {
		parts = append(parts, t.text)
	}
	return strings.Join(parts, " ")
}

// typeFromTokens resolves "struct x", "union x", a scalar, or "const char *".
func (g *gen) typeFromTokens(toks []token) (*ctype, error) {
	var words []string
	for _, t := range toks {
		if t.text == "const" || t.text == "volatile" {
			continue
		}
		words = append(words, t.text)
	}
	s := strings.Join(words, " ")
	if strings.HasSuffix(s, "*") {
		s = "pointer"
	}
	if strings.HasPrefix(s, "struct ") || strings.HasPrefix(s, "union ") {
		t, ok := g.aggByName[s]
		if !ok {
			return nil, fmt.Errorf("unknown type %s", s)
		}
		if err := g.layout(t); err != nil {
			return nil, err
		}
		return t, nil
	}
	t := &ctype{kind: kindScalar, name: s}
	if err := g.layout(t); err != nil {
		return nil, err
	}
	return t, nil
}
