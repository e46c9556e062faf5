package memory

import "unsafe"

// addrOf returns the address of b's first byte.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// alignOffset returns how many bytes from b's start the next a-aligned
// address is.
func alignOffset(b []byte, a uint64) uint64 {
	p := addrOf(b)
	return (a - p%a) % a
}
