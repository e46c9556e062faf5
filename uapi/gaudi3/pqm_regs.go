package gaudi3

// The register map a user needs to drive a PDMA channel's queue manager
// (PQM) directly: where each channel's CH_A register block sits, which of
// its registers the user programs, and the field values. Gaudi3 user DMA
// bypasses command submission: the user maps a channel's CH_A block with
// MEMORY HL_MEM_OP_MAP_BLOCK and mmap, points the channel's message queue
// (MSQ) at host memory mapped to the device, writes PQM packets into that
// ring and advances MSQ_PI; the channel advances MSQ_CI as it consumes
// them.
//
// Sources (facts read, nothing copied):
//   - github.com/HenryTangIntel/hlthunk-enhanced (MIT) at
//     cb46f4f1640c492ba086aaca89143b9a859a7f8b:
//     include/specs/gaudi3/asic_reg/pdma_ch_a_pqm_ch_regs.h (the register
//     offsets of prototype PQM_CH_A), pdma_ch_a_pqm_ch_masks.h (the field
//     masks), gaudi3_blocks.h (the absolute block addresses: the D0 SPDMA0,
//     D0 SPDMA1 and D1 SPDMA1 channel blocks and D1 SPDMA0's CH_B and CMN_B
//     blocks were read; D1 SPDMA0's CH0_A follows from the die offset),
//     sob_objs_regs.h and sob_objs_masks.h (sync object layout);
//     tests/gaudi3/hlthunk_tests_gaudi3.c (gaudi3_pdma_grp_blocks_bases,
//     gaudi3_pdma_map_lbw_blocks, gaudi3_pdma_reset_pqm_ch,
//     gaudi3_pqm_add_pkts_to_submission_q, gaudi3_pdma_pqm_send,
//     gaudi3_pdma_update_pqm_ch_ci).
//   - github.com/HabanaAI/drivers.accel.habanalabs.kernel:
//     drivers/accel/habanalabs/gaudi3/gaudi3.c at 58be96464de01b613d29262449eb6af038b7fff6
//     (gaudi3_pdma_grp_blocks_bases, gaudi3_init_pdma: channel ch = group*6
//     + channel-in-group); drivers/accel/habanalabs/gaudi3/gaudi3P.h at
//     f9523baa926245a2995015ec6e98c4674bc2776f (PDMA_CH_OFFSET,
//     PDMA_GRP_OFFSET, "PDMA CH_A blocks" among the user-mappable blocks).
//   - Habana's SCAL (c_pdma_ch_block_size = 4 KiB, the size its tests map
//     per channel), which agrees with PDMA_CH_OFFSET.

// Absolute device addresses of channel 0's CH_A (PQM_CH) block in each of
// the four PDMA groups (SPDMA0 and SPDMA1 of each die), in the order of
// gaudi3_pdma_grp_blocks_bases: group g holds channels g*6 .. g*6+5. These
// are the addresses MAP_BLOCK takes (gaudi3_blocks.h's mm*_BASE values,
// which include the configuration space base).
// All four were read in hlthunk-enhanced's
// include/specs/gaudi3/asic_reg/gaudi3_blocks.h at
// cb46f4f1640c492ba086aaca89143b9a859a7f8b (mmD0_SPDMA0_CH0_A_PQM_CH_BASE,
// mmD0_SPDMA1_..., mmD1_SPDMA0_..., mmD1_SPDMA1_...), with channel 1 of
// D0 SPDMA0 at +0x1000 (mmD0_SPDMA0_CH1_A_PQM_CH_BASE).
const (
	D0_SPDMA0_CH0_A_PQM_CH_BASE = 0x0300007FFC540000
	D0_SPDMA1_CH0_A_PQM_CH_BASE = 0x0300007FFC560000
	D1_SPDMA0_CH0_A_PQM_CH_BASE = 0x0300007FFCD40000
	D1_SPDMA1_CH0_A_PQM_CH_BASE = 0x0300007FFCD60000
)

