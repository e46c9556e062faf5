package sim

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The Gaudi3 calls of a fuzz program: user DMA on Gaudi3 bypasses command
// submission (pqm.go), so besides the ioctls its programs set up PDMA
// channels (opChan: MAP_BLOCK, mmap of the block, a ring in arena host
// memory mapped to the device, the channel's registers), store fuzzed
// values into the registers of a mapped block (opReg) and write PQM
// packets into a channel's ring and move its producer index (opPQM).
// Unmapping ring or buffer memory under a running channel is MEMORY UNMAP
// of the host mapping or opHost; resets, reopens and closes with channels
// running are the common ops.

// FuzzProgramGaudi3 runs programs against a simulated Gaudi3 (out-of-tree
// driver), whose programs also drive the PDMA channels' queue managers
// directly. Seeds: testdata/fuzz/FuzzProgramGaudi3.
func FuzzProgramGaudi3(f *testing.F) { fuzzProgram(f, Gaudi3, DriverOutOfTree) }

// numOpChoices is how many ops the program's calls choose from.
func (r *runner) numOpChoices() int {
	switch {
	case r.asic == Gaudi3:
		return int(numOps)
	case r.oot():
		return int(numOOTOps)
	}
	return int(numUpstreamOps)
}

// gaudi3Specials adds the Gaudi3 interesting values: channel blocks and
// registers, the MSI-X doorbell, user interrupts.
func gaudi3Specials(spec *[numKinds][]uint64) {
	first := uint64(g3.DefaultHWIPInfo.FirstAvailableInterruptID)
	last := first + uint64(g3.DefaultHWIPInfo.NumberOfUserInterrupts) - 1
	spec[kIRQ] = append(spec[kIRQ], first, first+1, last, last+1, first-1)
	var blocks []uint64
	for _, ch := range []int{0, 1, 5, 6, 11, 12, 22, 23} {
		blocks = append(blocks, g3.PDMAChannelBlock(ch))
	}
	b0 := g3.PDMAChannelBlock(0)
	spec[kBlockAddr] = append(append(blocks, b0+4, b0+0xfff, b0-pqmPage, b0+g3.PDMA_CH_B_OFFSET,
		b0+g3.PDMA_CMN_B_OFFSET, g3.PDMAChannelBlock(23)+pqmPage), spec[kBlockAddr]...)
	spec[kAddr] = append(spec[kAddr], g3.D0_PCIE_MSIX_BASE, g3.D1_PCIE_MSIX_BASE, g3.D0_PCIE_MSIX_BASE+2,
		b0+g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, b0+g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0, b0+g3.PDMA_CH_A_PQM_CH_MSQ_PI,
		b0+g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PDMAChannelBlock(1)+g3.PDMA_CH_A_PQM_CH_FENCE_INC_0+4,
		g3.PDMAChannelBlock(23)+g3.PDMA_CH_A_PQM_CH_MSQ_PI, b0+g3.PDMA_CMN_B_OFFSET+pqmCmnBCPMsgBase0,
		b0+g3.PDMA_CMN_B_OFFSET+pqmCmnBCPMsgBase0+4, b0+g3.PDMA_CH_B_OFFSET, b0+1)
}

// chanRec is a PDMA channel a program set up: its block mapping and its
// ring, arena host memory at off (ring bytes [off, off+size)) that the
// device sees at va.
type chanRec struct {
	ch   int
	m    *mapRec
	off  uint64
	va   uint64
	size uint64
	pi   uint32 // the producer count the program last wrote
}

func (c *chanRec) String() string { return fmt.Sprintf("ch%d", c.ch) }

// memIoctlArena issues a MEMORY ioctl on the compute file with its
// argument in the arena.
func (r *runner) memIoctlArena(fill func(in *hl.MemIn)) (*hl.MemArgs, error) {
	f := r.pickFile(0)
	if f == nil {
		return nil, errNoFile
	}
	a := (*hl.MemArgs)(unsafe.Pointer(&r.a.alloc(int(unsafe.Sizeof(hl.MemArgs{})))[0]))
	fill(a.In())
	return a, f.f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(a))
}

