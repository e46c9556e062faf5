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
//
// # What the driver leaves in a Pointer
//
// An answer written over a Pointer's word is an integer in a word the
// garbage collector reads as a pointer. That is harmless only because of
// what the integers are, which is why each view whose answer overlaps a
// Pointer names it. For WaitCSInterruptArgs, the driver
// (drivers/accel/habanalabs/common/command_submission.c,
// hl_interrupt_wait_ioctl in linux 6.12) clears the whole union, then
// writes out.status (HL_WAIT_CS_STATUS_*, 0 to 3) into the word's low half
// and out.flags (0 or HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD) into its high
// half: the word is at most 0x2_0000_0003. On an error it writes nothing
// and the address stays. The collector follows a word only into the heap
// arenas it reserved, which on 64-bit Linux start at 0xc0_0000_0000
// (runtime/malloc.go, mallocinit's arena hints) and otherwise lie where
// mmap places them, far above the first gigabytes; a word below 16 GiB is
// never followed. What would be followed is part of an address: an answer
// written into the low half alone leaves the high half of the address
// behind (0xc0_0000_0000, the start of the heap), which is why the driver's
// clearing matters and why a fake driver in a test must clear the union as
// well. Callers that keep such a structure for later (in a sync.Pool, say)
// clear it after each call, so that it holds neither an address nor an
// answer.
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
