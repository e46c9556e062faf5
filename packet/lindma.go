package packet

import (
	"math"

	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
	g2 "github.com/gaudi-go/gaudi/uapi/gaudi2"
)

// Transfer sizes of LIN_DMA.
const (
	// MaxTransferSize is the most bytes one LIN_DMA packet moves: tsize is a
	// 32-bit field, and the driver merges scatter-gather entries up to the
	// same bound (DMA_MAX_TRANSFER_SIZE, U32_MAX, in gaudi_patch_dma_packet).
	// The LinDMA.Size type enforces it.
	MaxTransferSize = math.MaxUint32

	// DriverChunkSize is the chunk the driver itself splits large device
	// memsets into, one LIN_DMA (or engine commit) per 2 GiB
	// (gaudi_scrub_device_dram, gaudi2_memset_device_memory). Callers that
	// split transfers may use it to stay on sizes the driver exercises.
	DriverChunkSize = 1 << 31
)

// LinDMA is a LIN_DMA packet (24 bytes): a linear copy of Size bytes from
// Src to Dst, or with Memset a fill of Size bytes at Dst with the 64-bit
// pattern held in Src. There is no direction field: the addresses decide.
//
// Fields and where their bits come from (K: kernel header macro,
// T: hl-thunk's packet header):
//
//	field            Gaudi                          Gaudi2
//	Size             tsize (K)                      tsize (K)
//	WriteCompletion  ctl 0 (K)                      ctl 0 (K)
//	Memset           ctl 4 (K)                      ctl 4 (K)
//	ContextID        ctl 23:16 low byte, dst 63:56  ctl 23:8 (K)
//	                 high byte (T)
//	Dst              dst 55:0 (K)                   dst, 64 bits (K)
//	Transpose        ctl 1 (T)                      -
//	DType            ctl 2 (T)                      -
//	Compress         ctl 5 (T)                      -
//	Decompress       ctl 6 (T)                      -
//	Endian           -                              ctl 2:1 (K)
//	BF16, FP16       -                              ctl 6, ctl 7 (T)
//
// On Gaudi the encoder always sets the lin bit (ctl 3, K), as the driver does
// for every LIN_DMA it builds (hl-thunk's header adds that RegBarrier must
// be set, which the driver's own LIN_DMA packets also do; the encoder leaves
// Header to the caller); a decoded Gaudi LIN_DMA with that bit clear is
// reported as ErrReservedBits. The Gaudi2 kernel header gives ctl 23:8 to
// the context id where hl-thunk puts two flags at bits 8 and 9; the kernel
// wins.
//
// The Gaudi driver passes user LIN_DMA packets through unchanged when its
// MMU is on (the normal case); only the debug no-MMU parser rewrites them
// per scatter-gather entry, clearing EB and WriteCompletion on all but the
// last piece (gaudi_patch_dma_packet).
//
// LinDMA encodes Gaudi and Gaudi2 only: Gaudi3's LIN_DMA, with its
// addresses split into low and high words, is Gaudi3LinDMA, and opcode 9 of
// the Gaudi3PQM format is LinPDMA.
type LinDMA struct {
	Header
	Src  uint64 // source address, or the fill pattern with Memset
	Dst  uint64 // destination address; Gaudi: 56 bits
	Size uint32 // bytes to move; 0 moves nothing but still completes

	WriteCompletion bool   // write the engine's completion when done
	Memset          bool   // fill Dst with the pattern in Src
	ContextID       uint16 // context id tag of the transfer

	Transpose  bool // Gaudi only
	DType      bool // Gaudi only
	Compress   bool // Gaudi only
	Decompress bool // Gaudi only

	Endian uint8 // Gaudi2 only: byte-swap mode, 2 bits (0: none)
	BF16   bool  // Gaudi2 only
	FP16   bool  // Gaudi2 only
}

