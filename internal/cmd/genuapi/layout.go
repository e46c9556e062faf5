package main

import (
	"fmt"
	"strings"
)

// kind is the class of a C type.
type kind int

const (
	kindScalar kind = iota
	kindStruct
	kindUnion
)

// ctype is a C scalar, struct or union type.
type ctype struct {
	kind    kind
	name    string // scalar spelling, e.g. "__u32"
	tag     string // struct or union tag; empty when anonymous
	ref     bool   // a reference to a tag defined elsewhere
	defined bool
	members []*member
	line    int

	laidOut     bool
	size, align int64
	goName      string // Go type name for named aggregates
}

// member is one member of a struct or union.
type member struct {
	name string // empty for an anonymous struct or union
	typ  *ctype
	dims [][]token
	line int

	off  int64   // offset within the enclosing aggregate
	lens []int64 // evaluated array lengths
	flex bool    // a flexible array member: no storage
}

// cKeyword is "struct" or "union".
func (t *ctype) cKeyword() string {
	if t.kind == kindUnion {
		return "union"
	}
	return "struct"
}

// cName is the C spelling of a named aggregate, e.g. "struct hl_info_args".
func (t *ctype) cName() string { return t.cKeyword() + " " + t.tag }

// scalarInfo describes a C scalar type on the 64-bit Linux ABIs we support
// (amd64, arm64).
type scalarInfo struct {
	size   int64
	goType string
}

var scalars = map[string]scalarInfo{
	"__u8": {1, "uint8"}, "u8": {1, "uint8"}, "__s8": {1, "int8"}, "char": {1, "uint8"},
	"unsigned char": {1, "uint8"}, "signed char": {1, "int8"},
	"__u16": {2, "uint16"}, "__s16": {2, "int16"}, "__le16": {2, "uint16"}, "__be16": {2, "uint16"},
	"u16":   {2, "uint16"},
	"__u32": {4, "uint32"}, "__s32": {4, "int32"}, "__le32": {4, "uint32"}, "__be32": {4, "uint32"},
	"u32": {4, "uint32"}, "int": {4, "int32"}, "unsigned int": {4, "uint32"}, "unsigned": {4, "uint32"},
	"__u64": {8, "uint64"}, "__s64": {8, "int64"}, "__le64": {8, "uint64"}, "__be64": {8, "uint64"},
	"u64": {8, "uint64"}, "__aligned_u64": {8, "uint64"}, "__aligned_s64": {8, "int64"},
	"__aligned_le64": {8, "uint64"}, "__aligned_be64": {8, "uint64"},
	"long long": {8, "int64"}, "unsigned long long": {8, "uint64"},
	"long": {8, "int64"}, "unsigned long": {8, "uint64"}, "pointer": {8, "uint64"},
}

// layout computes sizes, alignments and member offsets with the C rules of
// the LP64 ABIs: every scalar is aligned to its size.
func (g *gen) layout(t *ctype) error {
	if t.laidOut {
		return nil
	}
	switch t.kind {
	case kindScalar:
		if strings.HasPrefix(t.name, "enum ") {
			t.size, t.align = 4, 4
			break
		}
		si, ok := scalars[t.name]
		if !ok {
			return fmt.Errorf("line %d: unknown scalar type %q", t.line, t.name)
		}
		t.size, t.align = si.size, si.size
	case kindStruct, kindUnion:
		var off, size int64
		align := int64(1)
		for i, m := range t.members {
			if m.typ.ref {
				def, ok := g.aggByName[m.typ.cName()]
				if !ok {
					return fmt.Errorf("line %d: %s is not defined", m.line, m.typ.cName())
				}
				m.typ = def
			}
			if err := g.layout(m.typ); err != nil {
				return err
			}
			n := int64(1)
			m.lens = nil
			for _, d := range m.dims {
				if len(d) == 0 {
					if i != len(t.members)-1 || t.kind != kindStruct {
						return fmt.Errorf("line %d: flexible array %s not last", m.line, m.name)
					}
					m.flex = true
					m.lens = append(m.lens, 0)
					n = 0
					continue
				}
				v, err := g.eval(d)
				if err != nil {
					return fmt.Errorf("line %d: array length of %s: %w", m.line, m.name, err)
				}
				if v.v.Sign() == 0 && i == len(t.members)-1 {
					m.flex = true // old-style name[0]
				}
				m.lens = append(m.lens, v.v.Int64())
				n *= v.v.Int64()
			}
			a := m.typ.align
			align = max(align, a)
			msize := m.typ.size * n
			if t.kind == kindStruct {
				off = roundUp(off, a)
				m.off = off
				off += msize
				size = off
			} else {
				m.off = 0
				size = max(size, msize)
			}
		}
		t.size = roundUp(size, align)
		t.align = align
	}
	t.laidOut = true
	return nil
}

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }
