package pqm

import "unsafe"

// reg32 returns the address of a 32-bit register of a mapped block.
func reg32(block []byte, off int) *uint32 {
	if off < 0 || off+4 > len(block) {
		panic("pqm: register offset outside the block")
	}
	return (*uint32)(unsafe.Pointer(&block[off]))
}

// word64 returns the 64-bit word at off of host memory, 8-byte aligned.
func word64(mem []byte, off int) *uint64 {
	if off < 0 || off+8 > len(mem) {
		panic("pqm: word outside the memory")
	}
	return (*uint64)(unsafe.Pointer(&mem[off]))
}

// pointerOf returns the address of a word as the driver takes it.
func pointerOf(p *uint64) unsafe.Pointer { return unsafe.Pointer(p) }
