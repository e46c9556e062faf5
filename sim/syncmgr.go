package sim

import (
	"sync"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// The sync manager: sync objects (SOBs) that engines add to or set with
// MSG_SHORT and MSG_LONG writes, and monitors that watch a group of eight
// SOBs and, once armed, write their payload (32 bits of data to a 64-bit
// address) when the watched SOBs reach the armed value. Gaudi has four
// sync managers (east-north, east-south, west-north, west-south; the
// driver's sync stream uses west-south), Gaudi2 one per dcore. Their
// registers sit in the CFG space at the addresses of the ASIC's register
// map; the QMANs reach them through the MSG_SHORT base registers the
// driver programs (queues.go), or through MSG_LONG and monitor payloads
// with absolute addresses.
//
// A write to a SOB register takes the MSG_SHORT SOB-update layout: bits
// 14:0 the value, bit 31 add (else set); the SOB holds 15 bits and wraps.
// Arming evaluates the monitor at once; every SOB change evaluates the
// armed monitors of its group. A monitor fires once and disarms.
//
// Gaudi2 extras, as hl-thunk's tests use them (the kernel headers name the
// fields; their behaviour here is the simulator's reading):
//   - Long SOBs: an update with the long bit (24) treats SOBs id..id+3 as
//     one 60-bit value, 15 bits each, low first: a set writes the value to
//     id and zeroes the other three, an add adds to the 60-bit value.
//   - MON_CONFIG: long_sob (bit 0) makes the monitor compare the 60-bit
//     value of its SOBs with the 60-bit value armed over it and the next
//     three monitors (their arms only hold the value); wr_num (bits 6:5)
//     asks for wr_num+1 payload writes, the k-th with monitor i+k's
//     payload registers; cq_en (bit 4) sends the first write to completion
//     queue payL instead of an address, and lbw_en (bit 8) then sends the
//     CQ's LBW write; msb_sid (bits 19:16) extends the group to SOBs past
//     2047.
//   - Completion queues (the GLBL block, 64 per sync manager): base
//     address, size (log2 bytes), producer index, increment mode, and the
//     LBW address and data written after each CQ write, which hl-thunk's
//     tests point at the MSI-X doorbell to raise a user interrupt
//     (interrupt.go). A CQ write stores the 32-bit payload at the next
//     4-byte entry (increment mode 0) or adds it to the 64-bit counter at
//     the base (mode 1).

// smBlock is one sync manager.
type smBlock struct {
	base  uint64 // absolute address of SOB_OBJ_0
	sobs  []uint32
	mons  []monitor
	armed map[uint32]struct{} // monitors armed now
	cqs   *[smCQs]smCQ        // completion queues (Gaudi2; Gaudi3: the HDCORE's, shared by its two groups)

	// Gaudi3 (sm3.go): the group's registers and its HDCORE's GLBL
	// registers as users map them; sobs is the start of regs.
	g3   bool
	regs []uint32
	glbl []uint32
}

// smCQs is the completion queues per sync manager (CQ_BASE_ADDR_L_0..63).
const smCQs = 64

// smCQ is one completion queue's GLBL registers.
type smCQ struct {
	baseL, baseH, log2, pi, lbwL, lbwH, lbwData, inc uint32
}

// Gaudi2 GLBL register offsets from SOB_OBJ_0 (dcore0_sync_mngr_glbl_regs.h:
// the GLBL block is 0x1E000 past the OBJS block), 4 bytes per CQ.
const (
	smGlblCQBaseL   = 0x1E050
	smGlblCQBaseH   = 0x1E150
	smGlblCQLog2    = 0x1E250
	smGlblCQPI      = 0x1E350
	smGlblLBWAddrL  = 0x1E550
	smGlblLBWAddrH  = 0x1E650
	smGlblLBWData   = 0x1E750
	smGlblCQIncMode = 0x1E850
	smGlblEnd       = 0x1F000
)

// monitor is one monitor's registers.
type monitor struct {
	payL, payH, data, cfg uint32
	arm                   packet.MonArm
	armed                 bool
}

// payload is a monitor's write that leaves the sync manager: to a QMAN
// fence counter, another device register, or memory.
type payload struct {
	addr uint64
	val  uint32
	cq   bool // a completion queue write: ordered against CQ reads
	inc  bool // add val to the 64-bit counter at addr (CQ increment mode)
}

// syncMgr holds the ASIC's sync managers.
type syncMgr struct {
	mu     sync.Mutex
	prof   *profile
	lay    smLayout
	blocks []*smBlock

	// streams are the queues' sync stream states (signal.go), by queue;
	// sigCtxs the contexts that reserved encapsulated signals (encaps.go).
	streams map[uint32]*syncStream
	sigCtxs map[*csCtx]struct{}

	irq irqState // user interrupts (interrupt.go), its own lock

	mem sm3Mem // Gaudi3: where the registers live (sm3.go), guarded by mu
}

func newSyncMgr(p *profile) *syncMgr {
	s := &syncMgr{prof: p, streams: map[uint32]*syncStream{}}
	var bases []uint64
	if p.asic == Gaudi3 {
		s.lay = gaudi3SMLayout
		s.newGaudi3()
		s.reset()
		return s
	}
	if p.dramVirtual {
		s.lay = gaudi2SMLayout
		for d := uint64(0); d < 4; d++ {
			bases = append(bases, gaudi2CFGBase+gaudi2SMDcore0+d*gaudi2SMStride)
		}
	} else {
		s.lay = gaudiSMLayout
		for _, off := range []uint64{gaudiSMEastNorth, gaudiSMEastSouth, gaudiSMWestNorth, gaudiSMWestSouth} {
			bases = append(bases, gaudiCFGBase+off)
		}
	}
	for _, b := range bases {
		s.blocks = append(s.blocks, &smBlock{base: b})
	}
	s.reset()
	return s
}

// reset clears every SOB and monitor, as the hard reset's re-init does.
func (s *syncMgr) reset() {
	s.mu.Lock()
	clear(s.mem.b) // Gaudi3: the registers users map
	for _, b := range s.blocks {
		if !b.g3 {
			b.sobs = make([]uint32, s.lay.sobs)
			b.cqs = new([smCQs]smCQ)
		}
		b.mons = make([]monitor, s.lay.mons)
		b.armed = map[uint32]struct{}{}
		*b.cqs = [smCQs]smCQ{}
	}
	s.resetStreamsLocked()
	s.mu.Unlock()
	s.dropUnclaimed()
	s.abortIRQ()
}

// block returns the sync manager whose registers hold addr and the offset
// of addr in it, or nil.
func (s *syncMgr) block(addr uint64) (*smBlock, uint64) {
	if s.prof.asic == Gaudi3 {
		return s.block3(addr)
	}
	end := s.lay.st + uint64(s.lay.mons)*4
	if s.prof.dramVirtual {
		end = smGlblEnd
	}
	for _, b := range s.blocks {
		if addr >= b.base && addr-b.base < end {
			return b, addr - b.base
		}
	}
	return nil, 0
}

// write performs a 32-bit register write at addr, which block returned a
// sync manager for, and returns the payload writes of the monitors that
// fired and target something outside the sync managers.
func (s *syncMgr) write(addr uint64, val uint32) []payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []payload
	work := []payload{{addr: addr, val: val}}
	for len(work) > 0 {
		w := work[0]
		work = work[1:]
		b, off := s.block(w.addr)
		if b == nil || w.cq {
			out = append(out, w)
			continue
		}
		work = append(work, s.writeReg(b, off, w.val)...)
	}
	return out
}