// hostVALocked returns the device address of arena host offset o
// (relative to hostOff) through the newest host mapping covering it, or
// false; r.mu is held.
func (r *runner) hostVALocked(o uint64) (uint64, bool) {
	addr := r.a.base + hostOff + o
	for i := len(r.hostMaps) - 1; i >= 0; i-- {
		if hm := r.hostMaps[i]; addr >= hm.addr && addr-hm.addr < hm.size {
			return hm.va + (addr - hm.addr), true
		}
	}
	return 0, false
}

// Ring sizes opChan chooses from (MSQ_SIZE+1), the last ones not powers
// of two.
var ringSizes = [...]uint64{4096, 64, 256, 1024, 8192, 65536, 1 << 20, 24, 3000}

// opChan sets up a PDMA channel as Habana's tests do: MAP_BLOCK of its
// CH_A block, an mmap of the handle, the arena's host memory mapped to the
// device (once), DESC_SUBMIT_FIFO_CFG, MSQ_SIZE and MSQ_BASE written.
func (r *runner) opChan(rd *reader) func() string {
	ch := rd.num("ch")
	size := rd.choice("size", len(ringSizes))
	off := rd.num("off")
	mode := rd.num("mode")
	delta := rd.num("delta")
	return func() string {
		chn := int(r.u(ch, kAny) % g3.NUM_OF_PDMA_CH)
		a, err := r.memIoctlArena(func(in *hl.MemIn) {
			in.Op = hl.HL_MEM_OP_MAP_BLOCK
			in.MapBlock().BlockAddr = g3.PDMAChannelBlock(chn)
		})
		if err != nil {
			return "MAP_BLOCK " + errStr(err)
		}
		h, bs := a.Out().BlockHandle(), uint64(a.Out().BlockSize())
		r.mu.Lock()
		r.keepLocked(kBlock, h)
		r.bufSize[h] = bs
		r.mu.Unlock()
		fr := r.pickFile(0)
		b, err := fr.f.Mmap(int64(h), int(bs), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return "mmap " + errStr(err)
		}
		m := &mapRec{b: b, owner: fr, what: "block", handle: h, prot: unix.PROT_READ | unix.PROT_WRITE, live: true}
		r.mu.Lock()
		r.maps = append(r.maps, m)
		_, mapped := r.hostVALocked(0)
		r.mu.Unlock()
		if !mapped {
			a, err := r.memIoctlArena(func(in *hl.MemIn) {
				in.Op = hl.HL_MEM_OP_MAP
				in.Flags = hl.HL_MEM_USERPTR
				in.MapHost().HostVirtAddr = r.a.base + hostOff
				in.MapHost().MemSize = hostSize
			})
			if err != nil {
				return "host MAP " + errStr(err)
			}
			va := a.Out().DeviceVirtAddr()
			r.mu.Lock()
			r.keepLocked(kVA, va)
			r.hostMaps = append(r.hostMaps, hostMap{va: va, addr: r.a.base + hostOff, size: hostSize})
			r.mu.Unlock()
		}
		n := ringSizes[size]
		o := r.u(off, kSize) % (hostSize - n) &^ 4095
		dv := r.u(delta, kAny)
		cfg := uint32(r.or(mode, kAny, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM))
		r.mu.Lock()
		va, _ := r.hostVALocked(o)
		c := &chanRec{ch: chn, m: m, off: hostOff + o, va: va + dv, size: n}
		r.chans = append(r.chans, c)
		r.keepLocked(kVA, c.va)
		r.mu.Unlock()
		reg32(b, g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Store(cfg)
		reg32(b, g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Store(uint32(n - 1))
		reg32(b, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Store(uint32(c.va))
		reg32(b, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H).Store(uint32(c.va >> 32))
		return fmt.Sprintf("ok ch %d ring %#x at va %#x (arena %#x)", chn, n, c.va, c.off)
	}
}

// g3Regs are the registers opReg stores to by choice; the last choice is
// any 4-byte offset of the window.
var g3Regs = [...]uint64{
	g3.PDMA_CH_A_PQM_CH_MSQ_PI, g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L,
	g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, g3.PDMA_CH_A_PQM_CH_MSQ_CI,
	g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, g3.PDMA_CH_A_PQM_CH_FENCE_INC_0 + 4, g3.PDMA_CH_A_PQM_CH_FENCE_INC_0 + 12,
	g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0, g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0 + 8, g3.PDMA_CH_A_PQM_CH_CQ_RECONFIG,
	g3.PDMA_CH_A_PQM_CH_PI, g3.PDMA_CH_A_PQM_CH_CTRL_0, g3.PDMA_CH_A_CTX_OFFSET,
}

// opReg stores a value into a register of a live block mapping; by
// default the value a user would store (the ring's own values, a reset,
// an increment of 1).
func (r *runner) opReg(rd *reader) func() string {
	m := rd.num("m")
	reg := rd.choice("reg", len(g3Regs)+1)
	var off val
	if reg == len(g3Regs) {
		off = rd.num("off")
	}
	v := rd.num("v")
	return func() string {
		iv, ov := r.u(m, kAny), r.u(off, kAny)
		xv, xdef := r.u(v, kAny), v.zero()
		r.mu.Lock()
		defer r.mu.Unlock()
		var live []*mapRec
		for _, mr := range r.maps {
			if mr.live && mr.what == "block" && len(mr.b) >= pqmPage && mr.prot&unix.PROT_WRITE != 0 {
				live = append(live, mr)
			}
		}
		if len(live) == 0 {
			return "no block mapping"
		}
		mr := live[len(live)-1-int(iv%uint64(len(live)))]
		var c *chanRec
		for _, cr := range r.chans {
			if cr.m == mr {
				c = cr
			}
		}
		o := ov % pqmPage &^ 3
		if reg < len(g3Regs) {
			o = g3Regs[reg]
		}
		var natural uint64 = 1
		if c != nil {
			switch o {
			case g3.PDMA_CH_A_PQM_CH_MSQ_PI:
				natural = uint64(c.pi)
			case g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L:
				natural = c.va & 0xffffffff
			case g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H:
				natural = c.va >> 32
			case g3.PDMA_CH_A_PQM_CH_MSQ_SIZE:
				natural = c.size - 1
			}
		}
		x := uint32(xv)
		if xdef {
			x = uint32(natural)
		}
		if c != nil {
			switch o {
			case g3.PDMA_CH_A_PQM_CH_MSQ_PI:
				c.pi = x
			case g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG:
				c.pi = 0 // the channel restarts its counters
			}
		}
		reg32(mr.b, o).Store(x)
		return fmt.Sprintf("%#x = %#x in block %#x", o, x, mr.handle)
	}
}

// PQM packet types opPQM writes.
const (
	pqLinPDMA = iota
	pqMsgLong
	pqMsgShort
	pqFence
	pqWait
	pqNop
	pqStop
	pqChWReg32
	pqChWRegBulk
	pqRaw
	pqLinPDMA2 // LIN_PDMA again: most packets copy
	pqLinPDMA3
	numPQ
)

// readPQMPackets reads up to maxPackets PQM packets.
func (r *runner) readPQMPackets(rd *reader) func() []byte {
	n := rd.choice("np", maxPackets+1)
	type pkt struct {
		typ                 int
		am, bm              int
		a, b, c, d, e, f, g val
	}
	ps := make([]pkt, n)
	for i := range ps {
		p := fmt.Sprintf("p%d.", i)
		ps[i].typ = rd.choice(p+"t", numPQ)
		switch ps[i].typ {
		case pqLinPDMA, pqLinPDMA2, pqLinPDMA3:
			// a, b: source and destination (host offsets or, with am
			// or bm, device addresses); c size; d option bits; e
			// completion address, f completion data; g fence target.
			ps[i].am, ps[i].bm = rd.choice(p+"am", 2), rd.choice(p+"bm", 2)
			ps[i].a, ps[i].b, ps[i].c, ps[i].d = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c"), rd.num(p+"d")
			ps[i].e, ps[i].f, ps[i].g = rd.num(p+"e"), rd.num(p+"f"), rd.num(p+"g")
		case pqMsgLong:
			ps[i].am = rd.choice(p+"am", 2)
			ps[i].a, ps[i].b, ps[i].c = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c")
		case pqNop, pqStop:
			ps[i].a = rd.num(p + "a")
		case pqRaw:
			ps[i].a, ps[i].b, ps[i].c, ps[i].d = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c"), rd.num(p+"d")
		default:
			ps[i].a, ps[i].b, ps[i].c = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c")
		}
	}
	firstIRQ := uint64(r.d.prof.firstUserInterrupt)
	return func() []byte {
		b := packet.NewBuilder(packet.Gaudi3PQM, nil)
		addr := func(mode int, v val) uint64 {
			if mode == 1 {
				return r.u(v, kAddr)
			}
			o := r.u(v, kSize) % hostSize
			r.mu.Lock()
			va, ok := r.hostVALocked(o)
			r.mu.Unlock()
			if !ok {
				return r.u(v, kAddr)
			}
			return va
		}
		for _, p := range ps {
			mark := b.Len()
			eb := r.u(p.a, kAny)&(1<<62) != 0
			switch p.typ {
			case pqLinPDMA, pqLinPDMA2, pqLinPDMA3:
				size := r.u(p.c, kSize)
				if size > maxDMASize {
					size %= maxDMASize
				}
				opt := r.u(p.d, kAny)
				l := packet.LinPDMA{Src: addr(p.am, p.a), Dst: addr(p.bm, p.b), Size: uint32(size),
					Memset: opt&1 != 0, WriteCompletion: opt&2 == 0, Fence: opt&4 != 0, Endian: uint8(opt>>3) & 3,
					Header: packet.Header{EngineBarrier: opt&32 != 0}, HostToDevice: opt&64 != 0,
					IncContextID: opt&128 != 0, AddOffset: opt&256 != 0, AdvanceCompletionQueue: opt&512 != 0}
				if l.WriteCompletion {
					l.CompletionAddr = g3.D0_PCIE_MSIX_BASE
					if !p.e.zero() {
						l.CompletionAddr = addr(int(opt>>10&1), p.e)
					}
					l.CompletionData = uint32(r.or(p.f, kIRQ, firstIRQ))
				}
				if l.Fence {
					t := r.u(p.g, kAny)
					l.FenceID, l.FenceTarget, l.FenceDec = uint8(t&3), uint16(t>>2&0x3fff), uint8(t>>16&15)
				}
				b.LinPDMA(l)
			case pqMsgLong:
				a := uint64(g3.D0_PCIE_MSIX_BASE)
				if !p.a.zero() {
					a = addr(p.am, p.a)
				}
				b.MsgLong(packet.MsgLong{Addr: a, Value: uint32(r.or(p.b, kIRQ, firstIRQ)), Op: packet.MsgOp(r.u(p.c, kAny) & 3)})
			case pqMsgShort:
				v := r.u(p.c, kAny)
				b.MsgShort(packet.MsgShort{Value: uint32(r.u(p.a, kAny)), Offset: uint16(r.u(p.b, kAny)),
					Base: uint8(v & 7), Op: packet.MsgOp(v >> 3 & 3), DW: v&32 != 0})
			case pqFence:
				v := r.u(p.c, kAny)
				b.Gaudi3Fence(packet.Gaudi3Fence{ID: uint8(r.u(p.a, kAny) & 3), Target: uint16(r.u(p.b, kAny) & 0x3fff),
					Dec: uint8(v & 15), ChannelID: uint8(v >> 4 & 31)})
			case pqWait:
				b.Wait(packet.Wait{ID: uint8(r.u(p.a, kAny) & 3), Inc: uint8(r.u(p.b, kAny) & 15), Cycles: uint32(r.u(p.c, kAny) & 0xffffff)})
			case pqNop:
				b.Nop(packet.Nop{Header: packet.Header{EngineBarrier: eb}})
			case pqStop:
				b.Stop(packet.Stop{Header: packet.Header{EngineBarrier: eb}})
			case pqChWReg32:
				v := r.u(p.c, kAny)
				b.ChWReg32(packet.ChWReg32{Value: uint32(r.u(p.a, kAny)), Offset: uint16(r.u(p.b, kAny) & 0xfff), BlockB: v&1 != 0})
			case pqChWRegBulk:
				v := r.u(p.c, kAny)
				w := packet.ChWRegBulk{Offset: uint16(r.u(p.b, kAny) & 0xfff), BlockB: v&1 != 0, Values: make([]uint64, v>>1%4)}
				for i := range w.Values {
					w.Values[i] = r.u(p.a, kAny) + uint64(i)
				}
				b.ChWRegBulk(w)
			case pqRaw:
				// Raw words: any opcode but LIN_PDMA, whose size would
				// not be bounded.
				w := []uint64{r.u(p.a, kAny), r.u(p.b, kAny), r.u(p.c, kAny)}
				if packet.Opcode(w[0]>>56&0x1f) == packet.OpLinPDMA {
					w[0] ^= 1 << 59
				}
				buf := b.Bytes()
				for _, x := range w[:1+r.u(p.d, kAny)%3] {
					buf = binary.LittleEndian.AppendUint64(buf, x)
				}
				b.Reset(buf)
			}
			if b.Err() != nil {
				b.Reset(b.Bytes()[:mark])
			}
		}
		return b.Bytes()
	}
}

// opPQM writes PQM packets into a channel's ring at its producer count
// (wrapping) and moves MSQ_PI: by the bytes written, not at all, by more
// than was written, or to a fuzzed value.
func (r *runner) opPQM(rd *reader) func() string {
	ci := rd.num("c")
	how := rd.choice("pi", 4)
	var piv val
	if how == 3 {
		piv = rd.num("piv")
	}
	build := r.readPQMPackets(rd)
	return func() string {
		pkts := build()
		iv, pv := r.u(ci, kAny), r.u(piv, kAny)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.chans) == 0 {
			return "no channel"
		}
		c := r.chans[len(r.chans)-1-int(iv%uint64(len(r.chans)))]
		if uint64(len(pkts)) > c.size {
			pkts = pkts[:c.size&^7]
		}
		res := fmt.Sprintf("%v: %d bytes at %#x", c, len(pkts), c.pi)
		if r.a.hostWritable(c.off, c.size) {
			for i, x := range pkts {
				r.a.mem[c.off+(uint64(c.pi)+uint64(i))%c.size] = x
			}
		} else {
			res += " (ring pages not writable: not written)"
		}
		switch how {
		case 0:
			c.pi += uint32(len(pkts))
		case 1:
			return res + ", MSQ_PI not moved"
		case 2:
			c.pi += uint32(len(pkts)) + 8
		case 3:
			c.pi = uint32(pv)
		}
		if !c.m.live {
			return res + ", block unmapped"
		}
		reg32(c.m.b, g3.PDMA_CH_A_PQM_CH_MSQ_PI).Store(c.pi)
		return res + fmt.Sprintf(", MSQ_PI %#x", c.pi)
	}
}

// gaudi3Seeds are the seeds of FuzzProgramGaudi3 (fuzzseed_unsafe_test.go
// runs them).
var gaudi3Seeds = []seedProg{
	{
		// The user flow of Habana's tests: a channel set up, a memset
		// and a copy between host buffers, the copy's completion
		// written to host memory, the doorbell, and an interrupt wait
		// on the completion word.
		name: "pqm-copy-irq", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_HW_IP_INFO},
				{"call": opChan},
				{"call": opPQM, "np": 3,
					"p0.t": pqLinPDMA, "p0.am": 1, "p0.a": lit(0x1122334455667788), "p0.b": lit(0x10000), "p0.c": lit(4096), "p0.d": 3,
					"p1.t": pqLinPDMA, "p1.a": lit(0x10000), "p1.b": lit(0x20000), "p1.c": lit(4096), "p1.e": lit(0x30000), "p1.f": 1,
					"p2.t": pqMsgLong},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(6)},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 1, "ok ch 0")
			wantLine(t, r, 2, "MSQ_PI 0x50")
			wantLine(t, r, 3, "ok status 0")
		},
	},
	{
		// A 256-byte ring that wraps inside the last packets.
		name: "pqm-memset-wrap", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			memsets := func(n int) call {
				c := call{"call": opPQM, "np": n}
				for i := range n {
					p := fmt.Sprintf("p%d.", i)
					c[p+"t"], c[p+"am"], c[p+"a"], c[p+"b"], c[p+"c"], c[p+"d"] = pqLinPDMA, 1, lit(0xa5a5a5a5a5a5a5a5), lit(uint64(0x10000+i*0x1000)), lit(4096), 3
				}
				return c
			}
			return []call{
				{"call": opChan, "size": 2},
				memsets(5),
				{"call": opSleep, "d": 4},
				memsets(5),
				{"call": opSleep, "d": 4},
				{"call": opPQM, "np": 2,
					"p0.t": pqLinPDMA, "p0.am": 1, "p0.a": lit(0x5a), "p0.b": lit(0x40000), "p0.c": 8, "p0.d": 1, "p0.e": lit(0x30000), "p0.f": 1,
					"p1.t": pqMsgLong},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(6)},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 5, "56 bytes at 0xf0")
			wantLine(t, r, 6, "ok status 0")
		},
	},
	{
		// A FENCE nothing satisfies blocks the channel; an interrupt
		// wait times out; a reset stops the channel and clears its
		// registers; the channel set up again works.
		name: "pqm-fence-reset", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			return []call{
				{"call": opChan},
				{"call": opPQM, "np": 2, "p0.t": pqFence, "p0.b": 5, "p1.t": pqMsgLong},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(5)},
				{"call": opReset},
				{"call": opChan},
				{"call": opPQM, "np": 2,
					"p0.t": pqLinPDMA, "p0.am": 1, "p0.a": lit(0x77), "p0.b": lit(0x10000), "p0.c": 64, "p0.d": 1, "p0.e": lit(0x30000), "p0.f": 1,
					"p1.t": pqMsgLong},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(6)},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 2, "ok status 1") // HL_WAIT_CS_STATUS_BUSY
			wantLine(t, r, 6, "ok status 0")
		},
	},
	{
		// STOP halts the channel (cp_stop_op) before a copy, and the PDMA
		// SEI event asks for a reset, which the registered eventfd
		// postpones behind the release watchdog (seiError); a write of
		// DESC_SUBMIT_FIFO_CFG restarts the channel meanwhile.
		name: "pqm-stop", asics: g3only, drivers: oot, hdr: call{"watchdog": 1}, // 10 s
		calls: func(ASIC) []call {
			copyDone := call{"call": opPQM, "np": 2,
				"p0.t": pqLinPDMA, "p0.am": 1, "p0.a": lit(0x77), "p0.b": lit(0x10000), "p0.c": 64, "p0.d": 1, "p0.e": lit(0x30000), "p0.f": 1,
				"p1.t": pqMsgLong}
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_REGISTER_EVENTFD, "u0": res(0)},
				{"call": opChan},
				{"call": opPQM, "np": 1, "p0.t": pqStop},
				copyDone,
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(5)},
				{"call": opInfo, "op": hl.HL_INFO_UNDEFINED_OPCODE_EVENT},
				{"call": opReg, "reg": 1},
				copyDone,
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(6)},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			// The copy behind the STOP never completes: its wait times
			// out (status 1), or the postponed reset ends it (aborted:
			// status 3 or EIO) or answers it (EBUSY while the watchdog
			// runs).
			if l := answer(r, 4); !strings.Contains(l, "ok status 1") && !strings.Contains(l, "ok status 3") &&
				!strings.HasPrefix(l, "EIO") && !strings.HasPrefix(l, "EBUSY") {
				t.Errorf("the wait for the copy behind a STOP answered %q", l)
			}
			wantLine(t, r, 5, "ok")
			wantLine(t, r, 6, "0x1b4 = 0x1")
			if r.d.PQMErrors() == 0 {
				t.Error("no channel error for the STOP")
			}
			// The registered eventfd postpones the reset: nothing kills
			// the file.
			if l := lines(r, "EOWNERDEAD"); len(l) != 0 {
				t.Errorf("calls found the file killed: %q", l)
			}
		},
	},
	{
		// A misaligned ring base, then a base no mapping covers (a
		// page fault), then garbage packets; an eventfd is registered,
		// so the reset the PDMA SEI events ask for waits for the release
		// watchdog (seiError).
		name: "pqm-bad-ring", asics: g3only, drivers: oot, hdr: call{"watchdog": 1}, // 10 s
		calls: func(ASIC) []call {
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_REGISTER_EVENTFD, "u0": res(0)},
				{"call": opChan, "delta": 4},
				{"call": opPQM, "np": 1, "p0.t": pqNop},
				{"call": opSleep, "d": 4},
				{"call": opReg, "reg": 1},
				{"call": opReg, "reg": 3, "v": lit(0x1234)},
				{"call": opSleep, "d": 4},
				{"call": opPQM, "np": 1, "p0.t": pqNop},
				{"call": opSleep, "d": 4},
				{"call": opInfo, "op": hl.HL_INFO_PAGE_FAULT_EVENT},
				{"call": opChan},
				{"call": opSleep, "d": 4},
				{"call": opPQM, "np": 2, "p0.t": pqRaw, "p0.a": lit(undefinedPQMOpcode()<<56 | 0xcafef00d), "p1.t": pqChWRegBulk, "p1.b": lit(0x1f8), "p1.c": 5},
				{"call": opSleep, "d": 4},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 9, "ok")
			wantLine(t, r, 10, "ok ch 0")
			if r.d.PQMErrors() < 3 {
				t.Errorf("%d channel errors, want a ring error, a page fault and an undefined packet", r.d.PQMErrors())
			}
		},
	},
	{
		// A copy queued behind a FENCE into a host buffer that is
		// unmapped before the fence opens: a page fault, reported, and
		// the program goes on.
		name: "pqm-unmap-buffer", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			return []call{
				{"call": opChan},
				{"call": opMem, "kind": mkMapHost, "host": ptrTo(pArena, 0, hostOff+0x100000), "size": lit(0x10000)},
				{"call": opPQM, "np": 3, "p0.t": pqFence, "p0.b": 1, "p0.c": 1,
					"p1.t": pqLinPDMA, "p1.bm": 1, "p1.a": lit(0x10000), "p1.b": res(0), "p1.c": 4096, "p1.d": 2,
					"p2.t": pqMsgLong},
				{"call": opMem, "kind": mkUnmap, "a0": res(0)},
				{"call": opReg, "reg": 6},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(5)},
				{"call": opInfo, "op": hl.HL_INFO_PAGE_FAULT_EVENT},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 3, "ok")
			if r.d.PQMErrors() == 0 {
				t.Error("no channel error for the copy into unmapped memory")
			}
		},
	},
	{
		// Two channels: channel 0 opens channel 1's fence with a
		// MSG_LONG to its FENCE_INC_0; channel 1's copy then completes
		// through the doorbell.
		name: "pqm-two-channels", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			return []call{
				{"call": opChan},
				{"call": opChan, "ch": 1, "off": lit(0x1000)},
				{"call": opPQM, "np": 2,
					"p0.t": pqLinPDMA, "p0.a": lit(0x10000), "p0.b": lit(0x20000), "p0.c": lit(0x2000), "p0.d": 4, "p0.g": 1<<2 | 1<<16, "p0.e": lit(0x30000), "p0.f": 1,
					"p1.t": pqMsgLong},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(4)},
				{"call": opPQM, "c": 1, "np": 1, "p0.t": pqMsgLong, "p0.am": 1, "p0.a": lit(g3.PDMAChannelBlock(1) + g3.PDMA_CH_A_PQM_CH_FENCE_INC_0), "p0.b": 1},
				{"call": opWait, "kind": waitUserAddr, "target": 1, "addr": ptrTo(pArena, 0, hostOff+0x30000), "timeout": sp(6)},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 1, "ok ch 1")
			wantLine(t, r, 3, "ok status 1")
			wantLine(t, r, 5, "ok status 0")
		},
	},
	{
		// MAP_BLOCK of every kind of address: a user channel, channel
		// 23 (the driver's), inside a block, CH_B, the doorbell; mmap
		// of the handle whole, too long, and at an offset; CS refused;
		// a reopen and a close with a channel running.
		name: "map-block", asics: g3only, drivers: oot,
		calls: func(ASIC) []call {
			return []call{
				{"call": opMem, "kind": mkMapBlock},
				{"call": opMem, "kind": mkMapBlock, "a0": lit(g3.PDMAChannelBlock(23))},
				{"call": opMem, "kind": mkMapBlock, "a0": lit(g3.PDMAChannelBlock(0) + 4)},
				{"call": opMem, "kind": mkMapBlock, "a0": lit(g3.PDMAChannelBlock(0) + g3.PDMA_CH_B_OFFSET)},
				{"call": opMem, "kind": mkMapBlock, "a0": lit(g3.D0_PCIE_MSIX_BASE)},
				{"call": opMmap, "which": 2, "h": res(0)},
				{"call": opMmap, "which": 2, "h": res(0), "len": lit(8192)},
				{"call": opMmap, "which": 2, "h": res(0), "delta": lit(4096)},
				{"call": opReg, "reg": len(g3Regs), "off": lit(0xffc), "v": lit(0xffffffff)},
				{"call": opMunmap},
				{"call": opCS},
				{"call": opChan, "ch": 5},
				{"call": opPQM, "np": 1, "p0.t": pqFence, "p0.b": 3},
				{"call": opFile, "mode": 0},
				{"call": opChan, "ch": 23},
				{"call": opChan, "ch": 22},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok block")
			wantLine(t, r, 1, "EINVAL")
			wantLine(t, r, 4, "EINVAL")
			wantLine(t, r, 5, "ok 4096 bytes")
			wantLine(t, r, 6, "EINVAL")
			wantLine(t, r, 10, "EINVAL")
			wantLine(t, r, 11, "ok ch 5")
			wantLine(t, r, 14, "MAP_BLOCK EINVAL")
			wantLine(t, r, 15, "ok ch 22")
		},
	},
}

func init() {
	// Resets beside mmaps of a channel block (TestPQMResetBesideBlockMmap).
	calls := []call{{"call": opMem, "kind": mkMapBlock, "a0": lit(g3.PDMAChannelBlock(4))}}
	for range 6 {
		calls = append(calls, call{"call": opReset, "async": 3}, call{"call": opMmap, "which": 2, "h": res(0)}, call{"call": opJoin})
	}
	gaudi3Seeds = append(gaudi3Seeds, seedProg{
		name: "pqm-reset-beside-mmap", asics: g3only, drivers: oot,
		calls: func(ASIC) []call { return calls },
		check: func(t *testing.T, _ ASIC, r *runner) { wantLine(t, r, 2, "ok 4096 bytes") },
	})
}

var g3only = []ASIC{Gaudi3}

// undefinedPQMOpcode is the first opcode a PQM does not execute.
func undefinedPQMOpcode() uint64 {
	for op := packet.Opcode(0); ; op++ {
		if !packet.Gaudi3PQM.Has(op) {
			return uint64(op)
		}
	}
}
