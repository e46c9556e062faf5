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

// The Go runtime reserves its heap arenas from fixed hint addresses: on
// linux/amd64 and arm64 the first is 0x00c000000000 and each further hint is
// 1 TiB above the previous one (runtime/malloc.go, mallocinit). Goroutine
// stacks come from the same arenas. Almost every program's heap lies in the
// first hint's terabyte, which is what onGoHeap recognises; memory the
// runtime placed elsewhere, after address-space exhaustion, is not detected.
const (
	goArenaStart = 0x00c000000000
	goArenaSize  = 1 << 40
)

// onGoHeap reports whether b lies in the Go heap's usual address range.
func onGoHeap(b []byte) bool {
	p := addrOf(b)
	end := p + uint64(len(b))
	return p < goArenaStart+goArenaSize && end > goArenaStart
}
