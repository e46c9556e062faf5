package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestDecodeCB feeds the calls a Gaudi2 user would make (map a host
// command buffer and a host data buffer, submit) and checks that the
// LIN_DMA packets are read back from this process's memory.
func TestDecodeCB(t *testing.T) {
	data := make([]byte, 8192)
	const dataVA, cbVA = 0x2000_0000, 0x1000_0000
	dataHost := uint64(uintptr(unsafe.Pointer(&data[0])))

	b := packet.NewBuilder(packet.Gaudi2, make([]byte, 0, 256))
	b.LinDMA(packet.LinDMA{Src: dataVA + 0x100, Dst: 0x1001_0000_0000, Size: 4096})
	b.Signal(3, false)
	b.LinDMA(packet.LinDMA{Src: 0xab, Dst: dataVA, Size: 64, Memset: true})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	cb := append(make([]byte, 0, 4096), b.Bytes()...)
	cbHost := uint64(uintptr(unsafe.Pointer(&cb[0])))

	pid := uint32(os.Getpid())
	mk := func(e *Event) *Event { e.raw.Hdr.Pid = pid; return e }
	d := newCBDecoder()
	var pkts []dmaPacket
	var errs []cbError
	feed := func(e *Event) { pkts, errs = d.observe(mk(e), pkts, errs) }
	feed(synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
		&bpfMemBody{Op: hl.HL_MEM_OP_MAP, Flags: hl.HL_MEM_USERPTR, In: [3]uint64{cbHost, 0, uint64(cap(cb))}, Out: [2]uint64{cbVA}}))
	feed(synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
		&bpfMemBody{Op: hl.HL_MEM_OP_MAP, Flags: hl.HL_MEM_USERPTR, In: [3]uint64{dataHost, 0, uint64(len(data))}, Out: [2]uint64{dataVA}}))
	cs := &bpfCsBody{NumExecute: 2, Nchunks: 2, Seq: 11}
	cs.Chunk[0] = bpfChunk{CbHandle: cbVA, Queue: 4, CbSize: uint32(len(cb)), Flags: hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB}
	cs.Chunk[1] = bpfChunk{CbHandle: 0x9999_0000, CbSize: 24, Flags: hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB}
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, cs))
	runtime.KeepAlive(cb)
	runtime.KeepAlive(data)

	if len(pkts) != 2 {
		t.Fatalf("got %d packets, want 2: %+v (errors %+v)", len(pkts), pkts, errs)
	}
	var lines string
	for i := range pkts {
		lines += string(pkts[i].line(nil))
	}
	for _, want := range []string{
		"seq=11 chunk0 q=4 +0x0 LIN_DMA src=0x20000100(host " + hex(dataHost+0x100) + ") dst=0x100100000000 size=4096",
		"LIN_DMA memset value=0xab dst=0x20000000(host " + hex(dataHost) + ") size=64",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("packets\n%s\nlack %q", lines, want)
		}
	}
	if len(errs) != 1 || errs[0].Chunk != 1 || !strings.Contains(errs[0].Err, "no mapping seen") {
		t.Errorf("errors %+v, want chunk1 unmapped", errs)
	}

	// A kernel CB: the process mmaps it from the device at handle << PAGE_SHIFT.
	const handle = 0x4000_0003
	d = newCBDecoder()
	pkts, errs = pkts[:0], errs[:0]
	feed(synth(bpfCallCALL_MMAP, 0, int64(cbHost), 0, 1, &bpfMmapBody{Len: uint64(cap(cb)), Off: handle << pageShift()}))
	cs = &bpfCsBody{NumExecute: 1, Nchunks: 1, Seq: 12}
	cs.Chunk[0] = bpfChunk{CbHandle: handle, CbSize: uint32(len(cb))}
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, cs))
	runtime.KeepAlive(cb)
	if len(pkts) != 2 || len(errs) != 0 || pkts[0].Size != 4096 {
		t.Errorf("kernel CB: packets %+v errors %+v", pkts, errs)
	}
}
