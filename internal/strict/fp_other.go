//go:build !amd64 && !arm64

package strict

// framePointer returns 0: the toolchain keeps no frame pointers here.
func framePointer() uintptr { return 0 }