// Distances in the PDMA register space (gaudi3P.h's definitions, their
// values from gaudi3_blocks.h).
const (
	// PDMA_CH_OFFSET is the distance between the CH_A blocks of two
	// neighbouring channels of a group.
	PDMA_CH_OFFSET = 0x1000
	// PDMA_GRP_OFFSET is the distance between the two groups of a die.
	PDMA_GRP_OFFSET = 0x20000
	// PDMA_DIE_OFFSET is the distance between a die-0 block and its die-1
	// twin (not a driver name: the difference of the gaudi3_blocks.h
	// addresses, 0x800000 for every PDMA block read).
	PDMA_DIE_OFFSET = 0x800000
	// PDMA_CH_B_OFFSET and PDMA_CMN_B_OFFSET place a group's CH_B blocks
	// (CH_B of channel j at group base + PDMA_CH_B_OFFSET + j*PDMA_CH_OFFSET)
	// and its common block, relative to the group's CH0_A base. Neither is
	// user-mappable; a channel's own packets may write them.
	PDMA_CH_B_OFFSET  = 0x6000
	PDMA_CMN_B_OFFSET = 0xC000
	// PDMA_CH_A_CTX_OFFSET is where the channel's DMA context registers
	// start inside its CH_A block.
	PDMA_CH_A_CTX_OFFSET = 0x300

	// PDMA_CH_A_BLOCK_SIZE is the size of one channel's CH_A block, the
	// block_size MAP_BLOCK answers for it and the length to mmap.
	PDMA_CH_A_BLOCK_SIZE = 0x1000
)

// PDMAGroupBases are the CH0_A bases of the four PDMA groups, indexed by
// group (gaudi3_pdma_grp_blocks_bases).
var PDMAGroupBases = [NUM_OF_PDMA_GRP]uint64{
	D0_SPDMA0_CH0_A_PQM_CH_BASE,
	D0_SPDMA1_CH0_A_PQM_CH_BASE,
	D1_SPDMA0_CH0_A_PQM_CH_BASE,
	D1_SPDMA1_CH0_A_PQM_CH_BASE,
}

// PDMAChannelBlock returns the absolute address of PDMA channel ch's CH_A
// block (ch 0 to NUM_OF_PDMA_CH-1, the bit of pdma_user_owned_ch_mask), the
// address to pass to MAP_BLOCK. It panics if ch is out of range.
func PDMAChannelBlock(ch int) uint64 {
	return PDMAGroupBases[ch/NUM_OF_PDMA_CH_PER_GRP] + uint64(ch%NUM_OF_PDMA_CH_PER_GRP)*PDMA_CH_OFFSET
}

// PDMAChannelOfBlock returns the channel whose CH_A block contains addr.
func PDMAChannelOfBlock(addr uint64) (ch int, ok bool) {
	for g, base := range PDMAGroupBases {
		if addr >= base && addr < base+NUM_OF_PDMA_CH_PER_GRP*PDMA_CH_OFFSET {
			return g*NUM_OF_PDMA_CH_PER_GRP + int((addr-base)/PDMA_CH_OFFSET), true
		}
	}
	return 0, false
}

// PDMAChannelDie returns the die of PDMA channel ch: channels 0-11 are on
// die 0, 12-23 on die 1.
func PDMAChannelDie(ch int) int { return ch / NUM_OF_PDMA_CH_PER_DIE }

