package leak

import "unsafe"

// addrOf returns the address of b's first byte, as an integer: the record
// never dereferences it.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
