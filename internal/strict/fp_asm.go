//go:build amd64 || arm64

package strict

// framePointer returns its caller's frame pointer (BP on amd64, R29 on
// arm64): the address where the caller saved its own caller's frame
// pointer.
func framePointer() uintptr
