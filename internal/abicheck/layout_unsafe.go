package abicheck

import (
	"fmt"
	"reflect"
	"unsafe"
)

// reflectNew returns a pointer to a new zero value of t.
func reflectNew(t reflect.Type) unsafe.Pointer { return reflect.New(t).UnsafePointer() }

// fieldLayout reports where the Go side puts field f of ty.
func fieldLayout(ty Type, f Field) (off, size uint64, err error) {
	switch {
	case f.Set != nil:
		obj := reflectNew(ty.Go)
		f.Set(obj)
		b := unsafe.Slice((*byte)(obj), ty.Go.Size())
		first, last := -1, -1
		for i, x := range b {
			if x != 0 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first < 0 {
			return 0, 0, fmt.Errorf("setter %s wrote nothing", f.Go)
		}
		for _, x := range b[first : last+1] {
			if x != 0xff {
				return 0, 0, fmt.Errorf("setter %s wrote a partial value", f.Go)
			}
		}
		n := uint64(last - first + 1)
		mask := ^uint64(0)
		if n < 8 {
			mask = 1<<(8*n) - 1
		}
		if got := f.Get(obj) & mask; got != mask {
			return 0, 0, fmt.Errorf("getter %s read %#x after the setter wrote %#x", f.Go, got, mask)
		}
		return uint64(first), n, nil
	case f.Ptr != nil:
		obj := reflectNew(ty.Go)
		p := f.Ptr(obj)
		return uint64(uintptr(p) - uintptr(obj)), uint64(f.Size), nil
	default:
		sf, ok := ty.Go.FieldByName(f.Go)
		if !ok {
			return 0, 0, fmt.Errorf("type %s has no field %s", ty.Go.Name(), f.Go)
		}
		return uint64(sf.Offset), uint64(sf.Type.Size()), nil
	}
}

func hexBytes(p unsafe.Pointer, n uintptr) string {
	return fmt.Sprintf("%x", unsafe.Slice((*byte)(p), n))
}