// writeReg writes one register of block b and returns the payloads of the
// monitors that fired.
func (s *syncMgr) writeReg(b *smBlock, off uint64, val uint32) []payload {
	l := &s.lay
	reg := func(start uint64, n uint32) (uint32, bool) {
		if off >= start && off < start+uint64(n)*4 && off%4 == 0 {
			return uint32((off - start) / 4), true
		}
		return 0, false
	}
	if i, ok := reg(0, l.sobs); ok {
		return s.writeSOB(b, i, sobUpdate(val))
	}
	if b.g3 {
		if off >= sm3GlblOff {
			s.writeGlbl3(b, off-sm3GlblOff, val)
			return nil
		}
		if off < l.st && off%4 == 0 {
			b.regs[off/4] = val // read back through the mapping
		}
	}
	if i, ok := reg(l.payL, l.mons); ok {
		b.mons[i].payL = val
	} else if i, ok := reg(l.payH, l.mons); ok {
		b.mons[i].payH = val
	} else if i, ok := reg(l.payData, l.mons); ok {
		b.mons[i].data = val
	} else if i, ok := reg(l.arm, l.mons); ok {
		m := &b.mons[i]
		m.arm = packet.MsgShort{Value: val}.MonArm()
		if s.longHolder(b, i) {
			return nil // holds part of a long monitor's value
		}
		m.armed = true
		b.armed[i] = struct{}{}
		return s.check(b, i)
	} else if i, ok := reg(l.cfg, l.mons); ok && l.cfg != 0 {
		b.mons[i].cfg = val
	} else if s.prof.dramVirtual {
		s.writeGlbl(b, off, val)
	}
	// MON_STATUS and the gaps between the register arrays ignore writes.
	return nil
}

