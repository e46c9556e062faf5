package packet

// CopyEncoder writes plain LIN_DMA copy or fill packets for one format and
// one set of control bits, computed once, so the per-packet cost is four
// stores: the hot path of the dma package. Its output is identical to
// LinDMA.Append with the same fields (a test checks). A CopyEncoder is a
// small value, safe to copy and to use from several goroutines.
type CopyEncoder struct {
	ctl     uint32
	dstMask uint64 // address bits the format carries
	f       Format
}

// NewCopyEncoder prepares an encoder for LIN_DMA packets with the given
// header bits, memset and write-completion flags. f must be Gaudi or
// Gaudi2; it panics for any other format.
func NewCopyEncoder(f Format, h Header, memset, writeCompletion bool) CopyEncoder {
	if f != Gaudi && f != Gaudi2 {
		panic("packet: NewCopyEncoder: no LIN_DMA copy encoder for " + f.String())
	}
	p := LinDMA{Header: h, Memset: memset, WriteCompletion: writeCompletion}
	var b [24]byte
	out, _ := p.Append(f, b[:0])
	e := CopyEncoder{ctl: le.Uint32(out[4:]), dstMask: ^uint64(0), f: f}
	if f == Gaudi {
		e.dstMask = 1<<56 - 1
	}
	return e
}

// Append appends a packet moving size bytes from src to dst (for a fill,
// src is the pattern) within b's capacity: a command buffer is fixed
// memory, so Append never reallocates; without 24 bytes of room it returns
// b unchanged and ErrNoRoom. A dst the format cannot carry (above 56 bits
// on Gaudi) returns b unchanged and a *FieldError matching ErrFieldRange.
// It is small enough to be inlined, so a packet costs a few stores.
func (e CopyEncoder) Append(b []byte, src, dst uint64, size uint32) ([]byte, error) {
	n := len(b)
	if cap(b)-n < 24 {
		return b, ErrNoRoom
	}
	if dst&^e.dstMask != 0 {
		return b, errDst56
	}
	b = b[:n+24]
	store24(b[n:], uint64(size)|uint64(e.ctl)<<32, src, dst)
	return b, nil
}

// errDst56 is the error for a destination address above the 56 bits a
// Gaudi LIN_DMA packet carries.
var errDst56 = &FieldError{Format: Gaudi, Opcode: OpLinDMA, Field: "Dst", Bits: 56, Err: ErrFieldRange}
