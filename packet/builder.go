package packet

// Builder appends packets of one format to a caller's byte slice. It keeps
// the first error and ignores every packet after it, so a sequence of calls
// needs one check at the end. It allocates only when the slice runs out of
// capacity: give it a slice with room for the whole command buffer.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	f   Format
	buf []byte
	err error
}

// NewBuilder returns a Builder that appends packets in format f to buf.
func NewBuilder(f Format, buf []byte) Builder { return Builder{f: f, buf: buf} }

// Reset makes b append to buf and forgets its error.
func (b *Builder) Reset(buf []byte) { b.buf, b.err = buf, nil }

// Format returns the format b encodes.
func (b *Builder) Format() Format { return b.f }

// Bytes returns the slice with every packet appended before the first
// error.
func (b *Builder) Bytes() []byte { return b.buf }

// Len returns len(b.Bytes()).
func (b *Builder) Len() int { return len(b.buf) }

// Err returns the first error, a *FieldError, or nil.
func (b *Builder) Err() error { return b.err }

// add appends p unless an error happened before. It is generic so that the
// packet is never boxed in an interface.
func add[P Packet](b *Builder, p P) {
	if b.err == nil {
		b.buf, b.err = p.Append(b.f, b.buf)
	}
}

// LinDMA appends a LIN_DMA packet.
func (b *Builder) LinDMA(p LinDMA) { add(b, p) }

// MsgLong appends a MSG_LONG packet.
func (b *Builder) MsgLong(p MsgLong) { add(b, p) }

// MsgProt appends a MSG_PROT packet.
func (b *Builder) MsgProt(p MsgProt) { add(b, p) }

// MsgShort appends a MSG_SHORT packet.
func (b *Builder) MsgShort(p MsgShort) { add(b, p) }

// Fence appends a FENCE packet.
func (b *Builder) Fence(p Fence) { add(b, p) }

// Wait appends a WAIT packet.
func (b *Builder) Wait(p Wait) { add(b, p) }

// Nop appends a NOP packet.
func (b *Builder) Nop(p Nop) { add(b, p) }

// Stop appends a STOP packet.
func (b *Builder) Stop(p Stop) { add(b, p) }

// Repeat appends a REPEAT packet.
func (b *Builder) Repeat(p Repeat) { add(b, p) }

// ArbPoint appends an ARB_POINT packet.
func (b *Builder) ArbPoint(p ArbPoint) { add(b, p) }

// WReg32 appends a WREG_32 packet.
func (b *Builder) WReg32(p WReg32) { add(b, p) }

// WRegBulk appends a WREG_BULK packet.
func (b *Builder) WRegBulk(p WRegBulk) { add(b, p) }

// LoadAndExe appends a LOAD_AND_EXE packet.
func (b *Builder) LoadAndExe(p LoadAndExe) { add(b, p) }

// CPDMA appends a CP_DMA packet.
func (b *Builder) CPDMA(p CPDMA) { add(b, p) }

// CBList appends a Gaudi2 CB_LIST packet.
func (b *Builder) CBList(p CBList) { add(b, p) }

// Gaudi3Fence appends a FENCE packet of a Gaudi3 format.
func (b *Builder) Gaudi3Fence(p Gaudi3Fence) { add(b, p) }

// Gaudi3LinDMA appends a Gaudi3 LIN_DMA packet.
func (b *Builder) Gaudi3LinDMA(p Gaudi3LinDMA) { add(b, p) }

// LinPDMA appends a Gaudi3PQM LIN_PDMA packet.
func (b *Builder) LinPDMA(p LinPDMA) { add(b, p) }

// WReg64Short appends a WREG_64_SHORT packet of a Gaudi3 format.
func (b *Builder) WReg64Short(p WReg64Short) { add(b, p) }

// WReg64Long appends a WREG_64_LONG packet of a Gaudi3 format.
func (b *Builder) WReg64Long(p WReg64Long) { add(b, p) }

// ChWReg32 appends a Gaudi3PQM CH_WREG_32 packet.
func (b *Builder) ChWReg32(p ChWReg32) { add(b, p) }

// ChWRegBulk appends a Gaudi3PQM CH_WREG_BULK packet.
func (b *Builder) ChWRegBulk(p ChWRegBulk) { add(b, p) }

// ChWReg64Short appends a Gaudi3PQM CH_WREG_64_SHORT packet.
func (b *Builder) ChWReg64Short(p ChWReg64Short) { add(b, p) }

// ChWReg64Long appends a Gaudi3PQM CH_WREG_64_LONG packet.
func (b *Builder) ChWReg64Long(p ChWReg64Long) { add(b, p) }

// Signal appends f.Signal(sob, engineBarrier).
func (b *Builder) Signal(sob uint16, engineBarrier bool) {
	if b.err != nil {
		return
	}
	p, err := b.f.Signal(sob, engineBarrier)
	if err != nil {
		b.err = err
		return
	}
	add(b, p)
}
