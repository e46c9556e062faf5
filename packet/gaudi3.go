package packet

import "strconv"

// The packets of the Gaudi3 formats whose layouts have no Gaudi or Gaudi2
// counterpart. Their bit positions are Habana's MIT-licensed Gaudi3
// specifications, read as facts and written here as shifts (marked S in the
// type documentation): gaudi3_packets.h and gaudi3_pqm_packets.h, as shipped
// in github.com/HabanaAI/Intel_Gaudi3_Software specs_h9/gaudi3/ at
// e6cef1c3d122627e08bb3dfd1ec49d7ada86f852 (the CH_WREG packets appear only
// there) and github.com/HenryTangIntel/hlthunk-enhanced include/specs/gaudi3/
// at cb46f4f1640c492ba086aaca89143b9a859a7f8b. The words that follow a
// LIN_DMA or LIN_PDMA header are not in those structures; they come from
// how Habana's own code fills them: hlthunk-enhanced tests/gaudi3/
// hlthunk_tests_gaudi3.c (gaudi3_add_qman_lin_edma_pkt,
// gaudi3_add_pqm_lin_pdma_pkt) and Intel_Gaudi3_Software
// synapse/src/runtime/scal/gaudi3/direct_mode_packets/pqm_packets.cpp
// (LinPdma::build), which agree with the PDMA channel's context registers
// (pdma_ch_a_ctx_regs.h: SRC_BASE_LO, DST_BASE_LO, SRC_BASE_HI,
// DST_BASE_HI, WR_COMP0_ADDR_LO, WR_COMP0_WDATA, WR_COMP0_ADDR_HI, ...).

var (
	// FENCE of both Gaudi3 formats: cfg.
	g3FenceDec    = field{0, 4}
	g3FenceChan   = field{4, 5}
	g3FenceTarget = field{16, 14}
	g3FenceID     = field{30, 2}
	g3FenceKnown  = g3FenceDec.mask() | g3FenceChan.mask() | g3FenceTarget.mask() | g3FenceID.mask()

	// The DMA descriptor control bits that LIN_DMA (Gaudi3) and LIN_PDMA
	// (Gaudi3PQM) share: ctl 11:0.
	dmaWrComp    = field{0, 2}  // wrcomp: number of completion writes
	dmaEndian    = field{2, 2}  // endian_swap
	dmaMemset    = field{4, 1}  // memset
	dmaFence     = field{5, 1}  // fence_en
	dmaCompHiReg = field{6, 1}  // use_wr_comp_addr_hi_from_reg
	dmaCompConsc = field{7, 1}  // consecutive_comp1_2_addr_l
	dmaIncCtx    = field{8, 1}  // inc_context_id
	dmaAddOffset = field{9, 1}  // add_offset_0
	dmaMSBReg    = field{10, 1} // src_dest_msb_from_reg
	dmaCommit    = field{11, 1} // en_desc_commit

	// LIN_DMA of the Gaudi3 format only: ctl 22:12.
	g3LinConvEn    = field{12, 2} // predpack_convert_en
	g3LinConvType  = field{14, 5} // convert_data_type
	g3LinConvClip  = field{19, 1} // convert_dataclipping
	g3LinConvRound = field{20, 3} // convert_rounding

	// LIN_PDMA only: ctl 13:12.
	pdmaAdvCQ = field{12, 1} // advcnt_hbw_complq
	pdmaDir   = field{13, 1} // direction: 1 from host to device

	// The control bits whose packet length the specifications do not
	// settle: more write completions than one, addresses from registers.
	dmaOpenLength = dmaCompHiReg.mask() | dmaCompConsc.mask() | dmaMSBReg.mask()

	g3LinKnown = ctlHeader | dmaWrComp.mask() | dmaEndian.mask() | dmaMemset.mask() | dmaFence.mask() |
		dmaOpenLength | dmaIncCtx.mask() | dmaAddOffset.mask() | dmaCommit.mask() |
		g3LinConvEn.mask() | g3LinConvType.mask() | g3LinConvClip.mask() | g3LinConvRound.mask()
	pdmaKnown = ctlHeaderPQM | dmaWrComp.mask() | dmaEndian.mask() | dmaMemset.mask() | dmaFence.mask() |
		dmaOpenLength | dmaIncCtx.mask() | dmaAddOffset.mask() | dmaCommit.mask() | pdmaAdvCQ.mask() | pdmaDir.mask()

	// The fence word of LIN_PDMA (LinPdma::build's FenceData): the FENCE
	// cfg without the channel id.
	pdmaFenceKnown = g3FenceDec.mask() | g3FenceTarget.mask() | g3FenceID.mask()

	// WREG_64_SHORT, WREG_64_LONG and their CH_ variants: ctl.
	w64Base    = field{5, 5}
	w64DReg    = field{10, 14} // dreg_offset (Gaudi3), dreg_offset_lsb (Gaudi3PQM)
	w64DRegMSB = field{30, 2}  // dreg_offset_msb (Gaudi3PQM)
	chW64DReg  = field{10, 10} // dreg_offset_lsb of the CH_ variants
	chW64B     = field{20, 1}  // a_or_b of the CH_ variants
	// WREG_64_LONG's payload word.
	w64DWEnable = field{0, 2}
	w64Rel      = field{2, 1}
	w64LongW0   = w64DWEnable.mask() | w64Rel.mask()

	// CH_WREG_32 and CH_WREG_BULK: ctl.
	chWregOffset = field{6, 12}
	chWregB      = field{18, 1}
	chWregKnown  = ctlHeaderPQM | ctlPred.mask() | chWregOffset.mask() | chWregB.mask()

	// The sync object update's zero_sob_cntr (Gaudi3 formats).
	g3SOBZero = field{28, 1}
)