// writeGlbl writes a Gaudi2 completion queue register.
func (s *syncMgr) writeGlbl(b *smBlock, off uint64, val uint32) {
	for _, r := range []struct {
		start uint64
		field func(*smCQ) *uint32
	}{
		{smGlblCQBaseL, func(c *smCQ) *uint32 { return &c.baseL }},
		{smGlblCQBaseH, func(c *smCQ) *uint32 { return &c.baseH }},
		{smGlblCQLog2, func(c *smCQ) *uint32 { return &c.log2 }},
		{smGlblCQPI, func(c *smCQ) *uint32 { return &c.pi }},
		{smGlblLBWAddrL, func(c *smCQ) *uint32 { return &c.lbwL }},
		{smGlblLBWAddrH, func(c *smCQ) *uint32 { return &c.lbwH }},
		{smGlblLBWData, func(c *smCQ) *uint32 { return &c.lbwData }},
		{smGlblCQIncMode, func(c *smCQ) *uint32 { return &c.inc }},
	} {
		if off >= r.start && off < r.start+smCQs*4 && off%4 == 0 {
			*r.field(&b.cqs[(off-r.start)/4]) = val
			return
		}
	}
}

// writeSOB applies an update to SOB i and evaluates the monitors that
// watch the SOBs it changed.
func (s *syncMgr) writeSOB(b *smBlock, i uint32, u packet.SOBUpdate) []payload {
	long := u.LongMode && s.prof.dramVirtual && i+3 < uint32(len(b.sobs))
	switch {
	case long && u.Add:
		v := longValue(b, i) + uint64(u.Value)
		for k := uint32(0); k < 4; k++ {
			b.sobs[i+k] = uint32(v>>(15*k)) & 0x7FFF
		}
	case long:
		b.sobs[i] = uint32(u.Value)
		b.sobs[i+1], b.sobs[i+2], b.sobs[i+3] = 0, 0, 0
	case u.Add:
		b.sobs[i] = (b.sobs[i] + uint32(u.Value)) & 0x7FFF
	default:
		b.sobs[i] = uint32(u.Value)
	}
	out := s.evaluate(b, i/8)
	if long && (i+3)/8 != i/8 {
		out = append(out, s.evaluate(b, (i+3)/8)...)
	}
	return out
}

// longValue is the 60-bit value of SOBs i..i+3.
func longValue(b *smBlock, i uint32) uint64 {
	var v uint64
	for k := uint32(0); k < 4 && i+k < uint32(len(b.sobs)); k++ {
		v |= uint64(b.sobs[i+k]&0x7FFF) << (15 * k)
	}
	return v
}

// sobUpdate reads a SOB register write.
func sobUpdate(val uint32) packet.SOBUpdate { return packet.MsgShort{Value: val}.SOBUpdate() }

// monCfg reads monitor i's MON_CONFIG (zero on Gaudi).
func monCfg(b *smBlock, i uint32) packet.MonConfig {
	c := packet.MsgShort{Value: b.mons[i].cfg}.MonConfig()
	if b.g3 {
		// Gaudi3 moved WR_NUM to bits 27:24 (sob_objs_masks.h).
		c.WrNum = uint8((b.mons[i].cfg & g3.SOB_OBJS_MON_CONFIG_WR_NUM_MASK) >> g3.SOB_OBJS_MON_CONFIG_WR_NUM_SHIFT)
	}
	return c
}

