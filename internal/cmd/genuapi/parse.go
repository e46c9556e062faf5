package main

import (
	"fmt"
	"os"
	"strings"
)

// header is what one parsed C header declares, in source order.
type header struct {
	path    string
	defines []*define
	enums   []*enumDecl
	aggs    []*ctype // top-level struct and union definitions
}

// define is one #define.
type define struct {
	name     string
	body     []token
	line     int
	funcLike bool
}

// enumDecl is one enum definition; tag is empty for anonymous enums.
type enumDecl struct {
	tag    string
	consts []*enumConst
}

// enumConst is one enumerator; expr is nil when the value is implicit.
type enumConst struct {
	name string
	expr []token
	line int
}

// parseHeaderFile reads and parses a C header.
func parseHeaderFile(path, display string) (*header, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := parseHeader(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	h.path = display
	return h, nil
}

// parseHeader runs a small preprocessor (conditionals and #define only; no
// macro expansion in declarations) and parses the declarations that remain.
func parseHeader(src string) (*header, error) {
	src = stripComments(src)
	src = strings.ReplaceAll(src, "\\\r\n", " ")
	src = strings.ReplaceAll(src, "\\\n", " ")
	h := &header{}
	var body strings.Builder
	// active[i] says whether the i-th enclosing conditional block is live.
	var active []bool
	live := func() bool {
		for _, a := range active {
			if !a {
				return false
			}
		}
		return true
	}
	lines := strings.Split(src, "\n")
	for n, ln := range lines {
		lineNo := n + 1
		trim := strings.TrimSpace(ln)
		if !strings.HasPrefix(trim, "#") {
			if live() {
				body.WriteString(ln)
			}
			body.WriteByte('\n')
			continue
		}
		body.WriteByte('\n')
		dir := strings.TrimSpace(trim[1:])
		word, rest, _ := strings.Cut(dir, " ")
		if i := strings.IndexByte(word, '\t'); i >= 0 {
			word, rest = word[:i], word[i+1:]+" "+rest
		}
		rest = strings.TrimSpace(rest)
		switch word {
		case "ifndef":
			// Include guards and feature guards: the header's own names.
			active = append(active, true)
		case "ifdef", "if":
			cond := strings.Join(strings.Fields(rest), " ")
			switch cond {
			case "__KERNEL__", "defined(__KERNEL__)", "__cplusplus", "defined(__cplusplus)", "defined( __cplusplus )":
				active = append(active, false)
			default:
				return nil, fmt.Errorf("line %d: unsupported conditional %q", lineNo, dir)
			}
		case "else":
			if len(active) == 0 {
				return nil, fmt.Errorf("line %d: #else without #if", lineNo)
			}
			active[len(active)-1] = !active[len(active)-1]
		case "endif":
			if len(active) == 0 {
				return nil, fmt.Errorf("line %d: #endif without #if", lineNo)
			}
			active = active[:len(active)-1]
		case "include", "undef", "pragma", "error", "warning":
		case "define":
			if !live() {
				continue
			}
			d, err := parseDefine(rest, lineNo)
			if err != nil {
				return nil, err
			}
			h.defines = append(h.defines, d)
		default:
			return nil, fmt.Errorf("line %d: unsupported directive %q", lineNo, dir)
		}
	}
	toks, err := lex(body.String(), 1)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if err := p.parseTop(h); err != nil {
		return nil, err
	}
	return h, nil
}

func parseDefine(rest string, line int) (*define, error) {
	i := 0
	for i < len(rest) && isIdentChar(rest[i]) {
		i++
	}
	if i == 0 {
		return nil, fmt.Errorf("line %d: bad #define %q", line, rest)
	}
	d := &define{name: rest[:i], line: line}
	if i < len(rest) && rest[i] == '(' {
		d.funcLike = true
		return d, nil
	}
	toks, err := lex(rest[i:], line)
	if err != nil {
		return nil, err
	}
	d.body = toks
	return d, nil
}

// parser walks the declaration tokens of one header.
type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos >= len(p.toks) {
		return token{kind: tokPunct, text: eofText}
	}
	return p.toks[p.pos]
}

// eofText is what peek returns past the last token.
const eofText = "<EOF>"

// until reports whether a loop that consumes tokens up to stop should go on;
// it fails at the end of input instead of spinning there.
func (p *parser) until(stop string) (bool, error) {
	t := p.peek()
	if t.text == eofText {
		return false, fmt.Errorf("unexpected end of input, want %q", stop)
	}
	return t.text != stop, nil
}

func (p *parser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) expect(s string) error {
	t := p.next()
	if t.text != s {
		return fmt.Errorf("line %d: want %q, got %q", t.line, s, t.text)
	}
	return nil
}

func (p *parser) parseTop(h *header) error {
	for p.pos < len(p.toks) {
		t := p.peek()
		switch t.text {
		case "struct", "union":
			agg, err := p.parseAggregate()
			if err != nil {
				return err
			}
			if err := p.expect(";"); err != nil {
				return err
			}
			if agg.members == nil && !agg.defined {
				continue // forward declaration
			}
			h.aggs = append(h.aggs, agg)
		case "enum":
			e, err := p.parseEnum()
			if err != nil {
				return err
			}
			if err := p.expect(";"); err != nil {
				return err
			}
			h.enums = append(h.enums, e)
		case ";":
			p.next()
		default:
			return fmt.Errorf("line %d: unexpected %q at top level", t.line, t.text)
		}
	}
	return nil
}

