package main

import (
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
)

// gen holds one package's parsed headers and the Go declarations built
// from them.
type gen struct {
	spec      *pkgSpec
	headers   []*header
	aggByName map[string]*ctype
	defines   map[string]*define
	enumOf    map[string]*enumDecl
	values    map[string]value
	resolving map[string]bool

	types    []*goType
	typeByGo map[string]*goType
	consts   []*goConst
}

// goConst is one generated constant.
type goConst struct {
	name    string
	goType  string // empty: untyped
	val     value
	cExpr   string // C expression that yields the value in the check
	request bool   // an ioctl request number
	group   string // heading of the const block it is emitted in
	hex     bool
}

// goField is one field of a generated struct.
type goField struct {
	name    string // "_" for padding
	typ     string
	off     int64
	size    int64
	cMember string // C member path relative to the type
}

// accessorKind says how a union member is reached.
type accessorKind int

const (
	accScalar accessorKind = iota // getter and setter
	accPtr                        // pointer to the member
)

// goAccessor is a method that reaches a member of an anonymous or
// top-level union.
type goAccessor struct {
	name    string
	kind    accessorKind
	typ     string // Go type of the member
	signed  bool
	off     int64 // offset within the Go type
	size    int64
	cMember string
	where   string // human description of the union

	// readOnly: a user address in integer storage; the setter is unexported
	// (for the ABI proof) and callers write it through a view.
	readOnly bool
}

// goType is one generated Go type.
type goType struct {
	name      string
	doc       string
	cRoot     string // C type the check starts from, e.g. "struct hl_mem_in"
	cPath     string // member path below cRoot for nested types, e.g. "alloc"
	t         *ctype
	fields    []goField
	accessors []goAccessor
	flex      []goField // flexible array members (no storage)
	view      bool      // a view of a union (see pointers.go)
	note      string    // more of the doc comment, for a view
}

func newGen(spec *pkgSpec) *gen {
	return &gen{
		spec:      spec,
		aggByName: map[string]*ctype{},
		defines:   map[string]*define{},
		enumOf:    map[string]*enumDecl{},
		values:    map[string]value{},
		resolving: map[string]bool{},
		typeByGo:  map[string]*goType{},
	}
}

// load parses every header of the spec from the kernel tree at ksrc.
func (g *gen) load(ksrc string) error {
	for _, hs := range g.spec.headers {
		h, err := parseHeaderFile(filepath.Join(ksrc, hs.path), hs.path)
		if err != nil {
			return err
		}
		g.headers = append(g.headers, h)
		for _, a := range h.aggs {
			if a.tag == "" {
				return fmt.Errorf("%s: line %d: anonymous top-level aggregate", hs.path, a.line)
			}
			g.aggByName[a.cName()] = a
		}
		for _, d := range h.defines {
			g.defines[d.name] = d
		}
		for _, e := range h.enums {
			for _, c := range e.consts {
				g.enumOf[c.name] = e
			}
		}
	}
	if g.spec.supplied != "" {
		h, err := parseHeader(g.spec.supplied)
		if err != nil {
			return fmt.Errorf("supplied declarations: %w", err)
		}
		for _, a := range h.aggs {
			if _, dup := g.aggByName[a.cName()]; dup {
				return fmt.Errorf("supplied declarations: %s is also in a header", a.cName())
			}
			g.aggByName[a.cName()] = a
		}
	}
	for name, v := range g.spec.builtins {
		g.values[name] = value{v: big.NewInt(v.val)}
	}
	return nil
}

// lookup evaluates a macro or enumerator by name.
func (g *gen) lookup(name string) (value, error) {
	if v, ok := g.values[name]; ok {
		return v, nil
	}
	if g.resolving[name] {
		return value{}, fmt.Errorf("%s refers to itself", name)
	}
	g.resolving[name] = true
	defer delete(g.resolving, name)
	if d, ok := g.defines[name]; ok && !d.funcLike {
		v, err := g.eval(d.body)
		if err != nil {
			return value{}, fmt.Errorf("%s: %w", name, err)
		}
		g.values[name] = v
		return v, nil
	}
	if e, ok := g.enumOf[name]; ok {
		if err := g.evalEnum(e); err != nil {
			return value{}, err
		}
		return g.values[name], nil
	}
	return value{}, fmt.Errorf("unknown identifier %s", name)
}

// evalEnum assigns every enumerator of e its value.
func (g *gen) evalEnum(e *enumDecl) error {
	next := big.NewInt(0)
	for _, c := range e.consts {
		if v, ok := g.values[c.name]; ok {
			next = new(big.Int).Add(v.v, big.NewInt(1))
			continue
		}
		v := value{v: new(big.Int).Set(next)}
		if c.expr != nil {
			g.resolving[c.name] = true
			ev, err := g.eval(c.expr)
			delete(g.resolving, c.name)
			if err != nil {
				return fmt.Errorf("line %d: %s: %w", c.line, c.name, err)
			}
			v = value{v: ev.v}
		}
		g.values[c.name] = v
		next = new(big.Int).Add(v.v, big.NewInt(1))
	}
	return nil
}