// newCheck3 is newCheck for a packet type of the Gaudi3 formats in s.
func newCheck3(f Format, op Opcode, s fset) check {
	c := newCheck(f, op)
	c.types(s)
	return c
}

// Gaudi3Fence is the FENCE packet of the Gaudi3 and Gaudi3PQM formats (8
// bytes): the queue waits until its fence counter ID reaches Target, then
// subtracts Dec from it. Gaudi3 widens Fence's target to 14 bits and adds a
// channel id, whose use the specification does not document.
//
// Bits (S): Dec = cfg 3:0, ChannelID = cfg 8:4, Target = cfg 29:16, ID =
// cfg 31:30, Pred = ctl 4:0.
type Gaudi3Fence struct {
	Header
	ID        uint8  // fence counter, 2 bits
	Target    uint16 // value to wait for, 14 bits
	Dec       uint8  // value subtracted once reached, 4 bits
	ChannelID uint8  // ch_id, 5 bits
	Pred      uint8  // predicate id, 5 bits
}

// Opcode returns OpFence.
func (Gaudi3Fence) Opcode() Opcode { return OpFence }

// Len returns 8.
func (Gaudi3Fence) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Gaudi3Fence) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck3(f, OpFence, inG3)
	c.header(p.Header)
	g3FenceID.check(&c, "ID", uint64(p.ID))
	g3FenceTarget.check(&c, "Target", uint64(p.Target))
	g3FenceDec.check(&c, "Dec", uint64(p.Dec))
	g3FenceChan.check(&c, "ChannelID", uint64(p.ChannelID))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	cfg := g3FenceDec.put(uint64(p.Dec)) | g3FenceChan.put(uint64(p.ChannelID)) |
		g3FenceTarget.put(uint64(p.Target)) | g3FenceID.put(uint64(p.ID))
	return put8(b, cfg, p.ctl(OpFence)|ctlPred.put(uint64(p.Pred))), nil
}

func decodeGaudi3Fence(f Format, cfg, ctl uint32) (Gaudi3Fence, string) {
	return Gaudi3Fence{
		Header:    f.header(ctl),
		ID:        uint8(g3FenceID.get(cfg)),
		Target:    uint16(g3FenceTarget.get(cfg)),
		Dec:       uint8(g3FenceDec.get(cfg)),
		ChannelID: uint8(g3FenceChan.get(cfg)),
		Pred:      uint8(ctlPred.get(ctl)),
	}, either(reserved("cfg", cfg&^g3FenceKnown), reserved("ctl", ctl&^(f.headerBits()|ctlPred.mask())))
}