// parseAggregate parses "struct|union [tag] [{ members }]".
func (p *parser) parseAggregate() (*ctype, error) {
	kw := p.next()
	agg := &ctype{kind: kindStruct, line: kw.line}
	if kw.text == "union" {
		agg.kind = kindUnion
	}
	if p.peek().kind == tokIdent {
		agg.tag = p.next().text
	}
	p.skipAttributes()
	if p.peek().text != "{" {
		agg.ref = true
		return agg, nil
	}
	p.next()
	agg.defined = true
	for {
		more, err := p.until("}")
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		ms, err := p.parseMember()
		if err != nil {
			return nil, err
		}
		agg.members = append(agg.members, ms...)
	}
	p.next()
	if p.skipAttributes() {
		return nil, fmt.Errorf("line %d: attributes on aggregates are not supported", kw.line)
	}
	return agg, nil
}

// skipAttributes skips __attribute__((...)) and reports whether it saw one.
func (p *parser) skipAttributes() bool {
	seen := false
	for p.peek().text == "__attribute__" {
		seen = true
		p.next()
		depth := 0
		for p.pos < len(p.toks) {
			t := p.next()
			if t.text == "(" {
				depth++
			} else if t.text == ")" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
	}
	return seen
}

// parseMember parses one member declaration, which may declare several names.
func (p *parser) parseMember() ([]*member, error) {
	line := p.peek().line
	if p.peek().text == "RDMA_UAPI_PTR" {
		// RDMA_UAPI_PTR(type, name) declares a user pointer as __aligned_u64.
		p.next()
		var args []token
		for {
			more, err := p.until(";")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			args = append(args, p.next())
		}
		p.next()
		if len(args) < 4 || args[len(args)-1].text != ")" || args[len(args)-2].kind != tokIdent {
			return nil, fmt.Errorf("line %d: bad RDMA_UAPI_PTR", line)
		}
		return []*member{{name: args[len(args)-2].text, typ: &ctype{kind: kindScalar, name: "__aligned_u64"}, line: line}}, nil
	}
	if p.peek().text == "__DECLARE_FLEX_ARRAY" {
		// __DECLARE_FLEX_ARRAY(type, name) declares a flexible array member
		// (linux/stddef.h), allowed there even inside a union.
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		typ, err := p.parseTypeSpec()
		if err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		name := p.next()
		if name.kind != tokIdent {
			return nil, fmt.Errorf("line %d: bad __DECLARE_FLEX_ARRAY", line)
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		return []*member{{name: name.text, typ: typ, dims: [][]token{nil}, line: line}}, nil
	}
	typ, err := p.parseTypeSpec()
	if err != nil {
		return nil, err
	}
	if p.peek().text == ";" {
		p.next()
		if typ.kind != kindStruct && typ.kind != kindUnion || !typ.defined {
			return nil, fmt.Errorf("line %d: declaration without a name", line)
		}
		return []*member{{typ: typ, line: line}}, nil
	}
	var out []*member
	for {
		m := &member{typ: typ, line: line}
		if p.peek().text == "*" {
			p.next()
			m.typ = &ctype{kind: kindScalar, name: "pointer"}
		}
		nt := p.next()
		if nt.kind != tokIdent {
			return nil, fmt.Errorf("line %d: want member name, got %q", nt.line, nt.text)
		}
		m.name = nt.text
		var dims [][]token
		for p.peek().text == "[" {
			p.next()
			var expr []token
			for {
				more, err := p.until("]")
				if err != nil {
					return nil, err
				}
				if !more {
					break
				}
				expr = append(expr, p.next())
			}
			p.next()
			dims = append(dims, expr)
		}
		if p.peek().text == ":" {
			return nil, fmt.Errorf("line %d: bitfield %s is not supported", nt.line, m.name)
		}
		m.dims = dims
		out = append(out, m)
		if p.peek().text == "," {
			p.next()
			continue
		}
		break
	}
	if err := p.expect(";"); err != nil {
		return nil, err
	}
	return out, nil
}

// parseTypeSpec parses the type part of a member declaration.
func (p *parser) parseTypeSpec() (*ctype, error) {
	for p.peek().text == "const" || p.peek().text == "volatile" {
		p.next()
	}
	t := p.peek()
	switch t.text {
	case "struct", "union":
		return p.parseAggregate()
	case "enum":
		p.next()
		name := p.next()
		return &ctype{kind: kindScalar, name: "enum " + name.text}, nil
	}
	// Scalars, including multi-word ones such as "unsigned int".
	var words []string
	for p.peek().kind == tokIdent {
		w := p.peek().text
		if len(words) > 0 && !isScalarWord(w) {
			break
		}
		words = append(words, p.next().text)
		if !isScalarWord(w) {
			break
		}
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("line %d: want a type, got %q", t.line, t.text)
	}
	return &ctype{kind: kindScalar, name: strings.Join(words, " ")}, nil
}

func isScalarWord(w string) bool {
	switch w {
	case "unsigned", "signed", "int", "long", "short", "char":
		return true
	}
	return false
}

func (p *parser) parseEnum() (*enumDecl, error) {
	p.next()
	e := &enumDecl{}
	if p.peek().kind == tokIdent {
		e.tag = p.next().text
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	for {
		more, err := p.until("}")
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		nt := p.next()
		if nt.kind != tokIdent {
			return nil, fmt.Errorf("line %d: want enumerator, got %q", nt.line, nt.text)
		}
		c := &enumConst{name: nt.text, line: nt.line}
		if p.peek().text == "=" {
			p.next()
			depth := 0
			for {
				t := p.peek()
				if t.text == eofText {
					return nil, fmt.Errorf("line %d: unterminated enum", nt.line)
				}
				if depth == 0 && (t.text == "," || t.text == "}") {
					break
				}
				if t.text == "(" {
					depth++
				} else if t.text == ")" {
					depth--
				}
				c.expr = append(c.expr, p.next())
			}
		}
		e.consts = append(e.consts, c)
		if p.peek().text == "," {
			p.next()
		}
	}
	p.next()
	return e, nil
}
