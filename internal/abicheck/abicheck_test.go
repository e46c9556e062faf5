package abicheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// recorder is a TB that keeps errors instead of failing the test, so the
// self-test can show that a wrong binding is caught.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.T.Fatalf("unexpected fatal: "+format, args...)
}

const testHeader = `#include <linux/types.h>
#define T_VALUE 0x1234
#define T_SHIFT_SHIFT 4
#define T_SHIFT_MASK 0xF0
struct t_pair {
	__u32 a;
	__u64 b;
	union {
		__u16 c;
		__u32 d;
	};
};
`

// goodPair mirrors struct t_pair correctly.
type goodPair struct {
	A  uint32
	_  [4]byte
	B  uint64
	u0 [1]uint32
	_  [4]byte
}

// badPair puts b at the wrong offset.
type badPair struct {
	A uint32
	B uint32
	X uint64
	_ [8]byte
}

func (p *goodPair) SetD(v uint32) { *(*uint32)(unsafe.Add(unsafe.Pointer(p), 16)) = v }
func (p *goodPair) D() uint32     { return *(*uint32)(unsafe.Add(unsafe.Pointer(p), 16)) }

// SetWrongD writes d one byte too far.
func (p *goodPair) SetWrongD(v uint32) { *(*uint32)(unsafe.Add(unsafe.Pointer(p), 17)) = v }

func table(t *testing.T, typ reflect.Type, fields []Field, value uint64) (*Table, string) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "t.h"), []byte(testHeader), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Table{
		Package:     "selftest",
		IncludeDirs: []string{"."},
		Includes:    []string{"t.h"},
		Types:       []Type{{Go: typ, C: "struct t_pair", Fields: fields}},
		Consts:      []Const{{Go: "T_VALUE", C: "T_VALUE", Value: value}},
		Bits: []Bits{{Field: "T_SHIFT", C: "struct t_pair", Member: "a", Go: typ, Shift: 4, Mask: 0xF0,
			Set: func(p unsafe.Pointer, v uint64) { *(*uint32)(p) = uint32(v) }}},
	}, root
}

func TestRunCatchesWrongBindings(t *testing.T) {
	good := []Field{
		{C: "a", Go: "A"}, {C: "b", Go: "B"},
		{C: "d", Go: "D()", Set: func(p unsafe.Pointer) { (*goodPair)(p).SetD(^uint32(0)) }, Get: func(p unsafe.Pointer) uint64 { return uint64((*goodPair)(p).D()) }},
	}
	tests := []struct {
		name   string
		typ    reflect.Type
		fields []Field
		value  uint64
		want   []string // substrings of the expected errors; none means success
	}{
		{name: "correct", typ: reflect.TypeFor[goodPair](), fields: good, value: 0x1234},
		{name: "wrong offset", typ: reflect.TypeFor[badPair](), fields: []Field{{C: "a", Go: "A"}, {C: "b", Go: "B"}}, value: 0x1234,
			want: []string{"struct t_pair.b (Go B): offset/size C 8/8, Go 4/4"}},
		{name: "wrong accessor", typ: reflect.TypeFor[goodPair](), value: 0x1234, fields: []Field{
			{C: "d", Go: "WrongD()", Set: func(p unsafe.Pointer) { (*goodPair)(p).SetWrongD(^uint32(0)) }, Get: func(p unsafe.Pointer) uint64 { return uint64((*goodPair)(p).D()) }}},
			want: []string{"getter WrongD() read"}},
		{name: "wrong constant", typ: reflect.TypeFor[goodPair](), fields: good, value: 0x1235,
			want: []string{"T_VALUE = 4660 in C (T_VALUE), 4661 in Go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, root := table(t, tt.typ, tt.fields, tt.value)
			r := &recorder{T: t}
			c := RunWith(r, tbl, root)
			if len(tt.want) == 0 {
				if len(r.errs) > 0 || c.Mismatches != 0 {
					t.Fatalf("correct bindings failed: %v", r.errs)
				}
				if c.Types != 1 || c.Fields != 3 || c.Consts != 1 || c.Bits != len(patterns) {
					t.Fatalf("counts = %+v", c)
				}
				return
			}
			all := strings.Join(r.errs, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("errors do not mention %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestCompleteFindsUncoveredDeclarations(t *testing.T) {
	dir := t.TempDir()
	src := `package x

type Covered struct{ A uint32 }
type Forgotten struct{ B uint32 }
const COVERED = 1
const FORGOTTEN = 2
func (c *Covered) Arm() uint32 { return 0 }
`
	if err := os.WriteFile(filepath.Join(dir, "zfile.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	type Covered struct{ A uint32 }
	tbl := &Table{
		Types:  []Type{{Go: reflect.TypeFor[Covered](), Fields: []Field{{C: "a", Go: "A"}}}},
		Consts: []Const{{Go: "COVERED"}},
	}
	err := Complete(tbl, dir)
	if err == nil {
		t.Fatal("Complete accepted a table that misses declarations")
	}
	for _, w := range []string{"type Forgotten", "const FORGOTTEN", "method Covered.Arm"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "type Covered") || strings.Contains(err.Error(), "const COVERED") {
		t.Errorf("error names covered declarations: %v", err)
	}
}