// Register offsets inside a CH_A (PQM_CH) block
// (pdma_ch_a_pqm_ch_regs.h). Every register is 32 bits wide; the user
// reads and writes them with single aligned 32-bit accesses.
const (
	PDMA_CH_A_PQM_CH_ADDR_HI_0 = 0x000 // ADDR_HI_0..31, 4 bytes apart
	PDMA_CH_A_PQM_CH_ADDR_LO_0 = 0x080 // ADDR_LO_0..31
	PDMA_CH_A_PQM_CH_CTRL_0    = 0x100 // CTRL_0..31

	PDMA_CH_A_PQM_CH_PI = 0x180
	PDMA_CH_A_PQM_CH_CI = 0x184

	PDMA_CH_A_PQM_CH_CP_PRED                  = 0x1B0
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG     = 0x1B4
	PDMA_CH_A_PQM_CH_DESC_PTR_RLS_CFG         = 0x1B8
	PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_ADDR_L  = 0x1BC
	PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_ADDR_H  = 0x1C0
	PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_FREQ    = 0x1C4
	PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_PAYLOAD = 0x1C8
	PDMA_CH_A_PQM_CH_FENCE_INC_0              = 0x1CC // FENCE_INC_0..3
	PDMA_CH_A_PQM_CH_FENCE_CNT_0              = 0x1DC // FENCE_CNT_0..3
	PDMA_CH_A_PQM_CH_MSQ_BASE_H               = 0x1EC // note: H below L
	PDMA_CH_A_PQM_CH_MSQ_BASE_L               = 0x1F0
	PDMA_CH_A_PQM_CH_MSQ_SIZE                 = 0x1F4
	PDMA_CH_A_PQM_CH_MSQ_PI                   = 0x1F8
	PDMA_CH_A_PQM_CH_MSQ_CI                   = 0x1FC
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG2    = 0x200
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG1    = 0x204
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG0    = 0x208
	PDMA_CH_A_PQM_CH_CQ_RECONFIG              = 0x20C

	// PDMA_CH_A_PQM_CH_REGS_END is one past the last PQM_CH register; the
	// DMA context registers start at PDMA_CH_A_CTX_OFFSET.
	PDMA_CH_A_PQM_CH_REGS_END = PDMA_CH_A_PQM_CH_CQ_RECONFIG + 4
	// PDMA_CH_A_PQM_CH_ARRAY_LEN is the length of the ADDR_HI, ADDR_LO and
	// CTRL arrays; PDMA_CH_A_PQM_CH_FENCES of FENCE_INC and FENCE_CNT.
	PDMA_CH_A_PQM_CH_ARRAY_LEN = 32
	PDMA_CH_A_PQM_CH_FENCES    = 4
)

// Fields of the CH_A registers (pdma_ch_a_pqm_ch_masks.h) and the values
// the user flow writes (gaudi3_pdma_reset_pqm_ch and its comments).
const (
	// DESC_SUBMIT_FIFO_CFG: MODE is bits 1:0, WRITE_MODE bit 2.
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_MODE_MASK       = 0x3
	PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_WRITE_MODE_MASK = 0x4
	// PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM is MODE 1, "PI/CI in memory": the
	// channel fetches packets from the MSQ ring in memory, between
	// MSQ_CI and MSQ_PI. The tests name it; the other MODE values are
	// not documented in the sources. Writing DESC_SUBMIT_FIFO_CFG resets
	// the channel's MSQ PI, CI, base and size registers (the test's
	// comment), so it is written first, then MSQ_SIZE, MSQ_BASE_L,
	// MSQ_BASE_H.
	PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM = 1

	// MSQ_SIZE holds the ring size in bytes minus one (bits 29:0): the
	// ring is a power of two bytes, at most 1 GiB.
	PDMA_CH_A_PQM_CH_MSQ_SIZE_VAL_MASK = 0x3FFFFFFF
	// PQM_MSQ_MAX_SIZE is the largest ring, 1 GiB (the tests assert it).
	PQM_MSQ_MAX_SIZE = 1 << 30
	// PQM_MSQ_ALIGN is the alignment of the ring's device address and of
	// MSQ_PI: the user advances MSQ_PI by the bytes written, in multiples
	// of 8.
	PQM_MSQ_ALIGN = 8

	// MSQ_PI and MSQ_CI are free-running 32-bit byte counters (the
	// position in the ring is the counter modulo the ring size): the user
	// writes its byte count to MSQ_PI (MSQ_PI_VAL_SHIFT 0) and the channel
	// advances MSQ_CI to the bytes it has consumed. Habana's tests note a
	// hardware bug (SW-172941): the channel does not handle the counters'
	// 32-bit wrap, so software resets the channel before they overflow.

	// FENCE_INC_n: VAL bits 3:0; FENCE_CNT_n: VAL bits 13:0.
	PDMA_CH_A_PQM_CH_FENCE_INC_VAL_MASK = 0xF
	PDMA_CH_A_PQM_CH_FENCE_CNT_VAL_MASK = 0x3FFF
	// CQ_RECONFIG: EN bit 0.
	PDMA_CH_A_PQM_CH_CQ_RECONFIG_EN_MASK = 0x1
)

