package sim

import (
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Gaudi3's INFO ENGINE_STATUS text and INFO HW_IDLE busy-engine mask follow
// gaudi3_is_device_idle of Intel's out-of-tree driver,
// HabanaAI/drivers.accel.habanalabs.kernel:drivers/accel/habanalabs/gaudi3/gaudi3.c
// @f9523baa926245a2995015ec6e98c4674bc2776f, and the helpers it calls in
// this order (facts read, nothing copied):
//
//  1. gaudi3_get_pdma_idle_status / gaudi3_is_pdma_group_idle: a row per
//     PDMA group (die, group in the die), always printed. The group is idle
//     when PQM_CMN_B GLBL_STS has STS_CP_IDLE and STS_CQ_IDLE set and
//     ENGINE_BUSY clear, PQM_CMN_B CGM_STS has AGENT_IDLE, AXI_IDLE and
//     CP_IDLE set, the IDLE field of PDMA_CMN_B DMA_STATUS (one bit per
//     channel, set while the channel is busy) is 0, and the outgoing AXI
//     write counts of the group's LBW and HBW master interfaces add up to
//  0. The last column is that sum as a C bool, so 0 or 1. A busy group
//     marks channel c of it (engine GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0 +
//     die*12 + group*6 + c) when the PQM is not idle, its DMA_STATUS bit
//     is set or the AXI count is not 0.
//  2. gaudi3_get_pdma_dup_idle_status: a row per PDMA group, the LBW
//     duplication engine's DUP_STATUS (idle while BUSY is clear; engine
//     GAUDI3_DIE0_ENGINE_ID_PDMA_0_DUP + die*2 + group). Always printed.
//  3. gaudi3_get_emda_idle_status: the EDMAs (HDCOREs 1, 3, 4 and 6, two
//     each; engine GAUDI3_HDCORE1_ENGINE_ID_EDMA_0 + hdcore/2*2 + inst),
//     with the queue manager's GLBL_STS0, GLBL_STS1 and CGM_STS
//     (gaudi3_is_qman_idle: CQF_IDLE and CP_IDLE; ARC_CQF_IDLE; AGENT,
//     AXI, CP and AXI_WR idle), EDMA_CMN DMA_STATUS (channels 0-2 clear)
//     and DBG_STS (TE not busy, TE, read and write buffers empty with no
//     inflight, both fullness counts 0).
//  4. gaudi3_get_tpc_idle_status: the TPCs (8 per HDCORE; engine
//     GAUDI3_HDCORE0_ENGINE_ID_TPC_0 + hdcore*8 + inst): the queue manager,
//     STATUS (SCALAR_PIPE_EMPTY, IQ_EMPTY, SB_EMPTY, QM_IDLE, QM_RDY),
//     TSB_INFLIGHT_CNTR 0 and WQ_INFLIGHT_CNTR's HBW and LBW counts 0.
//  5. gaudi3_get_mme_idle_status: an MME per HDCORE (engine
//     GAUDI3_HDCORE0_ENGINE_ID_MME_0 + hdcore): the queue manager and
//     MME_CTRL_LO ARCH_STATUS_MASTER and ARCH_STATUS_SLAVE (the driver
//     checks the slave's fields in the master's value and prints both).
//  6. gaudi3_get_rotator_idle_status: the rotators (HDCOREs 1, 3, 4, 6;
//     engine GAUDI3_HDCORE1_ENGINE_ID_ROT_0 + hdcore/2*2 + inst): the
//     queue manager, RSB_INFO and WBC_INFO (EMPTY and AXI_IDLE set).
//  7. gaudi3_get_decoder_idle_status: the decoders (two per HDCORE;
//     engine GAUDI3_HDCORE0_ENGINE_ID_DEC_0 + hdcore*2 + inst):
//     VSI_CMD_SWREG15, idle when its SW_WORK_STATE is 0 (idle) or 3
//     (pending).
//  8. gaudi3_get_arc_farm_dup_idle_status: the scheduler ARCs' duplication
//     engines of sched_arc_mask (two per HDCORE; engine
//     GAUDI3_HDCORE0_ENGINE_ID_ARCF_0 + hdcore*2 + inst), DUP_STATUS.
//
// Tables 3 to 8 have their header only when their enabled mask is not 0;
// there is no NIC table and no closing newline. The instances come in
// HDCORE order, then instance order, each only when its bit of the
// enabled mask (the id in the engine-id formula above, counted from the
// kind's first engine) is set: the order and the mask bits are those of
// the gaudi3_init_* functions of the same file, which walk the same
// gaudi3_iterate_* iterators (whose bodies were not read).
//
// Field positions: include/gaudi3/asic_reg/qman_masks.h, qman_cgm_masks.h,
// pdma_cmn_b_masks.h, tpc_masks.h @c877f1fbc672a6f0fc5070fa7e6c60f9c1116d67
// and drivers/accel/habanalabs/include/gaudi3/asic_reg/edma_cmn_masks.h
// @91cce9ed55f7d0ab455a1cc278822477cfa62e79, mme_ctrl_lo_masks.h and
// rotator_masks.h @c8bb11f30eed5ed0ac9d86e6e6f52df831052dd5, in the same
// repository; PQM_CMN_B's GLBL_STS and CGM_STS from Habana's generated
// Gaudi3 register structures (header ASIC_REG_STRUCTS_GAUDI3_PQM_CMN_B_H_,
// reg_glbl_sts and reg_cgm_sts; CGM_STS resets to 0x700).
//
// The simulator's engines read as idle with exactly the bits these checks
// require and nothing else, except the PDMA channels: a channel whose
// ring holds packets it has not consumed (MSQ_PI != MSQ_CI: it is
// executing them, or waiting on a FENCE) shows as busy through its bit of
// its group's DMA_STATUS IDLE field, so that the busy mask names exactly
// the busy channels. The simulator keeps its PQMs and AXI counts idle.
const (
	g3IdlePQMGlblSts     = 0x3        // PQM_CMN_B GLBL_STS: STS_CP_IDLE, STS_CQ_IDLE
	g3IdlePQMCGMSts      = 0x700      // PQM_CMN_B CGM_STS: AGENT_IDLE, AXI_IDLE, CP_IDLE
	g3DMAStatusIdleShift = 16         // PDMA_CMN_B DMA_STATUS IDLE, bits 16-21
	g3DMAStatusIdleMask  = 0x3F0000   // the same field
	g3IdleQMGlblSts0     = 0x3        // QMAN GLBL_STS0: CQF_IDLE, CP_IDLE
	g3IdleQMGlblSts1     = 0x1        // QMAN GLBL_STS1: ARC_CQF_IDLE
	g3IdleQMCGMSts       = 0xF00      // QMAN_CGM STS: AGENT, AXI, CP, AXI_WR idle
	g3IdleEDMADbgSts     = 0x3E       // EDMA_CMN DBG_STS: TE_EMPTY, RD/WR_BUF_EMPTY, RD/WR_BUF_NO_INFLIGHT
	g3IdleTPCStatus      = 0xEA       // TPC STATUS: SCALAR_PIPE_EMPTY, IQ_EMPTY, SB_EMPTY, QM_IDLE, QM_RDY
	g3IdleMMEArchStatus  = 0xC00FFF00 // MME_CTRL_LO ARCH_STATUS_MASTER/SLAVE: SB_IN_EMPTY, *_SM_IDLE, WBC/SB_IN AXI idle, QM_IDLE, QM_RDY
	g3IdleRotInfo        = 0x3        // ROTATOR RSB_INFO, WBC_INFO: EMPTY, AXI_IDLE

	g3EDMAPerHDCore   = 2
	g3TPCPerHDCore    = 8
	g3RotPerHDCore    = 2
	g3DecPerHDCore    = 2
	g3SchedPerHDCore  = 2
	g3NumHDCores      = g3.MAX_NUM_OF_DIES * g3.NUM_OF_HDCORES_PER_DIE
	g3PDMAGroupChMask = 1<<g3.NUM_OF_PDMA_CH_PER_GRP - 1
)

// The table headers of gaudi3_is_device_idle, each a string of its own.
const (
	g3HdrPDMA = "\nDIE  PDMA  is_idle  PQM_GLBL_STS  PQM_CGM_STS  DMA_STATUS  DMA_AXI_CNT\n" +
		"---  ----  -------  ------------  -----------  ----------  -----------\n"
	g3HdrPDMADup = "\nDIE  PDMA_DUP  is_idle  DUP_STATUS\n" +
		"---  --------  -------  ----------\n"
	g3HdrEDMA = "\nHD  EDMA  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  DMA_STATUS  DBG_STS\n" +
		"--  ----  -------  ------------  ------------  ----------  ----------  -------\n"
	g3HdrTPC = "\nHD  TPC  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  STATUS      TSB_INFLIGHT_CNTR  WQ_INFLIGHT_CNTR\n" +
		"--  ---  -------  ------------  ------------  ----------  ------      -----------------  ----------------\n"
	g3HdrMME = "\nHD  MME  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  ARCH_STATUS_MASTER  ARCH_STATUS_SLAVE\n" +
		"--  ---  -------  ------------  ------------  ----------  ------------------  -----------------\n"
	g3HdrRot = "\nHD  ROT  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  RSB_INFO    WBC_INFO\n" +
		"--  ---  -------  ------------  ------------  ----------  --------    --------\n"
	g3HdrDec = "\nHD  DEC  is_idle  VSI_CMD_SWREG15\n" +
		"--  ---  -------  ---------------\n"
	g3HdrArcFarmDup = "\nHD  ARC_FARM_DUP  is_idle  DUP_STATUS\n" +
		"--  ------------  -------  ----------\n"
)

// g3PDMAGroup is what a PDMA group's idle check reads.
type g3PDMAGroup struct {
	glblSts, cgmSts, dmaStatus uint32
	axiCnt                     bool // the LBW and HBW outgoing write counts, summed into a C bool
}

// idle is the group's verdict (gaudi3_is_pdma_group_idle).
func (g g3PDMAGroup) idle() (group, pqm bool) {
	pqm = g.glblSts&0x7 == g3IdlePQMGlblSts && g.cgmSts&g3IdlePQMCGMSts == g3IdlePQMCGMSts
	return pqm && g.dmaStatus&g3DMAStatusIdleMask == 0 && !g.axiCnt, pqm
}

// busyChannels returns the group's channels (bit c for channel c of the
// group) that a busy group marks in the busy-engine mask.
func (g g3PDMAGroup) busyChannels() uint32 {
	group, pqm := g.idle()
	if group {
		return 0
	}
	if !pqm || g.axiCnt {
		return g3PDMAGroupChMask
	}
	return g.dmaStatus & g3DMAStatusIdleMask >> g3DMAStatusIdleShift
}

// gaudi3PDMAGroups returns the registers of the four PDMA groups, in
// gaudi3_pdma_grp_blocks_bases order (die 0 group 0, die 0 group 1, die 1
// group 0, die 1 group 1): channel ch is in group ch/6.
func (d *Device) gaudi3PDMAGroups() [g3.NUM_OF_PDMA_GRP]g3PDMAGroup {
	var busy uint32
	if st := d.hardware().pqm(); st != nil {
		busy = st.busyChannels()
	}
	var gs [g3.NUM_OF_PDMA_GRP]g3PDMAGroup
	for i := range gs {
		ch := busy >> (i * g3.NUM_OF_PDMA_CH_PER_GRP) & g3PDMAGroupChMask
		gs[i] = g3PDMAGroup{glblSts: g3IdlePQMGlblSts, cgmSts: g3IdlePQMCGMSts,
			dmaStatus: ch << g3DMAStatusIdleShift}
	}
	return gs
}

// gaudi3HWIdle fills HW_IDLE: the busy PDMA channels' engine-id bits of
// busy_engines_mask_ext (bit id%64 of word id/64), busy_engines_mask the
// low 32 bits of word 0 (hw_idle in common/habanalabs_ioctl.c), and
// is_idle. The simulator's other engines are always idle.
func (d *Device) gaudi3HWIdle(r *hl.InfoHWIdle) {
	idle := true
	for i, g := range d.gaudi3PDMAGroups() {
		if ok, _ := g.idle(); ok {
			continue
		}
		idle = false
		chs := g.busyChannels()
		for c := range g3.NUM_OF_PDMA_CH_PER_GRP {
			if chs&(1<<c) != 0 {
				id := g3.PDMAChannelEngine(i*g3.NUM_OF_PDMA_CH_PER_GRP + c)
				r.BusyEnginesMaskExt[id/64] |= 1 << (id % 64)
			}
		}
	}
	r.BusyEnginesMask = uint32(r.BusyEnginesMaskExt[0])
	if idle {
		r.IsIdle = 1
	}
}

// yn is the is_idle column.
func yn(idle bool) string {
	if idle {
		return "Y"
	}
	return "N"
}

// gaudi3EngineStatus writes gaudi3_is_device_idle's tables.
func (d *Device) gaudi3EngineStatus(e *engineData) {
	p := &d.prof
	q0, q1, cgm := cx(g3IdleQMGlblSts0), cx(g3IdleQMGlblSts1), cx(g3IdleQMCGMSts)

	e.add(g3HdrPDMA)
	groups := d.gaudi3PDMAGroups()
	for i, g := range groups {
		idle, _ := g.idle()
		axi := 0
		if g.axiCnt {
			axi = 1
		}
		die, grp := i/g3.NUM_OF_PDMA_GRP_PER_DIE, i%g3.NUM_OF_PDMA_GRP_PER_DIE
		e.add(row(die, 5, grp, 6, yn(idle), 9, cx(g.glblSts), 14, cx(g.cgmSts), 13, cx(g.dmaStatus), 12, axi, 0))
	}
	e.add(g3HdrPDMADup)
	for i := range groups {
		e.add(row(i/g3.NUM_OF_PDMA_GRP_PER_DIE, 5, i%g3.NUM_OF_PDMA_GRP_PER_DIE, 10, "Y", 9, cx(0), 0))
	}

	// EDMAs and rotators sit in the odd HDCOREs of die 0 and the even
	// ones of die 1 (1, 3, 4, 6); their id is hdcore/2*2 + inst.
	halfCores := []int{1, 3, 4, 6}
	if p.edmaMask != 0 {
		e.add(g3HdrEDMA)
	}
	for _, hd := range halfCores {
		for inst := range g3EDMAPerHDCore {
			if p.edmaMask&(1<<(hd/2*g3EDMAPerHDCore+inst)) != 0 {
				e.add(row(hd, 4, inst, 6, "Y", 9, q0, 14, q1, 14, cgm, 12, cx(0), 12, cx(g3IdleEDMADbgSts), 0))
			}
		}
	}

	if p.tpcMask != 0 {
		e.add(g3HdrTPC)
	}
	for hd := range g3NumHDCores {
		for inst := range g3TPCPerHDCore {
			if p.tpcMask&(1<<(hd*g3TPCPerHDCore+inst)) != 0 {
				e.add(row(hd, 4, inst, 5, "Y", 9, q0, 14, q1, 14, cgm, 12, cx(g3IdleTPCStatus), 12, cx(0), 19, cx(0), 0))
			}
		}
	}

	mme := g3.DefaultHWIPInfo.MMEEnabledMask
	if mme != 0 {
		e.add(g3HdrMME)
	}
	for hd := range g3NumHDCores {
		if mme&(1<<hd) != 0 {
			e.add(row(hd, 4, 0, 5, "Y", 9, q0, 14, q1, 14, cgm, 12, cx(g3IdleMMEArchStatus), 20, cx(g3IdleMMEArchStatus), 0))
		}
	}

	if p.rotatorMask != 0 {
		e.add(g3HdrRot)
	}
	for _, hd := range halfCores {
		for inst := range g3RotPerHDCore {
			if p.rotatorMask&(1<<(hd/2*g3RotPerHDCore+inst)) != 0 {
				e.add(row(hd, 4, inst, 5, "Y", 9, q0, 14, q1, 14, cgm, 12, cx(g3IdleRotInfo), 12, cx(g3IdleRotInfo), 0))
			}
		}
	}

	if p.decoderMask != 0 {
		e.add(g3HdrDec)
	}
	for hd := range g3NumHDCores {
		for inst := range g3DecPerHDCore {
			if p.decoderMask&(1<<(hd*g3DecPerHDCore+inst)) != 0 {
				e.add(row(hd, 4, inst, 5, "Y", 9, cx(0), 0))
			}
		}
	}

	sched := g3.DefaultHWIPInfo.SchedArcEnabledMask
	if sched != 0 {
		e.add(g3HdrArcFarmDup)
	}
	for hd := range g3NumHDCores {
		for inst := range g3SchedPerHDCore {
			if sched&(1<<(hd*g3SchedPerHDCore+inst)) != 0 {
				e.add(row(hd, 4, inst, 14, "Y", 9, cx(0), 0))
			}
		}
	}
}
