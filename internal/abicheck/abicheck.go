// Package abicheck proves generated Go bindings against the C compiler.
//
// A generated uapi package carries a Table (in its zabi_test.go) that lists
// every type with every field, every constant and every ioctl request
// number it declares, and for packet headers every shift/mask pair. Run
// writes a C program that prints what gcc knows about each entry (sizeof,
// __alignof__, offsetof, constant values, the bytes of packet structs with
// one bitfield set), compiles it against the kernel headers, runs it and
// compares every line with what the Go side reports through reflect and the
// generated accessors. It also parses the package's generated files and
// fails when a declaration is missing from the table, so nothing the
// generator emits can escape the proof.
//
// It is test-only code: it uses gcc, never cgo.
package abicheck

import (
	"reflect"
	"unsafe"
)

// Table is what one generated package declares.
type Table struct {
	Package     string   // module-relative directory, for messages
	IncludeDirs []string // relative to the kernel source root
	Includes    []string // headers the C program includes
	Prelude     string   // C text placed before the includes
	Types       []Type
	Consts      []Const
	Requests    []Const
	Bits        []Bits
}

// Type is one Go type and the C type it mirrors: C itself, or the member at
// Path inside C when the C type has no name of its own.
type Type struct {
	Go     reflect.Type
	C      string
	Path   string
	Fields []Field
	Flex   []Flex
}

// Field is one C member of a Type. A plain Go field is named by Go; a union
// member reached through methods has Set/Get (scalars: Set writes all ones,
// Get reads the value back) or Ptr and Size (arrays and aggregates).
type Field struct {
	C    string
	Go   string
	Set  func(p unsafe.Pointer)
	Get  func(p unsafe.Pointer) uint64
	Ptr  func(p unsafe.Pointer) unsafe.Pointer
	Size uintptr
}

// Flex is a flexible array member: no Go storage, elements of Elem.
type Flex struct {
	C    string
	Off  uintptr // where the generator placed it
	Elem reflect.Type
}

// Const is a constant or a request number: its Go name, the C expression
// that yields it, and the Go value (uint64 or int64).
type Const struct {
	Go    string
	C     string
	Value any
}

// Bits is one shift/mask field of one packet member: Set stores v into the
// member of a Go packet struct.
type Bits struct {
	Field  string
	C      string
	Member string
	Go     reflect.Type
	Shift  uint64
	Mask   uint64
	Set    func(p unsafe.Pointer, v uint64)
}

// patterns are the values each packet bitfield is filled with, before the
// shift and mask.
var patterns = []uint64{
	0xFFFFFFFFFFFFFFFF, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0123456789ABCDEF, 1,
}