// The channel's HBW completion queue (the ECMPLTN_Q registers of the
// CH_A block, after the DMA context), which Habana's runtime completes its
// direct-mode PDMA streams through. A LIN_PDMA with advcnt_hbw_complq
// (packet.LinPDMA.AdvanceCompletionQueue) advances it when the transfer is
// done: the channel counts it in ECMPLTN_Q_BASE_PI ("incremented by HW
// after we write to the CQ"), writes the queue in host memory at
// ECMPLTN_Q_BASE_HI:LO (a device virtual address, through the device MMU
// like the ring), and, with LBW_WR_EN, then sends a 32-bit LBW message of
// ECMPLTN_Q_LBW_PAYLD to ECMPLTN_Q_LBW_ADDR_H:L.
//
// How SCAL programs it (scal/src/platform/gaudi3/direct_mode_pdma_stream.cpp,
// DirectModePDMAStream::initChannelCQ, once per channel; callers in
// scal_init_gaudi3.cpp initDirectModeSinglePdmaChannel and
// scal_cfg_gaudi3.cpp createSingleDirectModePdmaChannel): FENCE_CNT of its
// fence counter to 0; BASE_LO and BASE_HI to the device address of a
// 64-bit counter (one u64 per completion queue in a counters buffer);
// BASE_SIZE to 8 (c_cq_size = 1 << c_cq_size_log2, c_cq_size_log2 = 3: a
// queue of one 64-bit counter); when the stream has an interrupt,
// LBW_ADDR_L and LBW_ADDR_H to mmD0_PCIE_MSIX_BASE and LBW_PAYLD to the
// interrupt id (first_available_interrupt_id + a running index, one per
// stream); last CH_CFG with ENABLE, COMPLTN_MODE (its comment: "Scheduler
// mode (AKA - user, not driver)") and LBW_WR_EN when there is an
// interrupt. It writes neither BASE_FREQ nor BASE_PI. Its waits
// (scal/src/common/scal_rt.cpp Scal::completionGroupWait) compare the
// counter with a count of completions, with WAIT_CS in interrupt mode on
// that interrupt id.
//
// Offsets: the register structs of
// specs_h9/gaudi3/asic_reg_structs/pdma_ch_a_regs.h (block_pdma_ch_a: the
// PQM_CH registers, padding to the context at 0x300, the context, padding
// named _pad936 of 22 words, then the nine ECMPLTN_Q registers from 0x400,
// then padding named _pad1060), all at
// github.com/HabanaAI/Intel_Gaudi3_Software adff76ca6ca1b1cadec482250202bf5bdb8dcf1f.
const (
	PDMA_CH_A_ECMPLTN_Q_CH_CFG     = 0x400 // "cfg HBW completion feature"
	PDMA_CH_A_ECMPLTN_Q_BASE_LO    = 0x404 // the queue's device address, low word
	PDMA_CH_A_ECMPLTN_Q_BASE_HI    = 0x408 // and high word
	PDMA_CH_A_ECMPLTN_Q_BASE_SIZE  = 0x40C // "Size of completion queue in Bytes"
	PDMA_CH_A_ECMPLTN_Q_BASE_FREQ  = 0x410 // "completion per num of descriptors" (SCAL leaves it)
	PDMA_CH_A_ECMPLTN_Q_BASE_PI    = 0x414 // "incremented by HW after we write to the CQ"
	PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L = 0x418 // "engine cmpltn lbw msg addr lsb"
	PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H = 0x41C // "engine cmpltn lbw msg addr msb"
	PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD  = 0x420 // "engine cmpltn lbw msg payload"

	// PDMA_CH_A_ECMPLTN_Q_REGS_END is one past the last ECMPLTN_Q register.
	PDMA_CH_A_ECMPLTN_Q_REGS_END = PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD + 4
)

