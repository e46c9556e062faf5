package packet

var (
	// WREG_32 and WREG_BULK, from hl-thunk.
	wregOffset = field{8, 16}
	g2WregReg  = field{5, 1}
	bulkSize   = field{0, 16}

	wregKnown   = ctlHeader | ctlPred.mask() | wregOffset.mask()
	g2WregKnown = wregKnown | g2WregReg.mask()
)

// WReg32 is a WREG_32 packet (8 bytes): write Value to the configuration
// register at Offset. Which block the offset is relative to was not
// determined from the driver (it never emits this packet); hl-thunk's Gaudi
// header says RegBarrier must be set.
//
// Bits (T): Value = value; Offset = ctl 23:8; Pred = ctl 4:0; Reg = ctl 5
// (Gaudi2 only: Value holds a register id in bits 1:0 instead of the value).
type WReg32 struct {
	Header
	Value  uint32
	Offset uint16 // reg_offset
	Pred   uint8  // predicate id, 5 bits
	Reg    bool   // Gaudi2 only
}

// Opcode returns OpWReg32.
func (WReg32) Opcode() Opcode { return OpWReg32 }

// Len returns 8.
func (WReg32) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p WReg32) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpWReg32)
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	c.only(Gaudi2, "Reg", b2u(p.Reg))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpWReg32) | ctlPred.put(uint64(p.Pred)) | g2WregReg.flag(p.Reg) | wregOffset.put(uint64(p.Offset))
	return put8(b, p.Value, ctl), nil
}

func decodeWReg32(f Format, w0, ctl uint32) (WReg32, string) {
	p := WReg32{
		Header: headerOf(ctl),
		Value:  w0,
		Offset: uint16(wregOffset.get(ctl)),
		Pred:   uint8(ctlPred.get(ctl)),
	}
	if f == Gaudi2 {
		p.Reg = g2WregReg.on(ctl)
		return p, reserved("ctl", ctl&^g2WregKnown)
	}
	return p, reserved("ctl", ctl&^wregKnown)
}

// String returns a one-line description of the packet.
func (p WReg32) String() string {
	s := newStr(OpWReg32)
	s.hex("Offset", uint64(p.Offset))
	s.hex("Value", uint64(p.Value))
	s.flag(p.Reg, "Reg")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// WRegBulk is a WREG_BULK packet (8 + 8*len(Values) bytes): write the
// 64-bit Values to consecutive registers starting at Offset.
//
// Bits (T): len(Values) = size64 15:0; Offset = ctl 23:8; Pred = ctl 4:0.
//
// The Gaudi driver sizes this packet as its 8-byte header alone
// (gaudi_packet_sizes) and refuses it from users with -EPERM before looking
// at the values; this package, like the queue manager, counts the values.
type WRegBulk struct {
	Header
	Offset uint16   // reg_offset of the first register
	Pred   uint8    // predicate id, 5 bits
	Values []uint64 // at most 65535
}

// MaxBulkValues is the most values one WREG_BULK carries.
const MaxBulkValues = 1<<16 - 1

// Opcode returns OpWRegBulk.
func (WRegBulk) Opcode() Opcode { return OpWRegBulk }

// Len returns 8 + 8*len(p.Values).
func (p WRegBulk) Len() int { return 8 + 8*len(p.Values) }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p WRegBulk) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpWRegBulk)
	bulkSize.check(&c, "len(Values)", uint64(len(p.Values)))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpWRegBulk) | ctlPred.put(uint64(p.Pred)) | wregOffset.put(uint64(p.Offset))
	b, t := grow(b, p.Len())
	le.PutUint32(t, uint32(len(p.Values)))
	le.PutUint32(t[4:], ctl)
	for i, v := range p.Values {
		le.PutUint64(t[8+8*i:], v)
	}
	return b, nil
}

// bulkLen returns the size of the WREG_BULK whose payload word is w0.
func bulkLen(w0 uint32) int { return 8 + 8*int(bulkSize.get(w0)) }

func decodeWRegBulk(w0, ctl uint32, body []byte) (WRegBulk, string) {
	p := WRegBulk{
		Header: headerOf(ctl),
		Offset: uint16(wregOffset.get(ctl)),
		Pred:   uint8(ctlPred.get(ctl)),
	}
	if n := len(body) / 8; n > 0 {
		p.Values = make([]uint64, n)
		for i := range p.Values {
			p.Values[i] = le.Uint64(body[8*i:])
		}
	}
	return p, either(reserved("size64", w0&^bulkSize.mask()), reserved("ctl", ctl&^wregKnown))
}

// String returns a one-line description of the packet, without the values.
func (p WRegBulk) String() string {
	s := newStr(OpWRegBulk)
	s.hex("Offset", uint64(p.Offset))
	s.dec("Values", uint64(len(p.Values)))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}
