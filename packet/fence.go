package packet

import (
	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
)

var (
	fenceDec    = fieldOf(g1.GAUDI_PKT_FENCE_CFG_DEC_VAL_SHIFT, g1.GAUDI_PKT_FENCE_CFG_DEC_VAL_MASK)
	fenceTarget = fieldOf(g1.GAUDI_PKT_FENCE_CFG_TARGET_VAL_SHIFT, g1.GAUDI_PKT_FENCE_CFG_TARGET_VAL_MASK)
	fenceID     = fieldOf(g1.GAUDI_PKT_FENCE_CFG_ID_SHIFT, g1.GAUDI_PKT_FENCE_CFG_ID_MASK)
	fenceKnown  = fenceDec.mask() | fenceTarget.mask() | fenceID.mask()

	// WAIT, from hl-thunk.
	waitCycles = field{0, 24}
	waitInc    = field{24, 4}
	waitID     = field{28, 2}
	waitKnown  = waitCycles.mask() | waitInc.mask() | waitID.mask()

	ctlPredKnown = ctlHeader | ctlPred.mask()
)

// Fence is a FENCE packet (8 bytes): the queue waits until its fence counter
// ID reaches Target, then subtracts Dec from it. Another engine (usually a
// sync manager monitor) increments the counter by writing the queue's
// FENCE register; see Format.FenceWait.
//
// Bits (K): Dec = cfg 3:0, Target = cfg 23:16, ID = cfg 31:30,
// Pred = ctl 4:0.
//
// Fence encodes the Gaudi and Gaudi2 layout; the Gaudi3 formats' FENCE,
// with a wider target and a channel id, is Gaudi3Fence.
type Fence struct {
	Header
	ID     uint8 // fence counter, 2 bits
	Target uint8 // value to wait for, 8 bits
	Dec    uint8 // value subtracted once reached, 4 bits
	Pred   uint8 // predicate id, 5 bits
}

// Opcode returns OpFence.
func (Fence) Opcode() Opcode { return OpFence }

// Len returns 8.
func (Fence) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Fence) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpFence)
	c.types(inGaudi | inGaudi2)
	fenceID.check(&c, "ID", uint64(p.ID))
	fenceDec.check(&c, "Dec", uint64(p.Dec))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	cfg := fenceDec.put(uint64(p.Dec)) | fenceTarget.put(uint64(p.Target)) | fenceID.put(uint64(p.ID))
	return put8(b, cfg, p.ctl(OpFence)|ctlPred.put(uint64(p.Pred))), nil
}

func decodeFence(cfg, ctl uint32) (Fence, string) {
	return Fence{
		Header: headerOf(ctl),
		ID:     uint8(fenceID.get(cfg)),
		Target: uint8(fenceTarget.get(cfg)),
		Dec:    uint8(fenceDec.get(cfg)),
		Pred:   uint8(ctlPred.get(ctl)),
	}, either(reserved("cfg", cfg&^fenceKnown), reserved("ctl", ctl&^ctlPredKnown))
}

// String returns a one-line description of the packet.
func (p Fence) String() string {
	s := newStr(OpFence)
	s.dec("ID", uint64(p.ID))
	s.dec("Target", uint64(p.Target))
	s.dec("Dec", uint64(p.Dec))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// Wait is a WAIT packet (8 bytes): the queue pauses for Cycles clock cycles,
// then adds Inc to fence counter ID.
//
// Bits (T): Cycles = cfg 23:0, Inc = cfg 27:24, ID = cfg 29:28. The Gaudi3
// formats (S) keep the layout; their WAIT has no RegBarrier, and Gaudi3PQM
// only EngineBarrier.
type Wait struct {
	Header
	Cycles uint32 // 24 bits
	Inc    uint8  // 4 bits
	ID     uint8  // fence counter, 2 bits
}

// Opcode returns OpWait.
func (Wait) Opcode() Opcode { return OpWait }

// Len returns 8.
func (Wait) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Wait) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpWait)
	c.header(p.Header)
	c.onlyIn(inGaudi|inGaudi2, "RegBarrier", b2u(p.RegBarrier))
	waitCycles.check(&c, "Cycles", uint64(p.Cycles))
	waitInc.check(&c, "Inc", uint64(p.Inc))
	waitID.check(&c, "ID", uint64(p.ID))
	if c.err != nil {
		return b, c.err
	}
	cfg := waitCycles.put(uint64(p.Cycles)) | waitInc.put(uint64(p.Inc)) | waitID.put(uint64(p.ID))
	return put8(b, cfg, p.ctl(OpWait)), nil
}

func decodeWait(f Format, cfg, ctl uint32) (Wait, string) {
	known := f.headerBits()
	if f == Gaudi3 {
		known &^= ctlRB.mask()
	}
	p := Wait{
		Header: f.header(ctl),
		Cycles: uint32(waitCycles.get(cfg)),
		Inc:    uint8(waitInc.get(cfg)),
		ID:     uint8(waitID.get(cfg)),
	}
	p.RegBarrier = p.RegBarrier && f != Gaudi3
	return p, either(reserved("cfg", cfg&^waitKnown), reserved("ctl", ctl&^known))
}

// String returns a one-line description of the packet.
func (p Wait) String() string {
	s := newStr(OpWait)
	s.dec("Cycles", uint64(p.Cycles))
	s.dec("Inc", uint64(p.Inc))
	s.dec("ID", uint64(p.ID))
	p.barriers(s)
	return s.String()
}