// Fields of ECMPLTN_Q_CH_CFG (reg_ecmpltn_q_ch_cfg: enable bit 0,
// compltn_mode bit 1, lbw_wr_en bit 2, the rest reserved) and the queue
// size SCAL programs.
const (
	PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE       = 1 << 0
	PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE = 1 << 1 // 1: the user's ("scheduler") mode
	PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN    = 1 << 2 // send the LBW message after each completion

	// PQM_ECMPLTN_Q_COUNTER_SIZE is the queue size SCAL programs into
	// ECMPLTN_Q_BASE_SIZE: one 64-bit counter.
	PQM_ECMPLTN_Q_COUNTER_SIZE = 8
)

// The PCIe MSI-X doorbell: a 32-bit write of a user interrupt's MSI-X
// vector number (first_available_interrupt_id and up) to it raises that
// interrupt, which WAIT_CS's interrupt mode (HL_WAIT_CS_FLAGS_INTERRUPT
// with the id in the flags) waits for. Habana's Gaudi3 tests point their
// completion queues' LBW write at mmD0_PCIE_MSIX_BASE with the interrupt
// id as data (hlthunk-enhanced tests/gaudi3/hlthunk_tests_gaudi3.c,
// gaudi3_add_cq_config_pkt), and Habana's runtime points each direct-mode
// PDMA channel's completion queue's LBW message at it
// (ECMPLTN_Q_LBW_ADDR_L/H above).
//
// Both are read from gaudi3_blocks.h (mmD0_PCIE_MSIX_BASE and
// mmD1_PCIE_MSIX_BASE, hlthunk-enhanced at cb46f4f1); they lie
// PDMA_DIE_OFFSET apart like the PDMA blocks.
const (
	D0_PCIE_MSIX_BASE = 0x0300007FFC417000
	D1_PCIE_MSIX_BASE = 0x0300007FFCC17000
)

// The sync managers' blocks of HDCORE 0 and the distance between two
// HDCOREs' (gaudi3_blocks.h at cb46f4f1: mmHD0_SYNC_MNGR_OBJS_BASE,
// mmHD0_SYNC_MNGR_GLBL_BASE, mmHD1_SYNC_MNGR_OBJS_BASE). Habana's Gaudi3
// tests use HDCORE 1's (HDCORE_OFFSET above HDCORE 0's) for completions
// before the completion queues are set up. HDCORE n's blocks are
// n*HDCORE_OFFSET above HDCORE 0's for all eight HDCOREs of the two dies
// (gaudi3_blocks.h places HD1 and HD6 blocks so).
const (
	HD0_SYNC_MNGR_OBJS_BASE = 0x0300007FFE380000
	HD0_SYNC_MNGR_GLBL_BASE = 0x0300007FFE3A0000
	HDCORE_OFFSET           = 0x400000
	SYNC_MNGR_OBJS_SIZE     = 0x20000 // the OBJS block's _MAX_OFFSET
)

