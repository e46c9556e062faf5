package packet

var (
	// WREG_32 and WREG_BULK, from hl-thunk (and, for the Gaudi3 formats,
	// Habana's Gaudi3 specifications).
	wregOffset    = field{8, 16}
	g2WregReg     = field{5, 1}
	bulkSize      = field{0, 16}
	pqmWregOffset = field{6, 18} // Gaudi3PQM reg_offset

	wregKnown    = ctlHeader | ctlPred.mask() | wregOffset.mask()
	g2WregKnown  = wregKnown | g2WregReg.mask()
	pqmWregKnown = ctlHeaderPQM | ctlPred.mask() | pqmWregOffset.mask()
)

// wregOffsetOf returns where format f keeps WREG_32's and WREG_BULK's
// register offset.
func wregOffsetOf(f Format) field {
	if f == Gaudi3PQM {
		return pqmWregOffset
	}
	return wregOffset
}

// WReg32 is a WREG_32 packet (8 bytes): write Value to the configuration
// register at Offset. Which block the offset is relative to was not
// determined from the driver (it never emits this packet); hl-thunk's Gaudi
// header says RegBarrier must be set.
//
// Bits (T): Value = value; Offset = ctl 23:8 (Gaudi3PQM: ctl 23:6, 18
// bits); Pred = ctl 4:0; Reg = ctl 5 (Gaudi2 and Gaudi3 only: Value holds a
// register id in bits 1:0 instead of the value).
type WReg32 struct {
	Header
	Value  uint32
	Offset uint32 // reg_offset: 16 bits, 18 in the Gaudi3PQM format
	Pred   uint8  // predicate id, 5 bits
	Reg    bool   // Gaudi2 and Gaudi3 only
}

// Opcode returns OpWReg32.
func (WReg32) Opcode() Opcode { return OpWReg32 }

// Len returns 8.
func (WReg32) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p WReg32) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpWReg32)
	c.header(p.Header)
	off := wregOffsetOf(f)
	off.check(&c, "Offset", uint64(p.Offset))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	c.onlyIn(inGaudi2|inGaudi3, "Reg", b2u(p.Reg))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpWReg32) | ctlPred.put(uint64(p.Pred)) | g2WregReg.flag(p.Reg) | off.put(uint64(p.Offset))
	return put8(b, p.Value, ctl), nil
}

func decodeWReg32(f Format, w0, ctl uint32) (WReg32, string) {
	off := wregOffsetOf(f)
	p := WReg32{
		Header: f.header(ctl),
		Value:  w0,
		Offset: uint32(off.get(ctl)),
		Pred:   uint8(ctlPred.get(ctl)),
	}
	switch f {
	case Gaudi2, Gaudi3:
		p.Reg = g2WregReg.on(ctl)
		return p, reserved("ctl", ctl&^g2WregKnown)
	case Gaudi3PQM:
		return p, reserved("ctl", ctl&^pqmWregKnown)
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
// Bits (T): len(Values) = size64 15:0; Offset = ctl 23:8 (Gaudi3PQM: ctl
// 23:6, 18 bits); Pred = ctl 4:0.
//
// The Gaudi driver sizes this packet as its 8-byte header alone
// (gaudi_packet_sizes) and refuses it from users with -EPERM before looking
// at the values; this package, like the queue manager, counts the values.
type WRegBulk struct {
	Header
	Offset uint32   // reg_offset of the first register: 16 bits, 18 in Gaudi3PQM
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
	c.header(p.Header)
	off := wregOffsetOf(f)
	off.check(&c, "Offset", uint64(p.Offset))
	bulkSize.check(&c, "len(Values)", uint64(len(p.Values)))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpWRegBulk) | ctlPred.put(uint64(p.Pred)) | off.put(uint64(p.Offset))
	return appendBulk(b, ctl, p.Values), nil
}

// appendBulk appends a bulk packet: the number of values, ctl and the
// values.
func appendBulk(b []byte, ctl uint32, values []uint64) []byte {
	b, t := grow(b, 8+8*len(values))
	le.PutUint32(t, uint32(len(values)))
	le.PutUint32(t[4:], ctl)
	for i, v := range values {
		le.PutUint64(t[8+8*i:], v)
	}
	return b
}

// bulkLen returns the size of the WREG_BULK whose payload word is w0.
func bulkLen(w0 uint32) int { return 8 + 8*int(bulkSize.get(w0)) }

// bulkValues returns the values of a bulk packet's body, or nil for none.
func bulkValues(body []byte) []uint64 {
	n := len(body) / 8
	if n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = le.Uint64(body[8*i:])
	}
	return v
}

func decodeWRegBulk(f Format, w0, ctl uint32, body []byte) (WRegBulk, string) {
	off := wregOffsetOf(f)
	p := WRegBulk{
		Header: f.header(ctl),
		Offset: uint32(off.get(ctl)),
		Pred:   uint8(ctlPred.get(ctl)),
		Values: bulkValues(body),
	}
	known := wregKnown
	if f == Gaudi3PQM {
		known = pqmWregKnown
	}
	return p, either(reserved("size64", w0&^bulkSize.mask()), reserved("ctl", ctl&^known))
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
