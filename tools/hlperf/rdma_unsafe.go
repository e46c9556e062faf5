package main

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// waitByte spins until buf[off] holds v, the way ib_write_lat polls the
// last byte of its buffer for the peer's write, or ctx ends. The NIC
// writes the byte behind the Go compiler's back, so it is read with an
// atomic load of the aligned 32-bit word around it (buf is page-aligned
// mmap'd memory, so that word lies inside it), which the compiler may
// neither hoist out of the loop nor split.
func waitByte(ctx context.Context, buf []byte, off int, v byte) error {
	w := (*uint32)(unsafe.Pointer(&buf[off&^3]))
	shift := uint(off&3) * 8 // little-endian: amd64 and arm64
	for i := 1; byte(atomic.LoadUint32(w)>>shift) != v; i++ {
		if i%spinCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