// Sync objects (sob_objs_regs.h, sob_objs_masks.h): a sync manager's OBJS
// block starts with 8192 sync objects, SOB_OBJ_0_i at i*4. A 32-bit write
// with INC set adds VAL to the object, without it sets the object to VAL;
// the same bits are the sync-object update of a MSG_SHORT packet.
const (
	SOB_OBJS_SOB_OBJ_0_0 = 0x0
	// SOBS_PER_SM is the number of sync objects in one bank of a sync
	// manager (HDCORE_NUM_OF_SOB_PER_GRP).
	SOBS_PER_SM = 8192

	SOB_OBJ_VAL_MASK          = 0x7FFF    // bits 14:0
	SOB_OBJ_LONG_SOB_MASK     = 1 << 24   // LONG_SOB
	SOB_OBJ_ZERO_SOB_CNT_MASK = 1 << 28   // ZERO_SOB_CNT
	SOB_OBJ_TRACE_EVICT_MASK  = 1 << 30   // TRACE_EVICT
	SOB_OBJ_INC_MASK          = 1 << 31   // INC: add VAL instead of setting it
	SOB_OBJ_INC_BY_ONE        = 1<<31 | 1 // the tests' "increment by 1"
	SOB_OBJ_BYTES             = 4         // one sync object register
)

// SOBOffset returns the offset of sync object i (0 to SOBS_PER_SM-1)
// inside a sync manager's OBJS block.
func SOBOffset(i int) uint64 { return SOB_OBJS_SOB_OBJ_0_0 + uint64(i)*SOB_OBJ_BYTES }

// The two groups of a sync manager: "two separated identical groups of
// SOBs/MONs under the same SM block" (gaudi3P.h at f9523baa:
// HDCORE_NUM_OF_SOB_PER_GRP 8192, HDCORE_NUM_OF_MON_PER_GRP 1024,
// HDCORE_NUM_OF_CQ 64). Group 0 starts at the OBJS block, group 1
// SYNC_MNGR_OBJS_GRP_OFFSET above it (sob_objs_regs.h at cb46f4f1: group
// 0's registers end with SM_PRIV_0 below 0x10000, group 1's SM_PRIV_1_511
// is the block's last register at 0x1FFFC). Offsets inside a group:
// SOB_OBJ_g_0 at 0, MON_PAY_ADDRL_g_0 at 0x8000, then the monitors' other
// register arrays of 1024 registers each in the order of sob_objs_masks.h
// (PAY_ADDRH, PAY_DATA, ARM, CONFIG, STATUS, which ends at 0xDFFC),
// CQ_DIRECT_0..63 at 0xE000, SM_SEC_g_0 at 0xF000.
const (
	SYNC_MNGR_OBJS_GRP_OFFSET = 0x10000
	HDCORE_NUM_OF_SOB_PER_GRP = 8192
	HDCORE_NUM_OF_MON_PER_GRP = 1024
	HDCORE_NUM_OF_CQ          = 64
	NUM_OF_HDCORES            = MAX_NUM_OF_DIES * NUM_OF_HDCORES_PER_DIE

	SOB_OBJS_MON_PAY_ADDRL_0 = 0x8000
	SOB_OBJS_MON_PAY_ADDRH_0 = 0x9000
	SOB_OBJS_MON_PAY_DATA_0  = 0xA000
	SOB_OBJS_MON_ARM_0       = 0xB000
	SOB_OBJS_MON_CONFIG_0    = 0xC000
	SOB_OBJS_MON_STATUS_0    = 0xD000
	SOB_OBJS_CQ_DIRECT_0     = 0xE000
	SOB_OBJS_SM_SEC_0_0      = 0xF000

	// SM_OBJS_BLOCK_SIZE is the size of one user-mappable group of a sync
	// manager's OBJS block, SM_SEC_0_0 - SOB_OBJ_0_0 (gaudi3P.h), the
	// block_size MAP_BLOCK answers for it. SYNC_MNGR_GLBL_BLOCK_SIZE is the
	// GLBL block's (HD0_SYNC_MNGR_GLBL_MAX_OFFSET, one page).
	SM_OBJS_BLOCK_SIZE        = SOB_OBJS_SM_SEC_0_0
	SYNC_MNGR_GLBL_BLOCK_SIZE = 0x1000
)