// longHolder reports whether monitor i holds part of the value of a long
// monitor among the three before it.
func (s *syncMgr) longHolder(b *smBlock, i uint32) bool {
	for k := uint32(1); k <= 3 && k <= i; k++ {
		if monCfg(b, i-k).LongSOB {
			return true
		}
	}
	return false
}

// evaluate checks the armed monitors that watch group g (the low 8 bits
// of the group; the MSB bits come from MON_CONFIG).
func (s *syncMgr) evaluate(b *smBlock, g uint32) []payload {
	var out []payload
	for i := range b.armed {
		if firstSOB(b, i)/8 != g {
			continue
		}
		out = append(out, s.check(b, i)...)
	}
	return out
}

// firstSOB is the first SOB of monitor i's group.
func firstSOB(b *smBlock, i uint32) uint32 {
	m := &b.mons[i]
	return (uint32(monCfg(b, i).MSBSID)<<8 | uint32(m.arm.Group)) * 8
}

// check fires monitor i when every SOB of its group that the mask does not
// exclude satisfies the armed condition (greater or equal, or equal; a
// long monitor compares 60-bit values), and returns its payload writes.
func (s *syncMgr) check(b *smBlock, i uint32) []payload {
	m := &b.mons[i]
	cfg := monCfg(b, i)
	first := firstSOB(b, i)
	if cfg.LongSOB {
		k := uint32(0)
		for k < 8 && m.arm.Mask&(1<<k) != 0 {
			k++
		}
		var want uint64
		for h := uint32(0); h < 4 && i+h < uint32(len(b.mons)); h++ {
			want |= uint64(b.mons[i+h].arm.Value&0x7FFF) << (15 * h)
		}
		v := longValue(b, first+k)
		if (m.arm.Equal && v != want) || (!m.arm.Equal && v < want) {
			return nil
		}
	} else {
		for k := uint32(0); k < 8; k++ {
			if m.arm.Mask&(1<<k) != 0 || first+k >= uint32(len(b.sobs)) {
				continue
			}
			v := b.sobs[first+k]
			if (m.arm.Equal && v != uint32(m.arm.Value)) || (!m.arm.Equal && v < uint32(m.arm.Value)) {
				return nil
			}
		}
	}
	m.armed = false
	delete(b.armed, i)
	var out []payload
	for w := uint32(0); w <= uint32(cfg.WrNum) && i+w < uint32(len(b.mons)); w++ {
		pm := &b.mons[i+w]
		if w == 0 && cfg.CQEnable {
			out = append(out, s.cqWrite(b, pm.payL%smCQs, pm.data, cfg.LBWEnable)...)
			continue
		}
		out = append(out, payload{addr: uint64(pm.payH)<<32 | uint64(pm.payL), val: pm.data})
	}
	return out
}

// cqWrite is a monitor's write to completion queue q, and the CQ's LBW
// write when lbw is set.
func (s *syncMgr) cqWrite(b *smBlock, q, val uint32, lbw bool) []payload {
	c := &b.cqs[q]
	base := uint64(c.baseH)<<32 | uint64(c.baseL)
	var out []payload
	if c.inc != 0 {
		out = append(out, payload{addr: base, val: val, cq: true, inc: true})
	} else {
		entries := uint32(1)
		if c.log2 >= 2 && c.log2 < 32 {
			entries = 1 << (c.log2 - 2)
		}
		out = append(out, payload{addr: base + uint64(c.pi%entries)*4, val: val, cq: true})
		c.pi++
		if b.g3 {
			b.glbl[(g3.SOB_GLBL_CQ_PI_0+4*uint64(q))/4] = c.pi
		}
	}
	if lbw {
		addr := uint64(c.lbwH)<<32 | uint64(c.lbwL)
		if cfgBase, cfgSize := s.prof.cfgSpace(); addr < cfgSize {
			addr += cfgBase // an LBW address is a CFG offset
		}
		out = append(out, payload{addr: addr, val: c.lbwData})
	}
	return out
}

// sob returns the value of SOB id of sync manager blk, for tests.
func (s *syncMgr) sob(blk, id int) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocks[blk].sobs[id]
}
