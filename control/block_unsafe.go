package control

import (
	"sync/atomic"
	"unsafe"
)

// The registers of a mapped block are reached only through these two
// functions, as 32-bit atomics on an aligned word (offsets are checked by
// Block.reg; the mapping is page aligned, so an offset that is a multiple
// of 4 is an aligned address).

// load32 reads the register at byte offset off of b's mapping; the caller
// holds b.mu for reading and has checked off.
func (b *Block) load32(off int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b.mem[off])))
}

// store32 writes the register at byte offset off of b's mapping; the
// caller holds b.mu for reading and has checked off.
func (b *Block) store32(off int, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.mem[off])), v)
}
