package packet

// DecodeLinDMA decodes the LIN_DMA packet at the start of b without
// allocating: the hot path of an executor that runs command buffers. It
// returns the packet and its length (24), and ok false, with a zero packet
// and length, when b does not start with a LIN_DMA packet of format f
// (another opcode, fewer than 24 bytes, or a format other than Gaudi and
// Gaudi2, whose LIN_DMA packets have other types).
//
// Where Decode returns a LinDMA, with or without an ErrReservedBits error,
// DecodeLinDMA returns the same packet with ok true: it does not check
// reserved bits (nor, on Gaudi, the lin bit), for callers that accept what
// the driver accepts. Use Decode to learn about them.
func (f Format) DecodeLinDMA(b []byte) (p LinDMA, n int, ok bool) {
	if f != Gaudi && f != Gaudi2 || len(b) < 24 {
		return LinDMA{}, 0, false
	}
	ctl := le.Uint32(b[4:])
	if Opcode(ctlOpcode.get(ctl)) != OpLinDMA {
		return LinDMA{}, 0, false
	}
	dst := le.Uint64(b[16:])
	p = LinDMA{
		Header:          headerOf(ctl),
		Src:             le.Uint64(b[8:]),
		Dst:             dst,
		Size:            le.Uint32(b),
		WriteCompletion: linWrComp.on(ctl),
		Memset:          linMemset.on(ctl),
	}
	if f == Gaudi {
		p.Dst = g1LinDst.get64(dst)
		p.ContextID = uint16(g1LinCtxLow.get(ctl) | g1LinCtxHigh.get64(dst)<<8)
		p.Transpose = g1LinTranspose.on(ctl)
		p.DType = g1LinDType.on(ctl)
		p.Compress = g1LinCompress.on(ctl)
		p.Decompress = g1LinDecompress.on(ctl)
		return p, 24, true
	}
	p.ContextID = uint16(g2LinCtx.get(ctl))
	p.Endian = uint8(g2LinEndian.get(ctl))
	p.BF16 = g2LinBF16.on(ctl)
	p.FP16 = g2LinFP16.on(ctl)
	return p, 24, true
}
