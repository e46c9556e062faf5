package packet

var (
	// REPEAT and ARB_POINT, from hl-thunk.
	repeatSore    = field{0, 1}
	repeatOuter   = field{1, 1}
	repeatJump    = field{16, 16}
	repeatKnown   = repeatSore.mask() | repeatOuter.mask() | repeatJump.mask()
	g1ArbPriority = field{0, 8}
	g2ArbPriority = field{0, 24}
	arbRelease    = field{31, 1}
)

// Nop is a NOP packet (8 bytes). The Gaudi driver pads patched command
// buffers with it. In the Gaudi3PQM format MsgBarrier is bit 0 of the
// payload word (S), the only barrier besides EngineBarrier there.
type Nop struct {
	Header
}

// Opcode returns OpNop.
func (Nop) Opcode() Opcode { return OpNop }

// Len returns 8.
func (Nop) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Nop) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpNop)
	if f == Gaudi3PQM {
		c.header(Header{RegBarrier: p.RegBarrier})
		if c.err != nil {
			return b, c.err
		}
		return put8(b, pqmNopMB.flag(p.MsgBarrier), Header{EngineBarrier: p.EngineBarrier}.ctl(OpNop)), nil
	}
	if c.err != nil {
		return b, c.err
	}
	return put8(b, 0, p.ctl(OpNop)), nil
}

// String returns a one-line description of the packet.
func (p Nop) String() string {
	s := newStr(OpNop)
	p.barriers(s)
	return s.String()
}

// Stop is a STOP packet (8 bytes): the queue stops fetching. The Gaudi
// driver refuses it in user command buffers.
type Stop struct {
	Header
}

// Opcode returns OpStop.
func (Stop) Opcode() Opcode { return OpStop }

// Len returns 8.
func (Stop) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Stop) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpStop)
	c.header(p.Header)
	if c.err != nil {
		return b, c.err
	}
	return put8(b, 0, p.ctl(OpStop)), nil
}

// String returns a one-line description of the packet.
func (p Stop) String() string {
	s := newStr(OpStop)
	p.barriers(s)
	return s.String()
}

// pqmNopMB is the Gaudi3PQM NOP's msg_barrier, in its payload word.
var pqmNopMB = field{0, 1}

// decodeBare decodes NOP and STOP: a reserved payload word and no ctl
// fields, but for the Gaudi3PQM NOP's msg_barrier.
func decodeBare(f Format, op Opcode, w0, ctl uint32) (Header, string) {
	h := f.header(ctl)
	if f == Gaudi3PQM && op == OpNop {
		h.MsgBarrier = pqmNopMB.on(w0)
		w0 &^= pqmNopMB.mask()
	}
	return h, either(reserved("reserved word", w0), reserved("ctl", ctl&^f.headerBits()))
}

// Repeat is a REPEAT packet (8 bytes), which loops over part of a command
// buffer. The kernel headers give only its size; the fields are hl-thunk's
// and their semantics are not documented there.
//
// Bits (T): Sore = cfg 0, Outer = cfg 1, JumpPtr = cfg 31:16, Pred = ctl 4:0.
type Repeat struct {
	Header
	Sore    bool   // hl-thunk "sore"
	Outer   bool   // hl-thunk "outer" (Gaudi: "o")
	JumpPtr uint16 // hl-thunk "jmp_ptr"
	Pred    uint8  // predicate id, 5 bits
}

// Opcode returns OpRepeat.
func (Repeat) Opcode() Opcode { return OpRepeat }

// Len returns 8.
func (Repeat) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Repeat) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpRepeat)
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	cfg := repeatSore.flag(p.Sore) | repeatOuter.flag(p.Outer) | repeatJump.put(uint64(p.JumpPtr))
	return put8(b, cfg, p.ctl(OpRepeat)|ctlPred.put(uint64(p.Pred))), nil
}

func decodeRepeat(cfg, ctl uint32) (Repeat, string) {
	return Repeat{
		Header:  headerOf(ctl),
		Sore:    repeatSore.on(cfg),
		Outer:   repeatOuter.on(cfg),
		JumpPtr: uint16(repeatJump.get(cfg)),
		Pred:    uint8(ctlPred.get(ctl)),
	}, either(reserved("cfg", cfg&^repeatKnown), reserved("ctl", ctl&^ctlPredKnown))
}

// String returns a one-line description of the packet.
func (p Repeat) String() string {
	s := newStr(OpRepeat)
	s.hex("JumpPtr", uint64(p.JumpPtr))
	s.flag(p.Sore, "Sore")
	s.flag(p.Outer, "Outer")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// ArbPoint is an ARB_POINT packet (8 bytes): an arbitration point between
// the streams of a queue manager, with a priority, or releasing the
// arbitration with Release.
//
// Bits (T): Priority = cfg 7:0 on Gaudi, cfg 23:0 on Gaudi2; Release =
// cfg 31; Pred = ctl 4:0.
type ArbPoint struct {
	Header
	Priority uint32 // Gaudi: 8 bits; Gaudi2: 24 bits
	Release  bool   // hl-thunk "rls"
	Pred     uint8  // predicate id, 5 bits
}

// Opcode returns OpArbPoint.
func (ArbPoint) Opcode() Opcode { return OpArbPoint }

// Len returns 8.
func (ArbPoint) Len() int { return 8 }

func arbPriority(f Format) field {
	if f == Gaudi2 {
		return g2ArbPriority
	}
	return g1ArbPriority
}

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p ArbPoint) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpArbPoint)
	prio := arbPriority(f)
	prio.check(&c, "Priority", uint64(p.Priority))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	cfg := prio.put(uint64(p.Priority)) | arbRelease.flag(p.Release)
	return put8(b, cfg, p.ctl(OpArbPoint)|ctlPred.put(uint64(p.Pred))), nil
}

func decodeArbPoint(f Format, cfg, ctl uint32) (ArbPoint, string) {
	prio := arbPriority(f)
	return ArbPoint{
		Header:   headerOf(ctl),
		Priority: uint32(prio.get(cfg)),
		Release:  arbRelease.on(cfg),
		Pred:     uint8(ctlPred.get(ctl)),
	}, either(reserved("cfg", cfg&^(prio.mask()|arbRelease.mask())), reserved("ctl", ctl&^ctlPredKnown))
}

// String returns a one-line description of the packet.
func (p ArbPoint) String() string {
	s := newStr(OpArbPoint)
	s.dec("Priority", uint64(p.Priority))
	s.flag(p.Release, "Release")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}
