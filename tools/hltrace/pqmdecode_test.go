package main

import (
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestDecodePQM feeds the calls a Gaudi3 program makes (map host memory
// for a ring and data, MAP_BLOCK and mmap a PDMA channel block, wait for
// an interrupt) with the block's registers and the ring in this process's
// memory, and checks the packets read back at each wait.
func TestDecodePQM(t *testing.T) {
	const (
		ringSize = 256
		memVA    = 0x1_0000_0000_0000
		handle   = 0x2000_0000_0000_3000
		ch       = 3
	)
	mem := make([]byte, 8192) // [0, ringSize) the ring, then data
	regs := make([]byte, 4096)
	memHost := uint64(uintptr(unsafe.Pointer(&mem[0])))
	regsHost := uint64(uintptr(unsafe.Pointer(&regs[0])))
	setReg := func(off uint64, v uint32) { binary.LittleEndian.PutUint32(regs[off:], v) }
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, ringSize-1)
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(memVA&0xffffffff))
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32(memVA>>32))
	var pi uint32
	push := func(fn func(b *packet.Builder)) {
		b := packet.NewBuilder(packet.Gaudi3PQM, nil)
		fn(&b)
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		for i, c := range b.Bytes() {
			mem[(pi+uint32(i))%ringSize] = c
		}
		pi += uint32(len(b.Bytes()))
		setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, pi)
	}

	pid := uint32(os.Getpid())
	d := newCBDecoder()
	var (
		pkts []pqmPacket
		errs []pqmError
	)
	feed := func(e *Event, asic device.ASIC) {
		e.raw.Hdr.Pid, e.asic = pid, asic
		d.observe(e, nil, nil) // as the printer does: mappings
		pkts, errs = d.observePQM(e, pkts[:0], errs[:0])
	}
	wait := func() {
		feed(synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 0, 1,
			&bpfWaitBody{Seq: memHost, TimeoutUs: 1, Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | 71<<20}), device.ASICUnknown)
		runtime.KeepAlive(mem)
		runtime.KeepAlive(regs)
	}
	text := func() string {
		var s string
		for i := range pkts {
			s += string(pkts[i].line(nil))
		}
		return s
	}
	m := synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
		&bpfMemBody{Op: hl.HL_MEM_OP_MAP, Flags: hl.HL_MEM_USERPTR, In: [3]uint64{memHost, 0, uint64(len(mem))}, Out: [2]uint64{memVA}})
	m.raw.Hdr.Pid = pid
	d.observe(m, nil, nil)
	// A MAP_BLOCK of a device hltrace does not know as a Gaudi3 is not
	// followed; one of a Gaudi3 is.
	mapBlock := synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
		&bpfMemBody{Op: hl.HL_MEM_OP_MAP_BLOCK, In: [3]uint64{g3.PDMAChannelBlock(ch)}, Out: [2]uint64{handle, 4096}})
	feed(mapBlock, device.Gaudi2)
	feed(synth(bpfCallCALL_MMAP, 0, int64(regsHost), 0, 1, &bpfMmapBody{Len: 4096, Off: handle}), device.ASICUnknown)
	push(func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	wait()
	if len(pkts)+len(errs) != 0 {
		t.Fatalf("a Gaudi2's block was followed: %s %+v", text(), errs)
	}
	d.mmaps = map[uint32][]hostRange{}
	d.rings = map[uint32][]*pqmRing{}
	pi = 0
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, 0)
	feed(mapBlock, device.Gaudi3)
	wait() // mapped, not yet mmapped: nothing to read
	if len(pkts)+len(errs) != 0 {
		t.Fatalf("before the mmap: %s %+v", text(), errs)
	}
	feed(synth(bpfCallCALL_MMAP, 0, int64(regsHost), 0, 1, &bpfMmapBody{Len: 4096, Off: handle}), device.ASICUnknown)

	src, dst, done := uint64(memVA+4096), uint64(memVA+6144), uint64(memVA+ringSize)
	push(func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: src, Dst: dst, Size: 1024, HostToDevice: true,
			WriteCompletion: true, CompletionAddr: done, CompletionData: 1})
		b.MsgLong(packet.MsgLong{Addr: g3.D0_PCIE_MSIX_BASE, Value: 71})
	})
	wait()
	got := text()
	for _, w := range []string{
		"    PDMA ch 3 msq=0 LIN_PDMA{Src:0x1000000001000 Dst:0x1000000001800 Size:1024",
		"src_host=" + hex(memHost+4096) + " dst_host=" + hex(memHost+6144) + "\n",
		"    PDMA ch 3 msq=40 MSG_LONG{",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("packets\n%s\nlack %q", got, w)
		}
	}
	if len(pkts) != 2 || len(errs) != 0 {
		t.Fatalf("%d packets, errors %+v:\n%s", len(pkts), errs, got)
	}
	j := pkts[0].json(t0)
	if j.Packet != "LIN_PDMA" || j.Size != 1024 || j.Channel != ch || j.SrcHost != hex(memHost+4096) {
		t.Errorf("JSON %+v", j)
	}

	// Nothing new: nothing printed. Then packets that wrap around the ring.
	wait()
	if len(pkts)+len(errs) != 0 {
		t.Fatalf("no new packets, got %s %+v", text(), errs)
	}
	for pi+40 <= ringSize {
		push(func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	}
	wait()
	n := len(pkts)
	push(func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x5a, Dst: dst, Size: 64, Memset: true})
	})
	wait()
	if n == 0 || len(pkts) != 1 || !strings.Contains(text(), "Memset") || pkts[0].Pos != pi-24 {
		t.Errorf("wrapped LIN_PDMA at %d: %s %+v", pi-24, text(), errs)
	}

	// The channel was reset: the counters restart from 0.
	pi = 0
	push(func(b *packet.Builder) { b.MsgLong(packet.MsgLong{Addr: g3.D0_PCIE_MSIX_BASE, Value: 72}) })
	wait()
	if len(pkts) != 1 || pkts[0].Pos != 0 || !strings.Contains(text(), "MSG_LONG") {
		t.Errorf("after a reset: %s %+v", text(), errs)
	}

	// More than the ring since the last wait: overwritten.
	pi += 2 * ringSize
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, pi)
	wait()
	if len(errs) != 1 || !strings.Contains(errs[0].Err, "overwritten") {
		t.Errorf("overrun: %+v", errs)
	}

	// A block whose mapping cannot be read (MMIO on hardware): said once.
	d.mmaps[pid] = []hostRange{{key: handle, host: 8, size: 4096}}
	pi += 8
	setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, pi)
	wait()
	if len(errs) != 1 || errs[0].Ch != ch || !strings.Contains(errs[0].Err, "MMIO") {
		t.Errorf("unreadable block: %+v", errs)
	}
	wait()
	if len(errs) != 0 {
		t.Errorf("said twice: %+v", errs)
	}

	// The close of the device file forgets its blocks.
	e := synth[bpfMmapBody](bpfCallCALL_CLOSE, 0, 0, 0, 1, nil)
	feed(e, device.ASICUnknown)
	if len(d.rings[pid]) != 0 {
		t.Errorf("rings after close: %d", len(d.rings[pid]))
	}
}