// String returns a one-line description of the packet.
func (p Gaudi3Fence) String() string {
	s := newStr(OpFence)
	s.dec("ID", uint64(p.ID))
	s.dec("Target", uint64(p.Target))
	s.dec("Dec", uint64(p.Dec))
	s.decNZ("ChannelID", uint64(p.ChannelID))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// Gaudi3LinDMA is the LIN_DMA packet of the Gaudi3 format (24 bytes), which
// the EDMA engines' queue managers run: a linear copy of Size bytes from Src
// to Dst, or with Memset a fill of Size bytes at Dst with the pattern in
// Src. Unlike Gaudi2's, the packet carries each address as a low word in
// the header and a high word after it: tsize, ctl, src[31:0], dst[31:0],
// src[63:32], dst[63:32] (gaudi3_add_qman_lin_edma_pkt).
//
// Bits (S): Size = tsize; ctl: Endian = 3:2, Memset = 4, IncContextID = 8,
// AddOffset = 9, Convert = 13:12, ConvertType = 18:14, ConvertClip = 19,
// ConvertRounding = 22:20. The encoder always sets en_desc_commit (ctl 11),
// which makes the engine start the transfer once the descriptor is loaded,
// as Habana's code always does; a decoded packet without it is reported as
// ErrReservedBits. The write-completion, fence and from-register bits (ctl
// 7:5 and 10, wrcomp in ctl 1:0) change what follows the header in ways the
// sources do not settle for this format: Decode reports such packets with
// ErrUnsupportedOpcode, and this type cannot encode them.
type Gaudi3LinDMA struct {
	Header
	Src  uint64 // source address, or the fill pattern with Memset
	Dst  uint64 // destination address
	Size uint32 // bytes to move

	Memset          bool
	Endian          uint8 // endian_swap, 2 bits
	IncContextID    bool  // inc_context_id
	AddOffset       bool  // add_offset_0
	Convert         uint8 // predpack_convert_en, 2 bits
	ConvertType     uint8 // convert_data_type, 5 bits
	ConvertClip     bool  // convert_dataclipping
	ConvertRounding uint8 // convert_rounding, 3 bits
}

// Opcode returns OpLinDMA.
func (Gaudi3LinDMA) Opcode() Opcode { return OpLinDMA }

// Len returns 24.
func (Gaudi3LinDMA) Len() int { return 24 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p Gaudi3LinDMA) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck3(f, OpLinDMA, inGaudi3)
	dmaEndian.check(&c, "Endian", uint64(p.Endian))
	g3LinConvEn.check(&c, "Convert", uint64(p.Convert))
	g3LinConvType.check(&c, "ConvertType", uint64(p.ConvertType))
	g3LinConvRound.check(&c, "ConvertRounding", uint64(p.ConvertRounding))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpLinDMA) | dmaCommit.flag(true) | dmaEndian.put(uint64(p.Endian)) | dmaMemset.flag(p.Memset) |
		dmaIncCtx.flag(p.IncContextID) | dmaAddOffset.flag(p.AddOffset) | g3LinConvEn.put(uint64(p.Convert)) |
		g3LinConvType.put(uint64(p.ConvertType)) | g3LinConvClip.flag(p.ConvertClip) | g3LinConvRound.put(uint64(p.ConvertRounding))
	lo := p.Src&0xffffffff | p.Dst<<32
	hi := p.Src>>32 | p.Dst>>32<<32
	return put24(b, p.Size, ctl, lo, hi), nil
}

// g3LinOpen returns why the Gaudi3 LIN_DMA with control word ctl has a
// length this package does not know, or "".
func g3LinOpen(ctl uint32) string {
	if ctl&(dmaOpenLength|dmaWrComp.mask()|dmaFence.mask()) != 0 {
		return "write completion, fence or from-register bits set (ctl " + hex32(ctl&(dmaOpenLength|dmaWrComp.mask()|dmaFence.mask())) + "): the words after the header are not settled"
	}
	return ""
}

func decodeGaudi3LinDMA(w0, ctl uint32, lo, hi uint64) (Gaudi3LinDMA, string) {
	p := Gaudi3LinDMA{
		Header:          headerOf(ctl),
		Src:             lo&0xffffffff | hi<<32,
		Dst:             lo>>32 | hi>>32<<32,
		Size:            w0,
		Memset:          dmaMemset.on(ctl),
		Endian:          uint8(dmaEndian.get(ctl)),
		IncContextID:    dmaIncCtx.on(ctl),
		AddOffset:       dmaAddOffset.on(ctl),
		Convert:         uint8(g3LinConvEn.get(ctl)),
		ConvertType:     uint8(g3LinConvType.get(ctl)),
		ConvertClip:     g3LinConvClip.on(ctl),
		ConvertRounding: uint8(g3LinConvRound.get(ctl)),
	}
	if !dmaCommit.on(ctl) {
		return p, "en_desc_commit (ctl bit 11) clear: the transfer is never started"
	}
	return p, reserved("ctl", ctl&^g3LinKnown)
}

// String returns a one-line description of the packet.
func (p Gaudi3LinDMA) String() string {
	s := newStr(OpLinDMA)
	s.hex("Src", p.Src)
	s.hex("Dst", p.Dst)
	s.dec("Size", uint64(p.Size))
	s.flag(p.Memset, "Memset")
	s.decNZ("Endian", uint64(p.Endian))
	s.flag(p.IncContextID, "IncContextID")
	s.flag(p.AddOffset, "AddOffset")
	s.decNZ("Convert", uint64(p.Convert))
	s.decNZ("ConvertType", uint64(p.ConvertType))
	s.flag(p.ConvertClip, "ConvertClip")
	s.decNZ("ConvertRounding", uint64(p.ConvertRounding))
	p.barriers(s)
	return s.String()
}

