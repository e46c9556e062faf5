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

	msgLongKnown = ctlHeader | ctlPred.mask() | msgWeak.mask() | msgNoSnoop.mask() | msgLongOp.mask()

	shortAddr    = fieldOf(g1.GAUDI_PKT_SHORT_CTL_ADDR_SHIFT, g1.GAUDI_PKT_SHORT_CTL_ADDR_MASK)
	shortBase    = fieldOf(g1.GAUDI_PKT_SHORT_CTL_BASE_SHIFT, g1.GAUDI_PKT_SHORT_CTL_BASE_MASK)
	g1ShortKnown = ctlHeader | shortAddr.mask() | msgWeak.mask() | msgNoSnoop.mask() | msgShortOp.mask() | shortBase.mask()
	g2ShortKnown = g1ShortKnown | g2ShortDW.mask()
)

// MsgLong is a MSG_LONG packet (16 bytes): a 32-bit write of Value (or a
// timestamp) to the 64-bit address Addr.
//
// Bits: Value = value (K); Addr = addr (K); Op = ctl 21:20 (K on Gaudi, T on
// Gaudi2); Pred = ctl 4:0, WeaklyOrdered = ctl 16, NoSnoop = ctl 17 (T).
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
	msgLongOp.check(&c, "Op", uint64(p.Op))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(op) | ctlPred.put(uint64(p.Pred)) | msgWeak.flag(p.WeaklyOrdered) |
		msgNoSnoop.flag(p.NoSnoop) | msgLongOp.put(uint64(p.Op))
	return put16(b, p.Value, ctl, p.Addr), nil
}

func decodeLong(w0, ctl uint32, addr uint64) (MsgLong, string) {
	return MsgLong{
		Header:        headerOf(ctl),
		Addr:          addr,
		Value:         w0,
		Op:            MsgOp(msgLongOp.get(ctl)),
		Pred:          uint8(ctlPred.get(ctl)),
		WeaklyOrdered: msgWeak.on(ctl),
		NoSnoop:       msgNoSnoop.on(ctl),
	}, reserved("ctl", ctl&^msgLongKnown)
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
// NoSnoop = ctl 17, DW = ctl 18 (T).
type MsgShort struct {
	Header
	Value         uint32
	Offset        uint16 // msg_addr_offset, bytes from the base address
	Base          uint8  // which base address register, 2 bits
	Op            MsgOp  // 2 bits
	WeaklyOrdered bool
	NoSnoop       bool
	DW            bool // Gaudi2 only (hl-thunk "dw")
}

// Opcode returns OpMsgShort.
func (MsgShort) Opcode() Opcode { return OpMsgShort }

// Len returns 8.
func (MsgShort) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p MsgShort) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpMsgShort)
	shortBase.check(&c, "Base", uint64(p.Base))
	msgShortOp.check(&c, "Op", uint64(p.Op))
	c.only(Gaudi2, "DW", b2u(p.DW))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpMsgShort) | shortAddr.put(uint64(p.Offset)) | msgWeak.flag(p.WeaklyOrdered) |
		msgNoSnoop.flag(p.NoSnoop) | g2ShortDW.flag(p.DW) | msgShortOp.put(uint64(p.Op)) |
		shortBase.put(uint64(p.Base))
	return put8(b, p.Value, ctl), nil
}

func decodeShort(f Format, w0, ctl uint32) (MsgShort, string) {
	p := MsgShort{
		Header:        headerOf(ctl),
		Value:         w0,
		Offset:        uint16(shortAddr.get(ctl)),
		Base:          uint8(shortBase.get(ctl)),
		Op:            MsgOp(msgShortOp.get(ctl)),
		WeaklyOrdered: msgWeak.on(ctl),
		NoSnoop:       msgNoSnoop.on(ctl),
	}
	if f == Gaudi2 {
		p.DW = g2ShortDW.on(ctl)
		return p, reserved("ctl", ctl&^g2ShortKnown)
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
