package memory

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/leak"
	"golang.org/x/sys/unix"
)

// addrOf returns the address of b's first byte.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// alignOffset returns how many bytes from b's start the next a-aligned
// address is.
func alignOffset(b []byte, a uint64) uint64 {
	p := addrOf(b)
	return (a - p%a) % a
}

// mmapAnon maps n bytes of anonymous memory. Unlike unix.Mmap, the result
// may be trimmed and unmapped in parts with munmapRange.
func mmapAnon(n uint64, prot, flags int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), prot, flags)
	if err != nil {
		return nil, err
	}
	mem := unsafe.Slice((*byte)(p), n)
	leak.Mapped(mem, "host memory of AllocHost")
	return mem, nil
}

// munmapRange unmaps the pages of b[:cap(b)].
func munmapRange(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	b = b[:cap(b)]
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))); err != nil {
		return err
	}
	leak.Unmapped(b)
	return nil
}
