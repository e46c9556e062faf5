package sim

import (
	"sync"

	"github.com/gaudi-go/gaudi/packet"
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
// armed monitors of its group. A monitor fires once and disarms. Gaudi2's
// long SOBs (60-bit values over four SOBs), monitor completion-queue
// writes (MON_CONFIG cq_en) and multiple payload writes (wr_num) are not
// simulated: MON_CONFIG is stored and otherwise ignored.

// smBlock is one sync manager.
type smBlock struct {
	base  uint64 // absolute address of SOB_OBJ_0
	sobs  []uint32
	mons  []monitor
	armed map[uint32]struct{} // monitors armed now
}

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
}

// syncMgr holds the ASIC's sync managers.
type syncMgr struct {
	mu     sync.Mutex
	prof   *profile
	lay    smLayout
	blocks []*smBlock

	// streams are the queues' sync stream states (signal.go), by queue.
	streams map[uint32]*syncStream
}

func newSyncMgr(p *profile) *syncMgr {
	s := &syncMgr{prof: p, streams: map[uint32]*syncStream{}}
	var bases []uint64
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
	defer s.mu.Unlock()
	for _, b := range s.blocks {
		b.sobs = make([]uint32, s.lay.sobs)
		b.mons = make([]monitor, s.lay.mons)
		b.armed = map[uint32]struct{}{}
	}
	s.resetStreamsLocked()
}

// block returns the sync manager whose registers hold addr and the offset
// of addr in it, or nil.
func (s *syncMgr) block(addr uint64) (*smBlock, uint64) {
	for _, b := range s.blocks {
		if addr >= b.base && addr-b.base < s.lay.st+uint64(s.lay.mons)*4 {
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
	work := []payload{{addr, val}}
	for len(work) > 0 {
		w := work[0]
		work = work[1:]
		b, off := s.block(w.addr)
		if b == nil {
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
		u := sobUpdate(val)
		if u.Add {
			b.sobs[i] = (b.sobs[i] + uint32(u.Value)) & 0x7FFF
		} else {
			b.sobs[i] = uint32(u.Value)
		}
		return s.evaluate(b, uint8(i/8))
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
		m.armed = true
		b.armed[i] = struct{}{}
		if p, fired := s.check(b, i); fired {
			return []payload{p}
		}
	} else if i, ok := reg(l.cfg, l.mons); ok && l.cfg != 0 {
		b.mons[i].cfg = val
	}
	// MON_STATUS and the gaps between the register arrays ignore writes.
	return nil
}

// sobUpdate reads a SOB register write.
func sobUpdate(val uint32) packet.SOBUpdate { return packet.MsgShort{Value: val}.SOBUpdate() }

// evaluate checks the armed monitors that watch group g.
func (s *syncMgr) evaluate(b *smBlock, g uint8) []payload {
	var out []payload
	for i := range b.armed {
		if b.mons[i].arm.Group != g {
			continue
		}
		if p, fired := s.check(b, i); fired {
			out = append(out, p)
		}
	}
	return out
}

// check fires monitor i when every SOB of its group that the mask does not
// exclude satisfies the armed condition (greater or equal, or equal).
func (s *syncMgr) check(b *smBlock, i uint32) (payload, bool) {
	m := &b.mons[i]
	first := uint32(m.arm.Group) * 8
	for k := uint32(0); k < 8; k++ {
		if m.arm.Mask&(1<<k) != 0 || first+k >= uint32(len(b.sobs)) {
			continue
		}
		v := b.sobs[first+k]
		if (m.arm.Equal && v != uint32(m.arm.Value)) || (!m.arm.Equal && v < uint32(m.arm.Value)) {
			return payload{}, false
		}
	}
	m.armed = false
	delete(b.armed, i)
	return payload{uint64(m.payH)<<32 | uint64(m.payL), m.data}, true
}

// sob returns the value of SOB id of sync manager blk, for tests.
func (s *syncMgr) sob(blk, id int) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocks[blk].sobs[id]
}