// MON_CONFIG fields on Gaudi3 (sob_objs_masks.h): LONG_SOB bit 0, CQ_EN
// bit 4, LBW_EN bit 8, SM_DATA_CONFIG bit 15, MSB_SID 19:16, AUTO_ZERO bit
// 20, WR_NUM 27:24 (Gaudi2's is 6:5), LONG_HIGH_GROUP bit 31. MON_ARM is
// Gaudi2's: SID 7:0, MASK 15:8, SOP bit 16 (1: equal), SOD 31:17.
const (
	SOB_OBJS_MON_CONFIG_WR_NUM_SHIFT = 24
	SOB_OBJS_MON_CONFIG_WR_NUM_MASK  = 0xF000000
)

// The completion queue registers of a sync manager's GLBL block
// (sob_glbl_regs.h at cb46f4f1), 64 of each, 4 bytes apart: the queue's
// base address, its size (log2 of bytes), its producer index, the LBW
// write (address and data) the sync manager sends after each queue write,
// and the increment mode (0: 32-bit entries, 1: a 64-bit counter the
// monitor's data is added to, as Habana's completion tests configure it).
const (
	SOB_GLBL_CQ_BASE_ADDR_L_0 = 0x050
	SOB_GLBL_CQ_BASE_ADDR_H_0 = 0x150
	SOB_GLBL_CQ_SIZE_LOG2_0   = 0x250
	SOB_GLBL_CQ_PI_0          = 0x350
	SOB_GLBL_LBW_ADDR_L_0     = 0x450
	SOB_GLBL_LBW_ADDR_H_0     = 0x550
	SOB_GLBL_LBW_DATA_0       = 0x650
	SOB_GLBL_CQ_INC_MODE_0    = 0x750
	SOB_GLBL_CQ_DIR_LBW_EN_0  = 0x850
)

// SyncMngrObjsBlock returns the address of group grp (0 or 1) of HDCORE
// hd's sync manager OBJS block, the address MAP_BLOCK takes for it.
func SyncMngrObjsBlock(hd, grp int) uint64 {
	return HD0_SYNC_MNGR_OBJS_BASE + uint64(hd)*HDCORE_OFFSET + uint64(grp)*SYNC_MNGR_OBJS_GRP_OFFSET
}

// SyncMngrGlblBlock returns the address of HDCORE hd's sync manager GLBL
// block.
func SyncMngrGlblBlock(hd int) uint64 {
	return HD0_SYNC_MNGR_GLBL_BASE + uint64(hd)*HDCORE_OFFSET
}

// SyncMngrUserBlock reports whether the driver lets users map the sync
// manager block at addr (an OBJS group or a GLBL block base): gaudi3P.h's
// list of user-mappable blocks has "SYNC_MNGR_OBJS0/SYNC_MNGR_OBJS1/GLBL
// blocks (for DIE0.HD0, only SYNC_MNGR_OBJS1)", NUM_OF_EXPOSED_SM_BLOCKS =
// (2*4 - 1)*3 + 1 = 22: group 0 and the GLBL block of HDCORE 0 hold the
// driver's reserved sync objects, monitors and completion queues
// (GAUDI3_RESERVED_SOB/MON/CQ_NUMBER, 19 of each).
func SyncMngrUserBlock(addr uint64) (size uint32, ok bool) {
	for hd := range NUM_OF_HDCORES {
		for grp := range 2 {
			if addr == SyncMngrObjsBlock(hd, grp) && (hd != 0 || grp == 1) {
				return SM_OBJS_BLOCK_SIZE, true
			}
		}
		if addr == SyncMngrGlblBlock(hd) && hd != 0 {
			return SYNC_MNGR_GLBL_BLOCK_SIZE, true
		}
	}
	return 0, false
}
