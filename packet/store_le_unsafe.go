//go:build amd64 || arm64

package packet

import "unsafe"

// store24 writes three little-endian 64-bit words to t[0:24] in one
// unaligned store each; amd64 and arm64 are little endian and allow it.
// t must hold at least 24 bytes.
func store24(t []byte, a, b, c uint64) {
	_ = t[23]
	*(*[3]uint64)(unsafe.Pointer(unsafe.SliceData(t))) = [3]uint64{a, b, c}
}
