//go:build amd64 || arm64

package hl

import "unsafe"

// memOutOf returns the out member of a MEMORY argument view, which starts
// at offset 0 as in union hl_mem_args.
func memOutOf(a *MemRegDmabufFDArgs) *MemOut { return (*MemOut)(unsafe.Pointer(a)) }
