package hl

import (
	"structs"
	"unsafe"
)

// Pointer is a 64-bit member that holds an address in the caller's memory,
// which the driver reads or writes while it serves the call: the buffer
// INFO answers into, the chunk arrays of a CS, the sequence array of a
// multi-CS wait, and so on. It mirrors a __u64 of the C structs.
//
// Unlike an integer, a Pointer is a pointer the garbage collector sees. What
// it points to therefore stays alive while the structure holding it does,
// and the compiler allocates it where it cannot move: memory a Pointer
// refers to never lives on a goroutine stack, which the runtime may copy
// elsewhere at any function call, even between two attempts of one ioctl.
// Memory outside the Go heap (from mmap, say) may be pointed at too.
//
// The generated structures use Pointer for every such plain member. A union
// member that holds an address keeps only a getter in the union's integer
// storage and is written through a view, such as CSChunksArgs, whose
// storage has a Pointer where the driver expects the address.
//
// After a call the driver may have written its answer over the members
// that held addresses (CS and MEMORY answer in the same union); set them
// again before reusing the structure.
type Pointer struct {
	_   structs.HostLayout
	ptr unsafe.Pointer
}

// NewPointer returns a Pointer to p, which may be nil.
func NewPointer(p unsafe.Pointer) Pointer { return Pointer{ptr: p} }

// SlicePointer returns a Pointer to the first element of s, or the null
// Pointer when s is empty.
func SlicePointer[E any](s []E) Pointer {
	if len(s) == 0 {
		return Pointer{}
	}
	return Pointer{ptr: unsafe.Pointer(unsafe.SliceData(s))}
}

// Addr returns the address p holds, as the driver sees it.
func (p Pointer) Addr() uint64 { return uint64(uintptr(p.ptr)) }

// IsNil reports whether p is the null pointer.
func (p Pointer) IsNil() bool { return p.ptr == nil }