// LinPDMA is the LIN_PDMA packet of the Gaudi3PQM format (24, 32 or 40
// bytes): a linear transfer of Size bytes by a PDMA channel, from Src to
// Dst, or with Memset a fill of Size bytes at Dst with the 64-bit pattern
// in Src; HostToDevice tells the channel the direction. When it is done
// the channel writes CompletionData to CompletionAddr if WriteCompletion is
// set, which is how a user learns that a transfer finished (a sync object
// or completion queue counts the writes). With Fence the channel first
// waits on its fence counter FenceID as a FENCE packet would.
//
// Layout (S): tsize; ctl; src[31:0]; dst[31:0]; then 8-byte words:
// src[63:32] | dst[63:32]<<32; with WriteCompletion,
// CompletionAddr[31:0] | CompletionData<<32 and CompletionAddr[63:32] |
// fence<<32; without it but with Fence, fence<<32. The fence word is
// FENCE's cfg without the channel id: Dec = 3:0, Target = 29:16, ID =
// 31:30. Control bits: Endian = ctl 3:2, Memset = 4, Fence = 5,
// IncContextID = 8, AddOffset = 9, AdvanceCompletionQueue = 12,
// HostToDevice = 13 (direction), WriteCompletion = wrcomp (ctl 1:0) 1.
//
// The encoder always sets en_desc_commit (ctl 11), which commits the
// descriptor so that the transfer starts, as both Habana's tests and its
// runtime do; Decode reports a packet without it as ErrReservedBits. A
// wrcomp of 2 or 3 and the from-register bits (ctl 7:6 and 10) make
// layouts the sources do not show: Decode reports them with
// ErrUnsupportedOpcode. Synapse's LinPdma::getSize gives 24 bytes to a
// fenced packet without completion although its structure puts the fence
// word at bytes 28..31; this package follows the structure (32 bytes).
type LinPDMA struct {
	Header // EngineBarrier only
	Src    uint64
	Dst    uint64
	Size   uint32

	HostToDevice           bool  // direction: 1 from host to device
	Memset                 bool  // fill Dst with the pattern in Src
	Endian                 uint8 // endian_swap, 2 bits
	IncContextID           bool  // inc_context_id
	AddOffset              bool  // add_offset_0
	AdvanceCompletionQueue bool  // advcnt_hbw_complq

	WriteCompletion bool   // write CompletionData to CompletionAddr when done
	CompletionAddr  uint64 // only with WriteCompletion
	CompletionData  uint32 // only with WriteCompletion

	Fence       bool   // fence_en: wait on the fence counter first
	FenceID     uint8  // only with Fence, 2 bits
	FenceTarget uint16 // only with Fence, 14 bits
	FenceDec    uint8  // only with Fence, 4 bits
}

// Opcode returns OpLinPDMA.
func (LinPDMA) Opcode() Opcode { return OpLinPDMA }

// Len returns 40 with WriteCompletion, 32 with Fence alone, else 24.
func (p LinPDMA) Len() int {
	switch {
	case p.WriteCompletion:
		return 40
	case p.Fence:
		return 32
	}
	return 24
}

// Append appends the packet to b; see LinDMA.Append for the contract. The
// completion and fence fields must be zero without WriteCompletion or
// Fence (a *FieldError with Bits 0 otherwise).
func (p LinPDMA) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck3(f, OpLinPDMA, inPQM)
	c.header(p.Header)
	dmaEndian.check(&c, "Endian", uint64(p.Endian))
	if p.Fence {
		g3FenceID.check(&c, "FenceID", uint64(p.FenceID))
		g3FenceTarget.check(&c, "FenceTarget", uint64(p.FenceTarget))
		g3FenceDec.check(&c, "FenceDec", uint64(p.FenceDec))
	} else {
		c.unused("FenceID (without Fence)", uint64(p.FenceID))
		c.unused("FenceTarget (without Fence)", uint64(p.FenceTarget))
		c.unused("FenceDec (without Fence)", uint64(p.FenceDec))
	}
	if !p.WriteCompletion {
		c.unused("CompletionAddr (without WriteCompletion)", p.CompletionAddr)
		c.unused("CompletionData (without WriteCompletion)", uint64(p.CompletionData))
	}
	if c.err != nil {
		return b, c.err
	}
	ctl := Header{EngineBarrier: p.EngineBarrier}.ctl(OpLinPDMA) | dmaCommit.flag(true) |
		dmaWrComp.put(b2u(p.WriteCompletion)) | dmaEndian.put(uint64(p.Endian)) | dmaMemset.flag(p.Memset) |
		dmaFence.flag(p.Fence) | dmaIncCtx.flag(p.IncContextID) | dmaAddOffset.flag(p.AddOffset) |
		pdmaAdvCQ.flag(p.AdvanceCompletionQueue) | pdmaDir.flag(p.HostToDevice)
	var fence uint64
	if p.Fence {
		fence = uint64(g3FenceDec.put(uint64(p.FenceDec)) | g3FenceTarget.put(uint64(p.FenceTarget)) | g3FenceID.put(uint64(p.FenceID)))
	}
	n := p.Len()
	b, t := grow(b, n)
	le.PutUint32(t, p.Size)
	le.PutUint32(t[4:], ctl)
	le.PutUint64(t[8:], p.Src&0xffffffff|p.Dst<<32)
	le.PutUint64(t[16:], p.Src>>32|p.Dst>>32<<32)
	switch n {
	case 40:
		le.PutUint64(t[24:], p.CompletionAddr&0xffffffff|uint64(p.CompletionData)<<32)
		le.PutUint64(t[32:], p.CompletionAddr>>32|fence<<32)
	case 32:
		le.PutUint64(t[24:], fence<<32)
	}
	return b, nil
}

