package sim

import (
	"sync/atomic"
	"unsafe"
)

// reg32 returns the 32-bit register at byte offset off of a register
// window (a PDMA channel's CH_A block, shared with the user's mappings
// through a memfd). Users write such windows with plain 32-bit stores, as
// they do device registers; the simulator reads and writes them
// atomically.
func reg32(win []byte, off uint64) *atomic.Uint32 {
	_ = win[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&win[off]))
}

// words returns b, 4-byte aligned and a multiple of 4 bytes long, as 32-bit
// registers (a Gaudi3 sync manager's register memory, sm3.go, which the
// simulator reads and writes under the sync manager's lock).
func words(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
