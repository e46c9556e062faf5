package packet

import (
	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
)

// MsgOp is the op field of MSG_LONG, MSG_PROT and MSG_SHORT: what the
// message writes.
type MsgOp uint8

const (
	// MsgWriteValue writes the packet's value (what the driver uses).
	MsgWriteValue MsgOp = 0
	// MsgWriteTimestamp writes a timestamp instead of the value.
	MsgWriteTimestamp MsgOp = 1
)

var (
	// The op field: the kernel defines it for Gaudi MSG_LONG and MSG_SHORT;
	// hl-thunk's headers place it at the same bits on Gaudi2.
	msgLongOp  = fieldOf(g1.GAUDI_PKT_LONG_CTL_OP_SHIFT, g1.GAUDI_PKT_LONG_CTL_OP_MASK)
	msgShortOp = fieldOf(g1.GAUDI_PKT_SHORT_CTL_OP_SHIFT, g1.GAUDI_PKT_SHORT_CTL_OP_MASK)
	// hl-thunk: weakly_ordered and no_snoop in MSG_LONG, MSG_PROT and
	// MSG_SHORT; dw in Gaudi2 MSG_SHORT.
	msgWeak    = field{16, 1}
	msgNoSnoop = field{17, 1}
	g2ShortDW  = field{18, 1}

	msgLongKnown    = ctlHeader | ctlPred.mask() | msgWeak.mask() | msgNoSnoop.mask() | msgLongOp.mask()
	pqmMsgLongKnown = ctlHeaderPQM | ctlPred.mask() | msgLongOp.mask()

	shortAddr    = fieldOf(g1.GAUDI_PKT_SHORT_CTL_ADDR_SHIFT, g1.GAUDI_PKT_SHORT_CTL_ADDR_MASK)
	shortBase    = fieldOf(g1.GAUDI_PKT_SHORT_CTL_BASE_SHIFT, g1.GAUDI_PKT_SHORT_CTL_BASE_MASK)
	g1ShortKnown = ctlHeader | shortAddr.mask() | msgWeak.mask() | msgNoSnoop.mask() | msgShortOp.mask() | shortBase.mask()
	g2ShortKnown = g1ShortKnown | g2ShortDW.mask()

	// Gaudi3 MSG_SHORT (gaudi3_packets.h): a 3-bit base split into
	// base_lsb (ctl 23:22, Gaudi2's base) and base_msb (ctl 19).
	g3ShortBaseMSB = field{19, 1}
	g3ShortKnown   = g2ShortKnown | g3ShortBaseMSB.mask()
	// Gaudi3PQM MSG_SHORT (gaudi3_pqm_packets.h): base ctl 18:16, dw ctl
	// 19, op ctl 21:20; no weakly_ordered or no_snoop.
	pqmShortBase  = field{16, 3}
	pqmShortDW    = field{19, 1}
	pqmShortKnown = ctlHeaderPQM | shortAddr.mask() | pqmShortBase.mask() | pqmShortDW.mask() | msgShortOp.mask()
)

// MsgLong is a MSG_LONG packet (16 bytes): a 32-bit write of Value (or a
// timestamp) to the 64-bit address Addr.
//
// Bits: Value = value (K); Addr = addr (K); Op = ctl 21:20 (K on Gaudi, T on
// Gaudi2); Pred = ctl 4:0, WeaklyOrdered = ctl 16, NoSnoop = ctl 17 (T). The
// Gaudi3 formats keep these positions; Gaudi3PQM has no WeaklyOrdered and
// NoSnoop (and no MSG_PROT).
type MsgLong struct {
	Header
	Addr          uint64
	Value         uint32
	Op            MsgOp // 2 bits
	Pred          uint8 // predicate id, 5 bits
	WeaklyOrdered bool
	NoSnoop       bool
}

// MsgProt is a MSG_PROT packet: MSG_LONG's layout under another opcode,
// which the queue manager treats as privileged. The Gaudi driver appends two
// of them to every patched command buffer (the completion-queue entry and
// the MSI) and refuses them from users.
type MsgProt MsgLong

// Opcode returns OpMsgLong.
func (MsgLong) Opcode() Opcode { return OpMsgLong }

// Len returns 16.
func (MsgLong) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p MsgLong) Append(f Format, b []byte) ([]byte, error) { return appendLong(f, OpMsgLong, p, b) }

// String returns a one-line description of the packet.
func (p MsgLong) String() string { return longString(OpMsgLong, p) }

// Opcode returns OpMsgProt.
func (MsgProt) Opcode() Opcode { return OpMsgProt }

// Len returns 16.
func (MsgProt) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p MsgProt) Append(f Format, b []byte) ([]byte, error) {
	return appendLong(f, OpMsgProt, MsgLong(p), b)
}

// String returns a one-line description of the packet.
func (p MsgProt) String() string { return longString(OpMsgProt, MsgLong(p)) }

func appendLong(f Format, op Opcode, p MsgLong, b []byte) ([]byte, error) {
	c := newCheck(f, op)
	c.header(p.Header)
	c.onlyIn(inAll&^inPQM, "WeaklyOrdered", b2u(p.WeaklyOrdered))
	c.onlyIn(inAll&^inPQM, "NoSnoop", b2u(p.NoSnoop))
	msgLongOp.check(&c, "Op", uint64(p.Op))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(op) | ctlPred.put(uint64(p.Pred)) | msgWeak.flag(p.WeaklyOrdered) |
		msgNoSnoop.flag(p.NoSnoop) | msgLongOp.put(uint64(p.Op))
	return put16(b, p.Value, ctl, p.Addr), nil
}