// unused rejects a field set without the flag that puts it in the packet.
func (c *check) unused(name string, v uint64) {
	if c.err == nil && v != 0 {
		c.fail(name, v, 0, ErrFieldRange)
	}
}

// pdmaLen returns the length of the LIN_PDMA with control word ctl, or 0
// and why it is not known.
func pdmaLen(ctl uint32) (int, string) {
	if open := ctl & dmaOpenLength; open != 0 {
		return 0, "from-register bits set (ctl " + hex32(open) + "): the words after the header are not settled"
	}
	switch w := dmaWrComp.get(ctl); {
	case w == 1:
		return 40, ""
	case w > 1:
		return 0, strconv.FormatUint(w, 10) + " write completions: only one is laid out"
	case dmaFence.on(ctl):
		return 32, ""
	}
	return 24, ""
}

func decodeLinPDMA(w0, ctl uint32, b []byte) (LinPDMA, string) {
	lo, hi := le.Uint64(b[8:]), le.Uint64(b[16:])
	p := LinPDMA{
		Header:                 Header{EngineBarrier: ctlEB.on(ctl)},
		Src:                    lo&0xffffffff | hi<<32,
		Dst:                    lo>>32 | hi>>32<<32,
		Size:                   w0,
		HostToDevice:           pdmaDir.on(ctl),
		Memset:                 dmaMemset.on(ctl),
		Endian:                 uint8(dmaEndian.get(ctl)),
		IncContextID:           dmaIncCtx.on(ctl),
		AddOffset:              dmaAddOffset.on(ctl),
		AdvanceCompletionQueue: pdmaAdvCQ.on(ctl),
		WriteCompletion:        dmaWrComp.get(ctl) == 1,
		Fence:                  dmaFence.on(ctl),
	}
	var fence uint32
	var why string
	switch len(b) {
	case 40:
		c0, c1 := le.Uint64(b[24:]), le.Uint64(b[32:])
		p.CompletionAddr = c0&0xffffffff | c1<<32
		p.CompletionData = uint32(c0 >> 32)
		fence = uint32(c1 >> 32)
	case 32:
		w := le.Uint64(b[24:])
		fence = uint32(w >> 32)
		why = reserved("word 6", uint32(w))
	}
	if p.Fence {
		p.FenceID = uint8(g3FenceID.get(fence))
		p.FenceTarget = uint16(g3FenceTarget.get(fence))
		p.FenceDec = uint8(g3FenceDec.get(fence))
		why = either(why, reserved("fence word", fence&^pdmaFenceKnown))
	} else {
		why = either(why, reserved("fence word without fence_en", fence))
	}
	if !dmaCommit.on(ctl) {
		return p, "en_desc_commit (ctl bit 11) clear: the transfer is never started"
	}
	return p, either(reserved("ctl", ctl&^pdmaKnown), why)
}

// String returns a one-line description such as
// LIN_PDMA{Src:0x1000 Dst:0x2000 Size:4096 HostToDevice}.
func (p LinPDMA) String() string {
	s := newStrName("LIN_PDMA")
	s.hex("Src", p.Src)
	s.hex("Dst", p.Dst)
	s.dec("Size", uint64(p.Size))
	s.flag(p.HostToDevice, "HostToDevice")
	s.flag(p.Memset, "Memset")
	s.decNZ("Endian", uint64(p.Endian))
	s.flag(p.IncContextID, "IncContextID")
	s.flag(p.AddOffset, "AddOffset")
	s.flag(p.AdvanceCompletionQueue, "AdvanceCompletionQueue")
	if p.WriteCompletion {
		s.hex("CompletionAddr", p.CompletionAddr)
		s.hex("CompletionData", uint64(p.CompletionData))
	}
	if p.Fence {
		s.dec("FenceID", uint64(p.FenceID))
		s.dec("FenceTarget", uint64(p.FenceTarget))
		s.dec("FenceDec", uint64(p.FenceDec))
	}
	p.barriers(s)
	return s.String()
}

// WReg64Short is a WREG_64_SHORT packet of the Gaudi3 formats (8 bytes).
// The specifications give its fields but not their meaning: Offset is the
// payload, Base selects one of the queue manager's WR64_BASE_ADDR registers
// (pdma_cmn_b's description: "wrreg64 base address even for lsb, odd for
// msb"), DRegOffset the destination register. Gaudi2 has the opcode too,
// with no layout in the kernel headers; this type does not encode it.
//
// Bits (S): Offset = offset; Pred = ctl 4:0; Base = ctl 9:5; DRegOffset =
// ctl 23:10 (Gaudi3, 14 bits), ctl 23:10 and 31:30 (Gaudi3PQM, 16 bits:
// dreg_offset_lsb and _msb).
type WReg64Short struct {
	Header
	Offset     uint32
	Base       uint8  // 5 bits
	DRegOffset uint16 // 14 bits, 16 in Gaudi3PQM
	Pred       uint8  // predicate id, 5 bits
}

// Opcode returns OpWReg64Short.
func (WReg64Short) Opcode() Opcode { return OpWReg64Short }