var (
	linWrComp = fieldOf(g1.GAUDI_PKT_LIN_DMA_CTL_WRCOMP_EN_SHIFT, g1.GAUDI_PKT_LIN_DMA_CTL_WRCOMP_EN_MASK)
	linMemset = fieldOf(g1.GAUDI_PKT_LIN_DMA_CTL_MEMSET_SHIFT, g1.GAUDI_PKT_LIN_DMA_CTL_MEMSET_MASK)

	g1LinLin        = fieldOf(g1.GAUDI_PKT_LIN_DMA_CTL_LIN_SHIFT, g1.GAUDI_PKT_LIN_DMA_CTL_LIN_MASK)
	g1LinDst        = fieldOf(g1.GAUDI_PKT_LIN_DMA_DST_ADDR_SHIFT, g1.GAUDI_PKT_LIN_DMA_DST_ADDR_MASK)
	g1LinTranspose  = field{1, 1}
	g1LinDType      = field{2, 1}
	g1LinCompress   = field{5, 1}
	g1LinDecompress = field{6, 1}
	g1LinCtxLow     = field{16, 8} // ctl
	g1LinCtxHigh    = field{56, 8} // dst_addr

	g2LinWrComp = fieldOf(g2.GAUDI2_PKT_LIN_DMA_CTL_WRCOMP_SHIFT, g2.GAUDI2_PKT_LIN_DMA_CTL_WRCOMP_MASK)
	g2LinMemset = fieldOf(g2.GAUDI2_PKT_LIN_DMA_CTL_MEMSET_SHIFT, g2.GAUDI2_PKT_LIN_DMA_CTL_MEMSET_MASK)
	g2LinEndian = fieldOf(g2.GAUDI2_PKT_LIN_DMA_CTL_ENDIAN_SHIFT, g2.GAUDI2_PKT_LIN_DMA_CTL_ENDIAN_MASK)
	g2LinCtx    = fieldOf(g2.GAUDI2_PKT_LIN_DMA_CTL_CONTEXT_ID_SHIFT, g2.GAUDI2_PKT_LIN_DMA_CTL_CONTEXT_ID_MASK)
	g2LinBF16   = field{6, 1}
	g2LinFP16   = field{7, 1}

	g1LinKnown = ctlHeader | linWrComp.mask() | g1LinTranspose.mask() | g1LinDType.mask() | g1LinLin.mask() |
		linMemset.mask() | g1LinCompress.mask() | g1LinDecompress.mask() | g1LinCtxLow.mask()
	g2LinKnown = ctlHeader | g2LinWrComp.mask() | g2LinEndian.mask() | g2LinMemset.mask() |
		g2LinBF16.mask() | g2LinFP16.mask() | g2LinCtx.mask()
)

// Opcode returns OpLinDMA.
func (LinDMA) Opcode() Opcode { return OpLinDMA }

// Len returns 24.
func (LinDMA) Len() int { return 24 }

// Append appends the packet in format f to b. It returns b unchanged and a
// *FieldError when a field does not fit or is not available in f. It does
// not allocate when b has 24 bytes of spare capacity.
func (p LinDMA) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpLinDMA)
	c.types(inGaudi | inGaudi2)
	ctl := p.ctl(OpLinDMA) | linWrComp.flag(p.WriteCompletion) | linMemset.flag(p.Memset)
	dst := p.Dst
	switch f {
	case Gaudi:
		g1LinDst.check(&c, "Dst", p.Dst)
		c.only(Gaudi2, "Endian", uint64(p.Endian))
		c.only(Gaudi2, "BF16", b2u(p.BF16))
		c.only(Gaudi2, "FP16", b2u(p.FP16))
		ctl |= g1LinLin.flag(true) | g1LinTranspose.flag(p.Transpose) | g1LinDType.flag(p.DType) |
			g1LinCompress.flag(p.Compress) | g1LinDecompress.flag(p.Decompress) |
			g1LinCtxLow.put(uint64(p.ContextID&0xff))
		dst |= g1LinCtxHigh.put64(uint64(p.ContextID >> 8))
	case Gaudi2:
		c.only(Gaudi, "Transpose", b2u(p.Transpose))
		c.only(Gaudi, "DType", b2u(p.DType))
		c.only(Gaudi, "Compress", b2u(p.Compress))
		c.only(Gaudi, "Decompress", b2u(p.Decompress))
		g2LinEndian.check(&c, "Endian", uint64(p.Endian))
		ctl |= g2LinEndian.put(uint64(p.Endian)) | g2LinBF16.flag(p.BF16) | g2LinFP16.flag(p.FP16) |
			g2LinCtx.put(uint64(p.ContextID))
	}
	if c.err != nil {
		return b, c.err
	}
	return put24(b, p.Size, ctl, p.Src, dst), nil
}

func decodeLinDMA(f Format, w0, ctl uint32, src, dst uint64) (LinDMA, string) {
	p := LinDMA{
		Header:          headerOf(ctl),
		Src:             src,
		Dst:             dst,
		Size:            w0,
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
		if !g1LinLin.on(ctl) {
			return p, "lin bit (ctl bit 3) clear: not a linear transfer"
		}
		return p, reserved("ctl", ctl&^g1LinKnown)
	}
	p.ContextID = uint16(g2LinCtx.get(ctl))
	p.Endian = uint8(g2LinEndian.get(ctl))
	p.BF16 = g2LinBF16.on(ctl)
	p.FP16 = g2LinFP16.on(ctl)
	return p, reserved("ctl", ctl&^g2LinKnown)
}

// String returns a one-line description such as
// LIN_DMA{Src:0x1000 Dst:0x2000 Size:4096 WriteCompletion MB}.
func (p LinDMA) String() string {
	s := newStr(OpLinDMA)
	s.hex("Src", p.Src)
	s.hex("Dst", p.Dst)
	s.dec("Size", uint64(p.Size))
	s.flag(p.Memset, "Memset")
	s.flag(p.WriteCompletion, "WriteCompletion")
	s.decNZ("ContextID", uint64(p.ContextID))
	s.flag(p.Transpose, "Transpose")
	s.flag(p.DType, "DType")
	s.flag(p.Compress, "Compress")
	s.flag(p.Decompress, "Decompress")
	s.decNZ("Endian", uint64(p.Endian))
	s.flag(p.BF16, "BF16")
	s.flag(p.FP16, "FP16")
	p.barriers(s)
	return s.String()
}