// build turns the parsed headers into Go declarations.
func (g *gen) build() error {
	for _, h := range g.headers {
		group := "from " + h.path
		for _, d := range h.defines {
			if d.funcLike || len(d.body) == 0 {
				continue
			}
			if _, skip := g.spec.skipDefines[d.name]; skip {
				continue
			}
			v, err := g.lookup(d.name)
			if err != nil {
				return fmt.Errorf("%s: line %d: #define %w", h.path, d.line, err)
			}
			c := &goConst{name: d.name, val: v, cExpr: d.name, request: v.ioc != nil, group: "Macros " + group,
				hex: strings.Contains(tokensText(d.body), "0x") || strings.Contains(tokensText(d.body), "<<")}
			if c.request {
				c.group = "Ioctl request numbers " + group
			}
			g.consts = append(g.consts, c)
		}
		for _, e := range h.enums {
			if err := g.evalEnum(e); err != nil {
				return fmt.Errorf("%s: %w", h.path, err)
			}
			typ := ""
			grp := "Anonymous enum " + group
			if e.tag != "" {
				typ = g.typeName(e.tag)
				grp = "Values of enum " + e.tag
			}
			for _, c := range e.consts {
				v := g.values[c.name]
				g.consts = append(g.consts, &goConst{name: c.name, goType: typ, val: v, cExpr: c.name, group: grp,
					hex: c.expr != nil && (strings.Contains(tokensText(c.expr), "0x") || strings.Contains(tokensText(c.expr), "<<"))})
			}
		}
		for _, a := range h.aggs {
			if g.spec.keepType != nil && !g.spec.keepType(a.tag) {
				continue
			}
			if err := g.addNamed(a); err != nil {
				return fmt.Errorf("%s: %w", h.path, err)
			}
		}
	}
	for _, x := range g.spec.extraRequests {
		v, err := g.ioc(x.dir, [][]token{{{kind: tokChar, text: x.magic}}, mustLex(x.nr), mustLex(x.arg)})
		if err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		g.consts = append(g.consts, &goConst{name: x.name, val: v, request: true, hex: true,
			cExpr: fmt.Sprintf("%s(%s, %s, %s)", x.dir, x.magic, x.nr, x.arg), group: x.group})
	}
	if err := g.addViews(); err != nil {
		return err
	}
	for _, b := range g.spec.builtinOrder {
		bi := g.spec.builtins[b]
		g.consts = append([]*goConst{{name: b, val: value{v: big.NewInt(bi.val)}, cExpr: bi.cExpr, group: "Constants the headers take from elsewhere", hex: true}}, g.consts...)
	}
	return nil
}

func mustLex(s string) []token {
	t, err := lex(s, 1)
	if err != nil {
		panic(err)
	}
	return t
}

// addNamed generates the Go type of a named top-level aggregate and,
// first, of every named aggregate it contains.
func (g *gen) addNamed(a *ctype) error {
	if a.goName != "" {
		return nil
	}
	if err := g.layout(a); err != nil {
		return err
	}
	a.goName = g.typeName(a.tag)
	_, err := g.addType(a.goName, a, a.cName(), "", a.cName())
	return err
}

// typeName turns a C tag into a Go type name.
func (g *gen) typeName(tag string) string {
	for _, p := range g.spec.stripPrefixes {
		if strings.HasPrefix(tag, p) && len(tag) > len(p) {
			tag = tag[len(p):]
			break
		}
	}
	return camel(tag)
}

// addType generates a Go type for aggregate t, reached in C as cRoot
// followed by member path cPath.
func (g *gen) addType(name string, t *ctype, cRoot, cPath, desc string) (*goType, error) {
	if _, dup := g.typeByGo[name]; dup {
		return nil, fmt.Errorf("type name %s used twice", name)
	}
	gt := &goType{name: name, t: t, cRoot: cRoot, cPath: cPath, doc: desc}
	g.typeByGo[name] = gt
	// Reserve the position before nested types so the output reads top-down.
	g.types = append(g.types, gt)
	if t.kind == kindUnion {
		gt.fields = append(gt.fields, g.storage("raw", 0, t))
		if err := g.unionArms(gt, t, 0, "", "union "+desc); err != nil {
			return nil, err
		}
	} else if err := g.structFields(gt, t, 0, ""); err != nil {
		return nil, err
	}
	return gt, g.checkNames(gt)
}

// storage is the field that holds an anonymous or top-level union: an
// array of the union's alignment unit so Go aligns it as C does.
func (g *gen) storage(name string, off int64, u *ctype) goField {
	unit := map[int64]string{1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}[u.align]
	return goField{name: name, typ: fmt.Sprintf("[%d]%s", u.size/u.align, unit), off: off, size: u.size}
}