// Len returns 8.
func (WReg64Short) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p WReg64Short) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := w64ctl(f, OpWReg64Short, p.Header, p.Base, p.DRegOffset, p.Pred)
	if err != nil {
		return b, err
	}
	return put8(b, p.Offset, ctl), nil
}

// w64ctl checks and encodes the control word of WREG_64_SHORT and
// WREG_64_LONG.
func w64ctl(f Format, op Opcode, h Header, base uint8, dreg uint16, pred uint8) (uint32, error) {
	c := newCheck3(f, op, inG3)
	c.header(h)
	w64Base.check(&c, "Base", uint64(base))
	ctlPred.check(&c, "Pred", uint64(pred))
	if f == Gaudi3 {
		w64DReg.check(&c, "DRegOffset", uint64(dreg))
	}
	if c.err != nil {
		return 0, c.err
	}
	ctl := h.ctl(op) | ctlPred.put(uint64(pred)) | w64Base.put(uint64(base)) | w64DReg.put(uint64(dreg)&(1<<14-1))
	if f == Gaudi3PQM {
		ctl |= w64DRegMSB.put(uint64(dreg >> 14))
	}
	return ctl, nil
}

// w64fields decodes the control word of WREG_64_SHORT and WREG_64_LONG.
func w64fields(f Format, ctl uint32) (h Header, base uint8, dreg uint16, pred uint8, why string) {
	h = f.header(ctl)
	base = uint8(w64Base.get(ctl))
	dreg = uint16(w64DReg.get(ctl))
	pred = uint8(ctlPred.get(ctl))
	known := f.headerBits() | ctlPred.mask() | w64Base.mask() | w64DReg.mask()
	if f == Gaudi3PQM {
		dreg |= uint16(w64DRegMSB.get(ctl)) << 14
		known |= w64DRegMSB.mask()
	}
	return h, base, dreg, pred, reserved("ctl", ctl&^known)
}

func decodeWReg64Short(f Format, w0, ctl uint32) (WReg64Short, string) {
	h, base, dreg, pred, why := w64fields(f, ctl)
	return WReg64Short{Header: h, Offset: w0, Base: base, DRegOffset: dreg, Pred: pred}, why
}

// String returns a one-line description of the packet.
func (p WReg64Short) String() string {
	s := newStr(OpWReg64Short)
	s.hex("DRegOffset", uint64(p.DRegOffset))
	s.dec("Base", uint64(p.Base))
	s.hex("Offset", uint64(p.Offset))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// WReg64Long is a WREG_64_LONG packet of the Gaudi3 formats (16 bytes):
// WReg64Short's control word with a 64-bit Offset and two more fields the
// specifications name without explaining.
//
// Bits (S): DWEnable = word 0 1:0 (dw_enable), Rel = word 0 2; ctl as
// WReg64Short; Offset = the second 8-byte word.
type WReg64Long struct {
	Header
	Offset     uint64
	Base       uint8  // 5 bits
	DRegOffset uint16 // 14 bits, 16 in Gaudi3PQM
	DWEnable   uint8  // dw_enable, 2 bits
	Rel        bool   // rel
	Pred       uint8  // predicate id, 5 bits
}

// Opcode returns OpWReg64Long.
func (WReg64Long) Opcode() Opcode { return OpWReg64Long }

// Len returns 16.
func (WReg64Long) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p WReg64Long) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := w64ctl(f, OpWReg64Long, p.Header, p.Base, p.DRegOffset, p.Pred)
	if err == nil && !w64DWEnable.fits(uint64(p.DWEnable)) {
		err = &FieldError{Format: f, Opcode: OpWReg64Long, Field: "DWEnable", Value: uint64(p.DWEnable), Bits: 2, Err: ErrFieldRange}
	}
	if err != nil {
		return b, err
	}
	return put16(b, w64DWEnable.put(uint64(p.DWEnable))|w64Rel.flag(p.Rel), ctl, p.Offset), nil
}

func decodeWReg64Long(f Format, w0, ctl uint32, off uint64) (WReg64Long, string) {
	h, base, dreg, pred, why := w64fields(f, ctl)
	return WReg64Long{Header: h, Offset: off, Base: base, DRegOffset: dreg, Pred: pred,
		DWEnable: uint8(w64DWEnable.get(w0)), Rel: w64Rel.on(w0)}, either(reserved("word 0", w0&^w64LongW0), why)
}

