package sim

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The tests of this package play a C program talking to the driver: they
// put addresses into arguments as integers, bogus ones included, which the
// generated types only allow through Pointer fields and views. These
// helpers write the integer at the offset the view gives the member. Real
// memory they name is made to escape to the heap by addrFor, and kept alive
// in escaped, before its address is taken.

// putAddr stores addr at off bytes into the argument at base.
func putAddr(base unsafe.Pointer, off uintptr, addr uint64) {
	*(*uint64)(unsafe.Add(base, off)) = addr
}

func setChunksExecute(in *hl.CSIn, addr uint64) {
	putAddr(unsafe.Pointer(in), unsafe.Offsetof(hl.CSChunksArgs{}.ChunksExecute), addr)
}

func setChunksRestore(in *hl.CSIn, addr uint64) {
	putAddr(unsafe.Pointer(in), unsafe.Offsetof(hl.CSChunksArgs{}.ChunksRestore), addr)
}

func setEngines(in *hl.CSIn, addr uint64) {
	putAddr(unsafe.Pointer(in), unsafe.Offsetof(hl.CSEnginesArgs{}.Engines), addr)
}

func setEngineCores(in *hl.CSIn, addr uint64) {
	putAddr(unsafe.Pointer(in), unsafe.Offsetof(hl.CSEngineCoresArgs{}.EngineCores), addr)
}

func setSignalSeqArr(c *hl.CSChunk, addr uint64) {
	putAddr(unsafe.Pointer(c), unsafe.Offsetof(hl.CSSignalChunk{}.SignalSeqArr), addr)
}

func setWaitAddr(in *hl.WaitCSIn, addr uint64) {
	putAddr(unsafe.Pointer(in), unsafe.Offsetof(hl.WaitCSInterruptArgs{}.Addr), addr)
}

// setPointer stores a raw address in a Pointer field.
func setPointer(p *hl.Pointer, addr uint64) { putAddr(unsafe.Pointer(p), 0, addr) }