func (g *gen) structFields(gt *goType, t *ctype, base int64, cprefix string) error {
	nUnion := 0
	for _, f := range gt.fields {
		if strings.HasPrefix(f.name, "u") && f.typ[0] == '[' {
			nUnion++
		}
	}
	for _, m := range t.members {
		off := base + m.off
		switch {
		case m.flex:
			typ, err := g.memberGoType(gt, m, cprefix, true)
			if err != nil {
				return err
			}
			gt.flex = append(gt.flex, goField{name: camel(m.name), typ: typ, off: off, cMember: cprefix + m.name})
		case m.name == "" && m.typ.kind == kindStruct:
			if err := g.structFields(gt, m.typ, off, cprefix); err != nil {
				return err
			}
		case m.name == "" && m.typ.kind == kindUnion:
			sname := fmt.Sprintf("u%d", nUnion)
			nUnion++
			gt.fields = append(gt.fields, g.storage(sname, off, m.typ))
			if err := g.unionArms(gt, m.typ, off, cprefix, "anonymous union in "+gt.doc); err != nil {
				return err
			}
		default:
			typ, err := g.memberGoType(gt, m, cprefix, false)
			if err != nil {
				return err
			}
			if g.pointerMember(gt.cRoot, joinPath(gt.cPath, cprefix+m.name)) {
				if typ != "uint64" {
					return fmt.Errorf("%s: user address %s is %s, not a 64-bit integer", gt.name, m.name, typ)
				}
				typ = "Pointer"
			}
			gt.fields = append(gt.fields, goField{name: camel(m.name), typ: typ, off: off,
				size: m.typ.size * product(m.lens), cMember: cprefix + m.name})
		}
	}
	return nil
}

func product(ns []int64) int64 {
	p := int64(1)
	for _, n := range ns {
		p *= n
	}
	return p
}

// memberGoType returns the Go type of a named member, generating a nested
// type for an anonymous aggregate with a member name.
func (g *gen) memberGoType(gt *goType, m *member, cprefix string, flex bool) (string, error) {
	var elem string
	switch {
	case m.typ.kind == kindScalar:
		elem = g.goTypeOf(m.typ)
	case m.typ.tag != "":
		if err := g.addNamed(m.typ); err != nil {
			return "", err
		}
		elem = m.typ.goName
	default:
		path := cprefix + m.name
		if gt.cPath != "" {
			path = gt.cPath + "." + path
		}
		nested, err := g.addType(gt.name+camel(m.name), m.typ, gt.cRoot, path,
			fmt.Sprintf("the %s member of %s", path, gt.cRoot))
		if err != nil {
			return "", err
		}
		elem = nested.name
	}
	if flex {
		return elem, nil
	}
	for i := len(m.lens) - 1; i >= 0; i-- {
		elem = fmt.Sprintf("[%d]%s", m.lens[i], elem)
	}
	return elem, nil
}

// goTypeOf returns the Go spelling of a scalar or named aggregate.
func (g *gen) goTypeOf(t *ctype) string {
	if t.kind != kindScalar {
		if t.goName == "" {
			_ = g.addNamed(t)
		}
		return t.goName
	}
	if strings.HasPrefix(t.name, "enum ") {
		return "int32"
	}
	return scalars[t.name].goType
}

// unionArms adds accessors for every member of union u stored at off.
func (g *gen) unionArms(gt *goType, u *ctype, off int64, cprefix, where string) error {
	for _, m := range u.members {
		if err := g.leaf(gt, m, off+m.off, cprefix, where); err != nil {
			return err
		}
	}
	return nil
}

// leaf adds an accessor for member m at off, flattening anonymous
// aggregates as C does.
func (g *gen) leaf(gt *goType, m *member, off int64, cprefix, where string) error {
	if m.name == "" {
		for _, mm := range m.typ.members {
			if err := g.leaf(gt, mm, off+mm.off, cprefix, where); err != nil {
				return err
			}
		}
		return nil
	}
	if m.flex {
		return fmt.Errorf("line %d: flexible array %s inside a union", m.line, m.name)
	}
	typ, err := g.memberGoType(gt, m, cprefix, false)
	if err != nil {
		return err
	}
	a := goAccessor{name: camel(m.name), typ: typ, off: off, size: m.typ.size * product(m.lens),
		cMember: cprefix + m.name, where: where}
	if m.typ.kind == kindScalar && len(m.lens) == 0 {
		a.kind = accScalar
		a.signed = strings.HasPrefix(typ, "int")
		a.readOnly = g.pointerMember(gt.cRoot, joinPath(gt.cPath, cprefix+m.name))
	} else {
		a.kind = accPtr
	}
	gt.accessors = append(gt.accessors, a)
	return nil
}

// checkNames refuses types whose fields and methods collide.
func (g *gen) checkNames(gt *goType) error {
	seen := map[string]bool{}
	add := func(n string) error {
		if seen[n] {
			return fmt.Errorf("%s: name %s used twice", gt.name, n)
		}
		seen[n] = true
		return nil
	}
	for _, f := range gt.fields {
		if f.name != "_" {
			if err := add(f.name); err != nil {
				return err
			}
		}
	}
	for _, a := range gt.accessors {
		if err := add(a.name); err != nil {
			return err
		}
		if a.kind == accScalar && !a.readOnly {
			if err := add("Set" + a.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinPath joins C member paths with a dot, skipping empty parts.
func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