// String returns a one-line description of the packet.
func (p WReg64Long) String() string {
	s := newStr(OpWReg64Long)
	s.hex("DRegOffset", uint64(p.DRegOffset))
	s.dec("Base", uint64(p.Base))
	s.hex("Offset", p.Offset)
	s.decNZ("DWEnable", uint64(p.DWEnable))
	s.flag(p.Rel, "Rel")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// ChWReg32 is a CH_WREG_32 packet of the Gaudi3PQM format (8 bytes): a
// WREG_32 to a register of the channel's own blocks, at Offset in block A,
// or in block B with BlockB (a_or_b). Synapse's direct-mode runtime uses it
// to program a channel's registers from its own queue (ChWreg32::build).
//
// Bits (S): Value = value; Pred = ctl 4:0; Offset = ctl 17:6; BlockB = ctl
// 18.
type ChWReg32 struct {
	Header
	Value  uint32
	Offset uint16 // reg_offset, 12 bits
	BlockB bool   // a_or_b
	Pred   uint8  // predicate id, 5 bits
}

// Opcode returns OpChWReg32.
func (ChWReg32) Opcode() Opcode { return OpChWReg32 }

// Len returns 8.
func (ChWReg32) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p ChWReg32) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := chWregCtl(f, OpChWReg32, p.Header, p.Offset, p.BlockB, p.Pred)
	if err != nil {
		return b, err
	}
	return put8(b, p.Value, ctl), nil
}

// chWregCtl checks and encodes the control word of CH_WREG_32 and
// CH_WREG_BULK.
func chWregCtl(f Format, op Opcode, h Header, off uint16, blockB bool, pred uint8) (uint32, error) {
	c := newCheck3(f, op, inPQM)
	c.header(h)
	chWregOffset.check(&c, "Offset", uint64(off))
	ctlPred.check(&c, "Pred", uint64(pred))
	if c.err != nil {
		return 0, c.err
	}
	return h.ctl(op) | ctlPred.put(uint64(pred)) | chWregOffset.put(uint64(off)) | chWregB.flag(blockB), nil
}

func decodeChWReg32(w0, ctl uint32) (ChWReg32, string) {
	return ChWReg32{
		Header: Header{EngineBarrier: ctlEB.on(ctl)},
		Value:  w0,
		Offset: uint16(chWregOffset.get(ctl)),
		BlockB: chWregB.on(ctl),
		Pred:   uint8(ctlPred.get(ctl)),
	}, reserved("ctl", ctl&^chWregKnown)
}

// String returns a one-line description of the packet.
func (p ChWReg32) String() string {
	s := newStr(OpChWReg32)
	s.hex("Offset", uint64(p.Offset))
	s.flag(p.BlockB, "BlockB")
	s.hex("Value", uint64(p.Value))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// ChWRegBulk is a CH_WREG_BULK packet of the Gaudi3PQM format (8 +
// 8*len(Values) bytes): WREG_BULK to the channel's own registers.
//
// Bits (S): len(Values) = size64 15:0; ctl as ChWReg32.
type ChWRegBulk struct {
	Header
	Offset uint16 // reg_offset of the first register, 12 bits
	BlockB bool   // a_or_b
	Pred   uint8  // predicate id, 5 bits
	Values []uint64
}

// Opcode returns OpChWRegBulk.
func (ChWRegBulk) Opcode() Opcode { return OpChWRegBulk }

// Len returns 8 + 8*len(p.Values).
func (p ChWRegBulk) Len() int { return 8 + 8*len(p.Values) }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p ChWRegBulk) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := chWregCtl(f, OpChWRegBulk, p.Header, p.Offset, p.BlockB, p.Pred)
	if err == nil && !bulkSize.fits(uint64(len(p.Values))) {
		err = &FieldError{Format: f, Opcode: OpChWRegBulk, Field: "len(Values)", Value: uint64(len(p.Values)), Bits: 16, Err: ErrFieldRange}
	}
	if err != nil {
		return b, err
	}
	return appendBulk(b, ctl, p.Values), nil
}

func decodeChWRegBulk(w0, ctl uint32, body []byte) (ChWRegBulk, string) {
	return ChWRegBulk{
		Header: Header{EngineBarrier: ctlEB.on(ctl)},
		Offset: uint16(chWregOffset.get(ctl)),
		BlockB: chWregB.on(ctl),
		Pred:   uint8(ctlPred.get(ctl)),
		Values: bulkValues(body),
	}, either(reserved("size64", w0&^bulkSize.mask()), reserved("ctl", ctl&^chWregKnown))
}

// String returns a one-line description of the packet, without the values.
func (p ChWRegBulk) String() string {
	s := newStr(OpChWRegBulk)
	s.hex("Offset", uint64(p.Offset))
	s.flag(p.BlockB, "BlockB")
	s.dec("Values", uint64(len(p.Values)))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// ChWReg64Short is a CH_WREG_64_SHORT packet of the Gaudi3PQM format (8
// bytes): WREG_64_SHORT to the channel's own registers.
//
// Bits (S): Offset = offset; Pred = ctl 4:0; Base = ctl 9:5; DRegOffset =
// ctl 19:10 and 31:30 (12 bits: dreg_offset_lsb and _msb); BlockB = ctl 20.
type ChWReg64Short struct {
	Header
	Offset     uint32
	Base       uint8  // 5 bits
	DRegOffset uint16 // 12 bits
	BlockB     bool   // a_or_b
	Pred       uint8  // predicate id, 5 bits
}

// Opcode returns OpChWReg64Short.
func (ChWReg64Short) Opcode() Opcode { return OpChWReg64Short }

// Len returns 8.
func (ChWReg64Short) Len() int { return 8 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p ChWReg64Short) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := chW64ctl(f, OpChWReg64Short, p.Header, p.Base, p.DRegOffset, p.BlockB, p.Pred)
	if err != nil {
		return b, err
	}
	return put8(b, p.Offset, ctl), nil
}

