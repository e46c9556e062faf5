package pqm

// The channel's HBW completion queue (ECMPLTN_Q) registers in its CH_A
// block, which uapi/gaudi3's register map does not carry yet.
// block_pdma_ch_a of Habana's specs_h9/gaudi3/asic_reg_structs/
// pdma_ch_a_regs.h (Intel_Gaudi3_Software at e6cef1c3) places them after
// the PQM_CH registers (0x000-0x20C) and the DMA context (0x300-0x3A7), at
// 0x400; SCAL's DirectModePDMAStream::initChannelCQ programs them:
// counter address, size 8 (one 64-bit counter), the interrupt's LBW write
// (the MSI-X doorbell and the interrupt number), then the configuration.
const (
	regCQConfig  = 0x400 // ECMPLTN_Q_CH_CFG
	regCQBaseLo  = 0x404 // ECMPLTN_Q_BASE_LO
	regCQBaseHi  = 0x408 // ECMPLTN_Q_BASE_HI
	regCQSize    = 0x40C // ECMPLTN_Q_BASE_SIZE, bytes
	regCQPI      = 0x414 // ECMPLTN_Q_BASE_PI: advanced by the channel
	regCQLBWLo   = 0x418 // ECMPLTN_Q_LBW_ADDR_L
	regCQLBWHi   = 0x41C // ECMPLTN_Q_LBW_ADDR_H
	regCQLBWData = 0x420 // ECMPLTN_Q_LBW_PAYLD

	// ECMPLTN_Q_CH_CFG fields: enable (bit 0), compltn_mode (bit 1, 1 =
	// "scheduler mode (AKA user, not driver)"), lbw_wr_en (bit 2: send the
	// LBW write, the interrupt, after each advance).
	cqEnable   = 1 << 0
	cqUserMode = 1 << 1
	cqLBWWrite = 1 << 2

	// cqBytes is the completion queue's size: one 64-bit counter
	// (SCAL's c_cq_size, 1 << c_cq_size_log2 with c_cq_size_log2 3).
	cqBytes = 8
)

// MSIXDoorbell is mmD0_PCIE_MSIX_BASE, the absolute address of the PCIe
// MSI-X doorbell an LBW write of an interrupt number raises that
// interrupt through (SCAL's initChannelCQ isrRegister; hlthunk-enhanced's
// gaudi3 CQ setup). Inferred, not read: the die-1 doorbell
// mmD1_PCIE_MSIX_BASE is 0x0300007FFCC17000 in hlthunk-enhanced's
// include/specs/gaudi3/asic_reg/gaudi3_blocks.h, and every die-1 block is
// its die-0 twin plus 0x800000 (uapi/gaudi3.PDMA_DIE_OFFSET).
const MSIXDoorbell = 0x0300007FFCC17000 - 0x800000
