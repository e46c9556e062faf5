package packet

// Packet is one packet of a command buffer. The implementations are the
// value types of this package: LinDMA, MsgLong, MsgProt, MsgShort, Fence,
// Wait, Nop, Stop, Repeat, ArbPoint, WReg32, WRegBulk, LoadAndExe, CPDMA and
// CBList, and for the Gaudi3 formats Gaudi3Fence, Gaudi3LinDMA, LinPDMA,
// WReg64Short, WReg64Long, ChWReg32, ChWRegBulk, ChWReg64Short and
// ChWReg64Long. Decode returns them as values, so a type switch uses the
// plain type names.
//
// Packet values are plain data: safe to copy, not safe for concurrent
// mutation.
type Packet interface {
	// Opcode returns the packet's opcode.
	Opcode() Opcode
	// Len returns the packet's encoded size in bytes.
	Len() int
	// Append appends the encoded packet to b in format f. On error it
	// returns b unchanged and a *FieldError. It allocates only when b lacks
	// Len() bytes of spare capacity.
	Append(f Format, b []byte) ([]byte, error)
	// String returns a one-line description for people, such as
	// LIN_DMA{Src:0x1000 Dst:0x2000 Size:4096 MB}.
	String() string
}

// Interface checks.
var (
	_ Packet = LinDMA{}
	_ Packet = MsgLong{}
	_ Packet = MsgProt{}
	_ Packet = MsgShort{}
	_ Packet = Fence{}
	_ Packet = Wait{}
	_ Packet = Nop{}
	_ Packet = Stop{}
	_ Packet = Repeat{}
	_ Packet = ArbPoint{}
	_ Packet = WReg32{}
	_ Packet = WRegBulk{}
	_ Packet = LoadAndExe{}
	_ Packet = CPDMA{}
	_ Packet = CBList{}
	_ Packet = Gaudi3Fence{}
	_ Packet = Gaudi3LinDMA{}
	_ Packet = LinPDMA{}
	_ Packet = WReg64Short{}
	_ Packet = WReg64Long{}
	_ Packet = ChWReg32{}
	_ Packet = ChWRegBulk{}
	_ Packet = ChWReg64Short{}
	_ Packet = ChWReg64Long{}
)
