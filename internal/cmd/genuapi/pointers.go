package main

import (
	"fmt"
	"sort"
	"strings"
)

// User addresses.
//
// Some members hold the address of memory in the calling process that the
// driver reads or writes while it serves the call: the chunk arrays of a
// CS, the sequence array of a wait, the buffer INFO answers into. In Go such
// an address must be a pointer the garbage collector sees, so that what it
// points to is allocated where it cannot move (never a goroutine stack) and
// stays alive while the argument structure does. The generator therefore
// types them as Pointer, a struct holding an unsafe.Pointer that each uapi
// package defines by hand:
//
//   - a plain member becomes a Pointer field;
//   - a union member keeps an exported getter (decoders such as the
//     simulator and tracers read the address as a number) but no exported
//     setter, since the union's storage is integers the collector does not
//     scan; callers write it through a view.
//
// A view is a second Go type for one way of using a union: the members
// that way uses, at their C offsets, with user addresses as Pointer fields,
// so the storage of the whole argument has pointer words where the driver
// expects addresses. The ABI proof checks a view's fields like any other.

// pointerMember reports whether the member at cPath (member path below
// cRoot) of cRoot is a user address.
func (g *gen) pointerMember(cRoot, cPath string) bool {
	_, ok := g.spec.userPointers[cRoot+"."+cPath]
	return ok
}

// viewSpec describes a view: a Go type of C type cType that names the
// members listed in fields.
type viewSpec struct {
	name   string
	cType  string // e.g. "union hl_cs_args"
	doc    string // completes "<name> mirrors <cType> as it is used ..."
	note   string // a further paragraph of the type's doc comment, or ""
	fields []viewField
}

// viewField is one member of a view. With ptr set the member is a user
// address and becomes a Pointer; with overlay set it is reached through a
// method returning a pointer to the generated type named overlay (an output
// that the driver writes over the input, say).
type viewField struct {
	c       string // member path in cType, e.g. "in.chunks_execute"
	goName  string
	ptr     bool
	overlay string
}

// memberAt resolves a dotted member path in t, looking through anonymous
// members as C does, and returns the member and its offset in t.
func memberAt(t *ctype, path string) (*member, int64, error) {
	first, rest, nested := strings.Cut(path, ".")
	m, off, ok := findMember(t, first)
	if !ok {
		return nil, 0, fmt.Errorf("%s has no member %s", t.cName(), first)
	}
	if !nested {
		return m, off, nil
	}
	if m.typ.kind == kindScalar || len(m.lens) > 0 {
		return nil, 0, fmt.Errorf("member %s of %s is not an aggregate", first, t.cName())
	}
	mm, o, err := memberAt(m.typ, rest)
	if err != nil {
		return nil, 0, err
	}
	return mm, off + o, nil
}

// findMember finds the named member of t, also inside anonymous members.
func findMember(t *ctype, name string) (*member, int64, bool) {
	for _, m := range t.members {
		if m.name == name {
			return m, m.off, true
		}
		if m.name == "" {
			if mm, off, ok := findMember(m.typ, name); ok {
				return mm, m.off + off, true
			}
		}
	}
	return nil, 0, false
}

// addViews generates the spec's views.
func (g *gen) addViews() error {
	for _, v := range g.spec.views {
		t, ok := g.aggByName[v.cType]
		if !ok {
			return fmt.Errorf("view %s: no %s", v.name, v.cType)
		}
		if err := g.layout(t); err != nil {
			return err
		}
		if _, dup := g.typeByGo[v.name]; dup {
			return fmt.Errorf("view %s: type name used twice", v.name)
		}
		gt := &goType{name: v.name, t: t, cRoot: v.cType, doc: v.cType + " " + v.doc, view: true, note: v.note}
		for _, f := range v.fields {
			m, off, err := memberAt(t, f.c)
			if err != nil {
				return fmt.Errorf("view %s: %w", v.name, err)
			}
			size := m.typ.size * product(m.lens)
			switch {
			case f.overlay != "":
				if _, ok := g.typeByGo[f.overlay]; !ok {
					return fmt.Errorf("view %s: %s: no generated type %s", v.name, f.c, f.overlay)
				}
				gt.accessors = append(gt.accessors, goAccessor{name: f.goName, kind: accPtr, typ: f.overlay,
					off: off, size: size, cMember: f.c, where: "view " + v.name})
				continue
			case f.ptr:
				if m.typ.kind != kindScalar || len(m.lens) > 0 || size != 8 {
					return fmt.Errorf("view %s: %s is not a 64-bit address", v.name, f.c)
				}
				gt.fields = append(gt.fields, goField{name: f.goName, typ: "Pointer", off: off, size: 8, cMember: f.c})
				continue
			}
			typ, err := g.memberGoType(gt, m, "", false)
			if err != nil {
				return fmt.Errorf("view %s: %w", v.name, err)
			}
			gt.fields = append(gt.fields, goField{name: f.goName, typ: typ, off: off, size: size, cMember: f.c})
		}
		sort.SliceStable(gt.fields, func(i, j int) bool { return gt.fields[i].off < gt.fields[j].off })
		g.typeByGo[v.name] = gt
		g.types = append(g.types, gt)
		if err := g.checkNames(gt); err != nil {
			return err
		}
	}
	return nil
}