func decodeLong(f Format, w0, ctl uint32, addr uint64) (MsgLong, string) {
	p := MsgLong{
		Header: f.header(ctl),
		Addr:   addr,
		Value:  w0,
		Op:     MsgOp(msgLongOp.get(ctl)),
		Pred:   uint8(ctlPred.get(ctl)),
	}
	if f == Gaudi3PQM {
		return p, reserved("ctl", ctl&^pqmMsgLongKnown)
	}
	p.WeaklyOrdered = msgWeak.on(ctl)
	p.NoSnoop = msgNoSnoop.on(ctl)
	return p, reserved("ctl", ctl&^msgLongKnown)
}

func longString(op Opcode, p MsgLong) string {
	s := newStr(op)
	s.hex("Addr", p.Addr)
	s.hex("Value", uint64(p.Value))
	s.decNZ("Op", uint64(p.Op))
	s.decNZ("Pred", uint64(p.Pred))
	s.flag(p.WeaklyOrdered, "WeaklyOrdered")
	s.flag(p.NoSnoop, "NoSnoop")
	p.barriers(s)
	return s.String()
}

// MsgShort is a MSG_SHORT packet (8 bytes): a 32-bit write of Value to a
// register at Offset bytes from one of four base addresses that the driver
// programs into the queue manager (Base). The driver uses it for sync
// manager traffic: see SOBUpdate, MonArm, MonConfig and Format.Signal,
// Format.MonitorWrite and Format.ArmMonitor.
//
// Bits: Value = value (K); Offset = ctl 15:0 (K); Base = ctl 23:22 (K);
// Op = ctl 21:20 (K on Gaudi, T on Gaudi2); WeaklyOrdered = ctl 16,
// NoSnoop = ctl 17, DW = ctl 18 (T). Gaudi3 (S, Habana's specification)
// widens Base to 3 bits, bit 2 in ctl 19. Gaudi3PQM (S): Offset = ctl 15:0,
// Base = ctl 18:16, DW = ctl 19, Op = ctl 21:20, and no WeaklyOrdered or
// NoSnoop.
type MsgShort struct {
	Header
	Value         uint32
	Offset        uint16 // msg_addr_offset, bytes from the base address
	Base          uint8  // which base address register: 2 bits, 3 in the Gaudi3 formats
	Op            MsgOp  // 2 bits
	WeaklyOrdered bool   // not in Gaudi3PQM
	NoSnoop       bool   // not in Gaudi3PQM
	DW            bool   // Gaudi2 and the Gaudi3 formats (hl-thunk "dw")
}

// Opcode returns OpMsgShort.
func (MsgShort) Opcode() Opcode { return OpMsgShort }

// Len returns 8.
func (MsgShort) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p MsgShort) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpMsgShort)
	c.header(p.Header)
	if f.g3() {
		c.fits("Base", uint64(p.Base), 3)
	} else {
		shortBase.check(&c, "Base", uint64(p.Base))
	}
	msgShortOp.check(&c, "Op", uint64(p.Op))
	c.onlyIn(inGaudi2|inG3, "DW", b2u(p.DW))
	c.onlyIn(inAll&^inPQM, "WeaklyOrdered", b2u(p.WeaklyOrdered))
	c.onlyIn(inAll&^inPQM, "NoSnoop", b2u(p.NoSnoop))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpMsgShort) | shortAddr.put(uint64(p.Offset)) | msgShortOp.put(uint64(p.Op))
	if f == Gaudi3PQM {
		ctl |= pqmShortBase.put(uint64(p.Base)) | pqmShortDW.flag(p.DW)
	} else {
		ctl |= msgWeak.flag(p.WeaklyOrdered) | msgNoSnoop.flag(p.NoSnoop) | g2ShortDW.flag(p.DW) |
			shortBase.put(uint64(p.Base&3)) | g3ShortBaseMSB.put(uint64(p.Base>>2))
	}
	return put8(b, p.Value, ctl), nil
}

func decodeShort(f Format, w0, ctl uint32) (MsgShort, string) {
	p := MsgShort{
		Header: f.header(ctl),
		Value:  w0,
		Offset: uint16(shortAddr.get(ctl)),
		Op:     MsgOp(msgShortOp.get(ctl)),
	}
	if f == Gaudi3PQM {
		p.Base = uint8(pqmShortBase.get(ctl))
		p.DW = pqmShortDW.on(ctl)
		return p, reserved("ctl", ctl&^pqmShortKnown)
	}
	p.Base = uint8(shortBase.get(ctl))
	p.WeaklyOrdered = msgWeak.on(ctl)
	p.NoSnoop = msgNoSnoop.on(ctl)
	switch f {
	case Gaudi2:
		p.DW = g2ShortDW.on(ctl)
		return p, reserved("ctl", ctl&^g2ShortKnown)
	case Gaudi3:
		p.DW = g2ShortDW.on(ctl)
		p.Base |= uint8(g3ShortBaseMSB.get(ctl)) << 2
		return p, reserved("ctl", ctl&^g3ShortKnown)
	}
	return p, reserved("ctl", ctl&^g1ShortKnown)
}

// String returns a one-line description of the packet.
func (p MsgShort) String() string {
	s := newStr(OpMsgShort)
	s.dec("Base", uint64(p.Base))
	s.hex("Offset", uint64(p.Offset))
	s.hex("Value", uint64(p.Value))
	s.decNZ("Op", uint64(p.Op))
	s.flag(p.WeaklyOrdered, "WeaklyOrdered")
	s.flag(p.NoSnoop, "NoSnoop")
	s.flag(p.DW, "DW")
	p.barriers(s)
	return s.String()
}