// chW64ctl checks and encodes the control word of the CH_WREG_64 packets.
func chW64ctl(f Format, op Opcode, h Header, base uint8, dreg uint16, blockB bool, pred uint8) (uint32, error) {
	c := newCheck3(f, op, inPQM)
	c.header(h)
	w64Base.check(&c, "Base", uint64(base))
	c.fits("DRegOffset", uint64(dreg), 12)
	ctlPred.check(&c, "Pred", uint64(pred))
	if c.err != nil {
		return 0, c.err
	}
	return h.ctl(op) | ctlPred.put(uint64(pred)) | w64Base.put(uint64(base)) | chW64DReg.put(uint64(dreg)&(1<<10-1)) |
		w64DRegMSB.put(uint64(dreg>>10)) | chW64B.flag(blockB), nil
}

// chW64fields decodes the control word of the CH_WREG_64 packets.
func chW64fields(ctl uint32) (h Header, base uint8, dreg uint16, blockB bool, pred uint8, why string) {
	known := ctlHeaderPQM | ctlPred.mask() | w64Base.mask() | chW64DReg.mask() | chW64B.mask() | w64DRegMSB.mask()
	return Header{EngineBarrier: ctlEB.on(ctl)}, uint8(w64Base.get(ctl)),
		uint16(chW64DReg.get(ctl)) | uint16(w64DRegMSB.get(ctl))<<10, chW64B.on(ctl), uint8(ctlPred.get(ctl)),
		reserved("ctl", ctl&^known)
}

func decodeChWReg64Short(w0, ctl uint32) (ChWReg64Short, string) {
	h, base, dreg, blockB, pred, why := chW64fields(ctl)
	return ChWReg64Short{Header: h, Offset: w0, Base: base, DRegOffset: dreg, BlockB: blockB, Pred: pred}, why
}

// String returns a one-line description of the packet.
func (p ChWReg64Short) String() string {
	s := newStr(OpChWReg64Short)
	s.hex("DRegOffset", uint64(p.DRegOffset))
	s.flag(p.BlockB, "BlockB")
	s.dec("Base", uint64(p.Base))
	s.hex("Offset", uint64(p.Offset))
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// ChWReg64Long is a CH_WREG_64_LONG packet of the Gaudi3PQM format (16
// bytes): WREG_64_LONG to the channel's own registers.
//
// Bits (S): DWEnable = word 0 1:0, Rel = word 0 2; ctl as ChWReg64Short;
// Offset = the second 8-byte word.
type ChWReg64Long struct {
	Header
	Offset     uint64
	Base       uint8  // 5 bits
	DRegOffset uint16 // 12 bits
	BlockB     bool   // a_or_b
	DWEnable   uint8  // dw_enable, 2 bits
	Rel        bool   // rel
	Pred       uint8  // predicate id, 5 bits
}

// Opcode returns OpChWReg64Long.
func (ChWReg64Long) Opcode() Opcode { return OpChWReg64Long }

// Len returns 16.
func (ChWReg64Long) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p ChWReg64Long) Append(f Format, b []byte) ([]byte, error) {
	ctl, err := chW64ctl(f, OpChWReg64Long, p.Header, p.Base, p.DRegOffset, p.BlockB, p.Pred)
	if err == nil && !w64DWEnable.fits(uint64(p.DWEnable)) {
		err = &FieldError{Format: f, Opcode: OpChWReg64Long, Field: "DWEnable", Value: uint64(p.DWEnable), Bits: 2, Err: ErrFieldRange}
	}
	if err != nil {
		return b, err
	}
	return put16(b, w64DWEnable.put(uint64(p.DWEnable))|w64Rel.flag(p.Rel), ctl, p.Offset), nil
}

func decodeChWReg64Long(w0, ctl uint32, off uint64) (ChWReg64Long, string) {
	h, base, dreg, blockB, pred, why := chW64fields(ctl)
	return ChWReg64Long{Header: h, Offset: off, Base: base, DRegOffset: dreg, BlockB: blockB, Pred: pred,
		DWEnable: uint8(w64DWEnable.get(w0)), Rel: w64Rel.on(w0)}, either(reserved("word 0", w0&^w64LongW0), why)
}

// String returns a one-line description of the packet.
func (p ChWReg64Long) String() string {
	s := newStr(OpChWReg64Long)
	s.hex("DRegOffset", uint64(p.DRegOffset))
	s.flag(p.BlockB, "BlockB")
	s.dec("Base", uint64(p.Base))
	s.hex("Offset", p.Offset)
	s.decNZ("DWEnable", uint64(p.DWEnable))
	s.flag(p.Rel, "Rel")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}
