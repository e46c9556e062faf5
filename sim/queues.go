package sim

import "github.com/gaudi-go/gaudi/uapi/hl"

// The queues of each ASIC as the driver describes them (hw_queues_props in
// gaudi_set_fixed_properties and gaudi2_set_fixed_properties), with what
// the simulator needs to run them: the queue manager (QMAN) register block
// of each queue, the sync manager blocks its MSG_SHORT base registers point
// at (the driver programs CP_MSG_BASE0..3 when it initializes the QMANs),
// and how deep its queue is.

// queueType is the driver's enum hl_queue_type.
type queueType uint8

const (
	queueNA  queueType = iota // QUEUE_TYPE_NA
	queueExt                  // QUEUE_TYPE_EXT: driver-parsed kernel CBs, completion through the CQ
	queueInt                  // QUEUE_TYPE_INT: user CBs by device address, no completion
	queueCPU                  // QUEUE_TYPE_CPU: the driver's own
	queueHW                   // QUEUE_TYPE_HW: Gaudi2, user CBs, completion per CS
)

// CB allocation modes a queue accepts (CB_ALLOC_KERNEL, CB_ALLOC_USER).
const (
	cbAllocKernel = 1 << 0
	cbAllocUser   = 1 << 1
)

// hlQueueLength is HL_QUEUE_LENGTH: the entries of an external or H/W
// queue (and of a completion queue).
const hlQueueLength = 4096

// Register map facts of the two ASICs (include/gaudi/gaudi.h,
// include/gaudi2/gaudi2.h and their asic_reg headers).
const (
	gaudiCFGBase  = 0x7FFC000000
	gaudiCFGSize  = 0x4000000
	gaudi2CFGSize = 0x8000000

	// Gaudi's four sync managers: the CFG offset of SOB_OBJ_0 of each.
	gaudiSMEastNorth = 0x4F2000 // SYNC_MNGR_E_N
	gaudiSMEastSouth = 0x4B2000 // SYNC_MNGR_E_S
	gaudiSMWestNorth = 0x4D2000 // SYNC_MNGR_W_N
	gaudiSMWestSouth = 0x492000 // SYNC_MNGR_W_S
	gaudiSOBs        = 2048     // SOB_OBJ_0..2047
	gaudiMonitors    = 512
	// Gaudi2's per-dcore sync managers: DCORE0 at 0x4100000, the next
	// dcore 0x200000 further.
	gaudi2SMDcore0  = 0x4100000
	gaudi2SMStride  = 0x200000
	gaudi2SOBs      = 8192
	gaudi2Monitors  = 2048
	gaudiQMFence0   = 0x308 // CP_FENCE0_RDATA_0 in a Gaudi QMAN block
	gaudi2QMFence0  = 0x290 // CP_FENCE0_RDATA_0 in a Gaudi2 QMAN block
	qmFenceStride   = 0x14  // FENCEn_RDATA_0 to FENCEn+1_RDATA_0 (five CPs)
	gaudiQMCount    = 8 + 2 + 8
	gaudi2QMPerCore = 2 + 1 + 6
)

// smLayout is where a sync manager keeps its registers, as offsets from
// its SOB_OBJ_0.
type smLayout struct {
	sobs, mons                        uint32
	payL, payH, payData, arm, cfg, st uint64 // cfg is 0 when absent (Gaudi)
}

var (
	gaudiSMLayout  = smLayout{gaudiSOBs, gaudiMonitors, 0x2000, 0x2800, 0x3000, 0x3800, 0, 0x4000}
	gaudi2SMLayout = smLayout{gaudi2SOBs, gaudi2Monitors, 0x8000, 0xA000, 0xC000, 0xE000, 0x10000, 0x12000}
)

