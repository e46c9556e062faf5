package packet

import "strconv"

// Decode decodes the packet at the start of b and returns it with its
// length in bytes.
//
// It fails with a *DecodeError (Offset 0) when fewer than 8 bytes are left
// (ErrTruncated), when the opcode is not one of f's (ErrUnknownOpcode) or
// has no layout here (ErrUnsupportedOpcode), or when the packet, WREG_BULK
// values included, extends past the end of b (ErrTruncated); the packet is
// then nil and the length 0.
//
// A packet with bits set that no field holds (or a Gaudi LIN_DMA with its
// lin bit clear, or a Gaudi3 LIN_DMA or LIN_PDMA without en_desc_commit) is
// returned together with its length and an ErrReservedBits error, because
// the driver does not reject such packets: callers that accept what the
// driver accepts may continue after it. Without an error, p.Append(f, nil)
// reproduces b[:n] exactly.
//
// The packet types follow the format: in Gaudi3 and Gaudi3PQM a FENCE is a
// Gaudi3Fence, a Gaudi3 LIN_DMA a Gaudi3LinDMA and a Gaudi3PQM LIN_PDMA a
// LinPDMA; the rest share the Gaudi2 types.
//
// Decode never reads outside b and allocates the returned packet (and
// WREG_BULK's values) only.
func (f Format) Decode(b []byte) (Packet, int, error) {
	if !f.valid() {
		return nil, 0, &DecodeError{Format: f, Reason: "invalid format", Err: ErrNotInFormat}
	}
	if len(b) < 8 {
		return nil, 0, &DecodeError{Format: f, Err: ErrTruncated,
			Reason: strconv.Itoa(len(b)) + " bytes left, a packet header needs 8"}
	}
	w0 := le.Uint32(b)
	ctl := le.Uint32(b[4:])
	op := Opcode(ctlOpcode.get(ctl))
	fail := func(err error, reason string) (Packet, int, error) {
		return nil, 0, &DecodeError{Format: f, Opcode: op, Reason: reason, Err: err}
	}
	if !f.Has(op) {
		return fail(ErrUnknownOpcode, "not a "+f.String()+" opcode")
	}
	n, open := f.packetLen(op, w0, ctl)
	if open != "" {
		return fail(ErrUnsupportedOpcode, open)
	}
	if n > len(b) {
		return fail(ErrTruncated, strconv.Itoa(n)+"-byte packet, "+strconv.Itoa(len(b))+" bytes left")
	}
	p, why := decodeBody(f, op, w0, ctl, b[:n])
	if why != "" {
		return p, n, &DecodeError{Format: f, Opcode: op, Reason: why, Err: ErrReservedBits}
	}
	return p, n, nil
}

// packetLen returns the length of the packet of format f with opcode op
// (one of f's), payload word w0 and control word ctl, or why this package
// cannot tell.
func (f Format) packetLen(op Opcode, w0, ctl uint32) (n int, open string) {
	switch {
	case op == OpWRegBulk, op == OpChWRegBulk:
		return bulkLen(w0), ""
	case f == Gaudi3PQM && op == OpLinPDMA:
		return pdmaLen(ctl)
	case f == Gaudi3 && op == OpLinDMA:
		if why := g3LinOpen(ctl); why != "" {
			return 0, why
		}
	case f == Gaudi3 && op == OpWriteArcStream:
		return 0, "no decoder for WRITE_ARC_STREAM"
	case f == Gaudi2 && op >= OpWriteArcStream:
		return 0, "no layout in the kernel headers"
	}
	return int(fixedLen[op]), ""
}

// decodeBody decodes a packet whose opcode and length are checked; b is
// exactly the packet.
func decodeBody(f Format, op Opcode, w0, ctl uint32, b []byte) (Packet, string) {
	q := func(i int) uint64 { return le.Uint64(b[8+8*i:]) }
	switch op {
	case OpWReg32:
		return decodeWReg32(f, w0, ctl)
	case OpWRegBulk:
		return decodeWRegBulk(f, w0, ctl, b[8:])
	case OpMsgLong:
		return decodeLong(f, w0, ctl, q(0))
	case OpMsgProt:
		p, why := decodeLong(f, w0, ctl, q(0))
		return MsgProt(p), why
	case OpMsgShort:
		return decodeShort(f, w0, ctl)
	case OpCPDMA:
		return decodeCPDMA(f, w0, ctl, q(0))
	case OpRepeat:
		return decodeRepeat(w0, ctl)
	case OpFence:
		if f.g3() {
			return decodeGaudi3Fence(f, w0, ctl)
		}
		return decodeFence(w0, ctl)
	case OpLinDMA:
		switch f {
		case Gaudi3:
			return decodeGaudi3LinDMA(w0, ctl, q(0), q(1))
		case Gaudi3PQM:
			return decodeLinPDMA(w0, ctl, b)
		}
		return decodeLinDMA(f, w0, ctl, q(0), q(1))
	case OpNop:
		h, why := decodeBare(f, op, w0, ctl)
		return Nop{h}, why
	case OpStop:
		h, why := decodeBare(f, op, w0, ctl)
		return Stop{h}, why
	case OpArbPoint:
		return decodeArbPoint(f, w0, ctl)
	case OpWait:
		return decodeWait(f, w0, ctl)
	case OpCBList:
		return decodeCBList(w0, ctl, q(0), q(1))
	case OpLoadAndExe:
		return decodeLoadAndExe(f, w0, ctl, q(0))
	case OpWReg64Short:
		return decodeWReg64Short(f, w0, ctl)
	case OpWReg64Long:
		return decodeWReg64Long(f, w0, ctl, q(0))
	case OpChWReg32:
		return decodeChWReg32(w0, ctl)
	case OpChWRegBulk:
		return decodeChWRegBulk(w0, ctl, b[8:])
	case OpChWReg64Short:
		return decodeChWReg64Short(w0, ctl)
	case OpChWReg64Long:
		return decodeChWReg64Long(w0, ctl, q(0))
	}
	panic("packet: decodeBody: unhandled opcode " + op.String())
}

// Walk decodes the command buffer cb packet by packet and calls fn with
// each packet and its byte offset. It stops at the first error: a decode
// error, as a *DecodeError whose Offset is relative to cb (ErrReservedBits
// included; see Decode for a loop that continues past it), or the error fn
// returns, unchanged.
func (f Format) Walk(cb []byte, fn func(off int, p Packet) error) error {
	for off := 0; off < len(cb); {
		p, n, err := f.Decode(cb[off:])
		if err != nil {
			if de, ok := err.(*DecodeError); ok {
				de.Offset += off
			}
			return err
		}
		if err := fn(off, p); err != nil {
			return err
		}
		off += n
	}
	return nil
}