// queueProps is one entry of hw_queues_props plus the simulator's view of
// the QMAN behind it.
type queueProps struct {
	typ        queueType
	cbAlloc    uint8
	driverOnly bool
	binned     bool
	enabled    bool   // the engine is initialized (gaudi2_is_queue_enabled, Gaudi NIC caps)
	intLen     int    // internal queues: the PQ depth (int_queue_len)
	qmBase     uint64 // CFG offset of the QMAN block
	stream     int    // the upper CP (0..3) of the QMAN this queue feeds
	// msgBase are CP_MSG_BASE0..3 of the stream: absolute addresses, 0 when
	// the driver leaves the register unprogrammed.
	msgBase [4]uint64
	// engine is the ASIC's engine id (GaudiEngineID, Gaudi2EngineID) of the
	// engine the QMAN feeds, for error reports.
	engine uint32
}

// queueTable returns the queue properties of the profile's ASIC.
func queueTable(p *profile) []queueProps {
	if p.asic == Gaudi3 {
		return gaudi3Queues()
	}
	if p.dramVirtual {
		return gaudi2Queues(p)
	}
	return gaudiQueues()
}

// gaudiQueues follows gaudi_queue_type and the QMAN init functions:
// DMA_0/DMA_1 are the external PCI DMA queues, CPU_PQ is the driver's,
// the rest are internal. MME_0_x runs on the MME2 QMAN and MME_1_x on
// MME0 (gaudi_init_mme_qmans).
func gaudiQueues() []queueProps {
	const (
		dmaQM  = 0x508000 // DMA0_QM, 0x20000 apart
		mme0QM = 0x068000
		mme2QM = 0x168000
		tpcQM  = 0xE08000 // TPC0_QM, 0x40000 apart
		nicQM  = 0xCE0000 // NIC0_QM0; QM1 0x2000 further, next NIC 0x40000
	)
	en := func(off uint64) uint64 { return gaudiCFGBase + off }
	enMon, enSOB := en(gaudiSMEastNorth+gaudiSMLayout.payL), en(gaudiSMEastNorth)
	wsMon, wsSOB := en(gaudiSMWestSouth+gaudiSMLayout.payL), en(gaudiSMWestSouth)
	all := [4]uint64{enMon, enSOB, wsMon, wsSOB}
	east := [4]uint64{enMon, enSOB}
	q := make([]queueProps, 113)
	for i := range q {
		p := &q[i]
		p.enabled = true
		switch {
		case i < 8: // DMA_0_x, DMA_1_x
			dma := i / 4
			*p = queueProps{typ: queueExt, cbAlloc: cbAllocKernel, enabled: true,
				qmBase: dmaQM + uint64(dma)*0x20000, stream: i % 4, msgBase: all, engine: uint32(dma)}
		case i == 8:
			*p = queueProps{typ: queueCPU, cbAlloc: cbAllocKernel, driverOnly: true}
		case i <= 32: // DMA_2_x .. DMA_7_x
			dma := 2 + (i-9)/4
			p.typ, p.cbAlloc, p.intLen = queueInt, cbAllocUser, 4096
			p.qmBase, p.stream, p.msgBase, p.engine = dmaQM+uint64(dma)*0x20000, (i-9)%4, east, uint32(dma)
			if dma == 5 {
				p.msgBase = all // DMA5 serves the collective sync stream
			}
		case i <= 40: // MME_0_x, MME_1_x
			p.typ, p.cbAlloc, p.intLen = queueInt, cbAllocUser, 1024
			p.qmBase, p.stream, p.msgBase = mme2QM, (i-33)%4, east
			p.engine = 10 // GAUDI_ENGINE_ID_MME_2
			if i >= 37 {
				p.qmBase, p.engine = mme0QM, 8 // GAUDI_ENGINE_ID_MME_0
			}
		case i <= 72: // TPC_0_x .. TPC_7_x
			tpc := (i - 41) / 4
			p.typ, p.cbAlloc, p.intLen = queueInt, cbAllocUser, 1024
			p.qmBase, p.stream, p.msgBase, p.engine = tpcQM+uint64(tpc)*0x40000, (i-41)%4, east, uint32(12+tpc)
			if tpc == 7 {
				p.msgBase = all
			}
		default: // NIC_0_x .. NIC_9_x: the simulator has no NIC ports
			nic := (i - 73) / 4
			p.typ, p.cbAlloc, p.intLen, p.enabled = queueInt, cbAllocUser, 4096, false
			p.qmBase = nicQM + uint64(nic/2)*0x40000 + uint64(nic%2)*0x2000
			p.stream, p.msgBase, p.engine = (i-73)%4, all, uint32(20+nic)
		}
	}
	return q
}

// gaudi2Queues follows gaudi2_set_fixed_properties (every queue but CPU_PQ
// is an H/W queue taking user CBs), gaudi2_qm_blocks_bases and
// gaudi2_is_queue_enabled: of the PDMA queues only PDMA_0_0, PDMA_0_1 and
// PDMA_1_0 count as enabled, EDMA and TPC queues follow the enabled masks,
// NIC queues are disabled (no NIC ports in the simulator).
func gaudi2Queues(p *profile) []queueProps {
	sm := uint64(gaudi2CFGBase + gaudi2SMDcore0)
	bases := [4]uint64{sm + gaudi2SMLayout.payL, sm} // CP_MSG_BASE0/1; 2/3 unprogrammed
	q := make([]queueProps, 261)
	set := func(id int, qm uint64, enabled bool, engine uint32) {
		q[id] = queueProps{typ: queueHW, cbAlloc: cbAllocUser, enabled: enabled,
			qmBase: qm, stream: id % 4, msgBase: bases, engine: engine}
	}
	for i := 0; i < 8; i++ {
		set(i, 0x4C8A000+uint64(i/4)*0x10000, i == 0 || i == 1 || i == 4, uint32(hl.GAUDI2_ENGINE_ID_PDMA_0)+uint32(i/4))
	}
	dcoreFirst := [4]int{8, 48, 84, 120}
	for d := 0; d < 4; d++ {
		off := uint64(d) * 0x200000
		first := dcoreFirst[d]
		eng := uint32(d * 11) // GAUDI2_DCOREn_ENGINE_ID_EDMA_0
		for e := 0; e < 2; e++ {
			idx := d*2 + e
			for s := 0; s < 4; s++ {
				set(first+e*4+s, 0x41CA000+off+uint64(e)*0x10000, p.edmaMask&(1<<idx) != 0, eng+uint32(e))
			}
		}
		for s := 0; s < 4; s++ {
			set(first+8+s, 0x40CA000+off, true, eng+2) // MME
		}
		for t := 0; t < 6; t++ {
			idx := d*6 + t
			for s := 0; s < 4; s++ {
				set(first+12+t*4+s, 0x400A000+off+uint64(t)*0x10000, p.tpcMask&(1<<idx) != 0, eng+3+uint32(t))
			}
		}
	}
	for s := 0; s < 4; s++ { // DCORE0 TPC_6
		set(44+s, 0x406A000, p.tpcMask&(1<<24) != 0, uint32(hl.GAUDI2_DCORE0_ENGINE_ID_TPC_6))
	}
	for i := 156; i < 252; i++ { // NIC_0..NIC_23
		set(i, 0, false, uint32(hl.GAUDI2_ENGINE_ID_NIC0_0)+uint32((i-156)/4))
	}
	for i := 252; i < 260; i++ { // ROT_0, ROT_1
		r := (i - 252) / 4
		set(i, 0x4E0A000+uint64(r)*0x10000, p.rotatorMask&(1<<r) != 0, uint32(hl.GAUDI2_ENGINE_ID_ROT_0)+uint32(r))
	}
	q[260] = queueProps{typ: queueCPU, cbAlloc: cbAllocKernel, driverOnly: true}
	return q
}

// cfgBase returns the ASIC's CFG_BASE and CFG_SIZE.
func (p *profile) cfgSpace() (base, size uint64) {
	if p.asic == Gaudi3 {
		return gaudi3CFGBase, gaudi3CFGSize
	}
	if p.dramVirtual {
		return gaudi2CFGBase, gaudi2CFGSize
	}
	return gaudiCFGBase, gaudiCFGSize
}

// maxPendingCS is max_pending_cs: GAUDI_MAX_PENDING_CS (16384),
// GAUDI2_MAX_PENDING_CS (64).
func (p *profile) maxPendingCS() uint64 {
	if p.dramVirtual {
		return 64
	}
	return 16384
}
