package sim

import (
	"fmt"

	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The Gaudi3 profile: what Intel's out-of-tree driver knows of a Gaudi3
// once it is up. The upstream kernel has no Gaudi3 support, so a Gaudi3
// device always runs the out-of-tree flavour (New).
//
// Sources, in HabanaAI/drivers.accel.habanalabs.kernel (facts only, each
// value also in package uapi/gaudi3 with its source):
//   - drivers/accel/habanalabs/gaudi3/gaudi3.c @58be96464de01b613d29262449eb6af038b7fff6,
//     gaudi3_set_fixed_properties: one queue, the device CPU's, driver
//     only; user interrupts from GAUDI3_IRQ_NUM_USER_FIRST, 256 of them;
//     tpc_interrupt_id USHRT_MAX; DRAM from DRAM_PHYS_BASE, the DRAM VA
//     range (dmmu) from the end of the physical HBM to VA_HBM_SPACE_END;
//     the firmware, device-MMU page tables and trace buffers reserved at
//     the start of HBM, each start rounded up to the DRAM page; 32 MiB
//     default allocation pages; host VA range 0xFF70000000000000 to
//     0xFF70800000000000 (4 KiB pages), huge pages in the same range with
//     bit 55 set (2 MiB); completion_queues_count and the first user
//     sync object, monitor and CQ 19 (GAUDI3_RESERVED_*_NUMBER);
//     supports_odp; two dies;
//   - common/habanalabs_drv.c @4058b6e1280374fab990403cd98d0a4e8358b6b1,
//     set_driver_behavior_per_device (ASIC_GAUDI3 defaults: all 24 PDMA
//     channels, tpc_mask all ones, mme 0xFF, edma 0xFF, decoders 0xFFFF,
//     scheduler ARCs 0xFFFF, rotators 0xFF, cache_enable so hw_ip_info
//     reports no SRAM), gaudi3_validate_set_rotator_binning (0x77) and
//     gaudi3_validate_set_decoder_binning (gaudi3.c @f9523baa: the last
//     decoder of each die is always binned, 0x7F7F);
//   - common/command_submission.c @4058b6e1 validate_queue_index: a queue
//     index at or past max_queues is EINVAL ("Queue index %d is
//     invalid"), a driver_only queue EINVAL ("Queue index %d is restricted
//     for the kernel driver"); Gaudi3's only queue is driver only, so no
//     CS with a user queue passes; hl_cs_sanity_checks refuses sync
//     stream (signal, wait, collective wait) CSs with EINVAL when the
//     device does not support sync streams, and Gaudi3 has no queue they
//     could run on.
//
// Values the firmware reports on hardware (card name, versions, PLLs,
// power, server type) are stand-ins, marked "firmware"; GAUDI3_EVENT_SIZE
// (num_of_events) was not found in the sources read: the simulator's
// count is a stand-in too.

// gaudi3ReservedHBM is the HBM the driver keeps below the user's memory
// for a DRAM page of page bytes: the firmware's 32 MiB, then the device
// MMU's page tables, then two trace buffers per die, each start rounded
// up to the page, the user's memory starting at the next page boundary.
func gaudi3ReservedHBM(page uint64) uint64 {
	up := func(v uint64) uint64 { return (v + page - 1) / page * page }
	off := uint64(g3.FW_RESERVED_HBM_SIZE)
	off = up(off) + g3.HMMU_PAGE_TABLES_SIZE
	off = up(off) + g3.MAX_NUM_OF_DIES*g3.ETR_BUF_PER_DIE*g3.ETR_BUF_SIZE
	return up(off)
}

// gaudi3Profile is a production HL-325L with eight healthy HBMs (128 GiB)
// and the driver's default module parameters.
var gaudi3Profile = profile{
	asic:                 Gaudi3,
	deviceID:             g3.PCI_IDS_GAUDI3,
	sramBase:             g3.SRAM_BASE_ADDR,
	sramUserBase:         g3.SRAM_BASE_ADDR,
	sramSize:             g3.SRAM_SIZE,
	dramBase:             g3.DRAM_PHYS_BASE,
	dramVirtual:          true,
	numEvents:            1024,                                          // stand-in: GAUDI3_EVENT_SIZE not found
	serverType:           uint16(hl.HL_SERVER_GAUDI3_HLS3_FULLSCALE_IN), // firmware
	firstUserInterrupt:   g3.DefaultHWIPInfo.FirstAvailableInterruptID,
	userInterrupts:       g3.GAUDI3_NUM_USER_INTERRUPTS,
	tpcInterruptID:       g3.DefaultHWIPInfo.TPCInterruptID,
	decoderMask:          0x7F7F, // decoders 0xFFFF less the last of each die (gaudi3_validate_set_decoder_binning)
	edmaMask:             g3.DefaultHWIPInfo.EDMAEnabledMask,
	tpcMask:              ^uint64(0), // 8 HDCOREs x 8 TPCs
	rotatorMask:          g3.DefaultHWIPInfo.RotatorEnabledMask,
	mmeMasterSlave:       0,
	securityEnabled:      g3.DefaultHWIPInfo.SecurityEnabled,
	engineCoreIRQAddr:    0, // not found in the sources read
	firstSOB:             [hlMaxDcores]uint32{19},
	firstMon:             [hlMaxDcores]uint32{19},
	firstCQ:              [hlMaxDcores]uint32{19},
	cpucpVersion:         "1.24.1-fw-59.2.0-sec-9", // firmware
	cardName:             "HL325L",                 // firmware
	cpldVersion:          0x10,                     // firmware
	defaultAllocPageSize: g3.DefaultAllocPageSize,
	// dmmu.supported_pages_mask: the HMMU's default page sizes, 32 MiB
	// and 1 GiB (gaudi3_set_fixed_properties, the bring-up parameter's
	// default); any size of GAUDI3_HMMU_VALID_PAGES_MASK may be enabled.
	pageOrderBitmask: 32<<20 | 1<<30,
	// hl_gaudi3_pll_index order: CPU, PCI, HBM, NIC, DMA, MESH, MME, TPC,
	// VID, D2D, CS, C2C, NCH, C2M (firmware frequencies).
	pllOutputs: [][4]uint16{
		{1500, 750, 500, 100}, // CPU: output 3 clocks the PSOC timestamp
		{1000, 500, 250, 100}, // PCI
		{1600, 800, 400, 200}, // HBM
		{1400, 700, 350, 175}, // NIC
		{1650, 825, 412, 206}, // DMA
		{1650, 825, 412, 206}, // MESH
		{1650, 825, 412, 206}, // MME: clk_pll_index
		{1650, 825, 412, 206}, // TPC
		{800, 400, 200, 100},  // VID
		{1600, 800, 400, 200}, // D2D
		{1000, 500, 250, 125}, // CS
		{1600, 800, 400, 200}, // C2C
		{1650, 825, 412, 206}, // NCH
		{1600, 800, 400, 200}, // C2M
	},
	clkPLL:      int(g3.HL_GAUDI3_MME_PLL),
	tsPLL:       int(g3.HL_GAUDI3_CPU_PLL),
	tsOutput:    3,
	dcPowerMW:   60000,  // DC_POWER_DEFAULT
	maxPowerMW:  900000, // firmware: an HL-325L's 900 W
	idlePowerMW: 120000, // firmware: an idle card
}

// setDRAMGaudi3 is setDRAM for Gaudi3: 32 MiB pages, the driver's
// reservation at the start, any whole number of pages above it (a
// production card has 128 GiB, 112 GiB with one HBM binned; smaller sizes
// make small test devices).
func (p *profile) setDRAMGaudi3(size uint64) error {
	const page = g3.DefaultAllocPageSize
	if size == 0 {
		size = g3.MAX_NUM_OF_DIES * g3.NUM_HBM_PER_DIE * g3.SINGLE_HBM_SIZE
	}
	kmd := gaudi3ReservedHBM(page)
	if size%page != 0 || size < kmd+page || size > g3.DRAM_MAX_SIZE {
		return fmt.Errorf("DRAM size %#x is not a multiple of %#x-byte pages above the driver's %#x bytes", size, uint64(page), kmd)
	}
	p.dramSize = size
	p.dramPageSize = page
	p.dramUserBase = p.dramBase + kmd
	p.dmmuStart = p.dramBase + size
	return nil
}

// setVMGaudi3 is setVM for Gaudi3 (gaudi3_set_fixed_properties): the
// host range with 4 KiB pages, the huge range (bit 55 set) with 2 MiB
// pages, DRAM VAs from the end of the physical HBM to VA_HBM_SPACE_END
// in 32 MiB pages. The ARC ranges are reserved from hint-less
// allocations, as on Gaudi2.
func (p *profile) setVMGaudi3() {
	v := &p.vm
	v.hostPage, v.hugePage = hostPageSize, hugePageSize
	v.internalCBSize = internalCBSize
	v.host = vaInit(g3.VA_HOST_SPACE_PAGE_START, g3.VA_HOST_SPACE_PAGE_END-1, hostPageSize)
	v.hostHuge = vaInit(g3.VA_HOST_SPACE_HPAGE_START, g3.VA_HOST_SPACE_HPAGE_END-1, hugePageSize)
	v.hugeRange = true
	v.dmmuPage = p.dramPageSize
	v.dmmuStart = p.dmmuStart
	v.dmmuEnd = g3.VA_HBM_SPACE_END
	v.dram = vaInit(v.dmmuStart, v.dmmuEnd-1, p.dramPageSize)
	v.hintsReserved = true
	v.hintsHost = vaSpan{g3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_START, g3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_END}
	v.hintsHostHuge = vaSpan{g3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_START, g3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_END}
	v.hintsDRAM = vaSpan{g3.RESERVED_VA_RANGE_FOR_ARC_ON_HBM_START, g3.RESERVED_VA_RANGE_FOR_ARC_ON_HBM_END}
	v.dramHintsMask = ^uint64(g3.DRAM_VA_HINT_MASK)
	v.cbPoolSize = cbVAPoolSize
}

// gaudi3Queues is Gaudi3's queue table: GAUDI3_QUEUE_ID_CPU_PQ alone,
// QUEUE_TYPE_CPU and driver only.
func gaudi3Queues() []queueProps {
	return []queueProps{{typ: queueCPU, cbAlloc: cbAllocKernel, driverOnly: true}}
}

// gaudi3HWIPInfo fills what hw_ip_info reports differently on Gaudi3:
// no SRAM (cache_enable), the PDMA channels the user owns, and the masks
// the out-of-tree driver names (pdma_user_owned_ch_mask,
// mme_enabled_mask, odp_supported, sched_arc_enabled_mask).
func (d *Device) gaudi3HWIPInfo(r *hl.InfoHWIPInfo) {
	r.SRAMSize = g3.DefaultHWIPInfo.SRAMSize
	r.Reserved3 = g3.DefaultHWIPInfo.PDMAUserOwnedChMask // pdma_user_owned_ch_mask
	r.Reserved7 = 1                                      // odp_supported
}

// The LBW (configuration) space in the device's full address map: the
// driver's LBW_TO_FULL_DEV_VA_OFFSET (gaudi3.c) is where it starts, and
// every register block of gaudi3_blocks.h lies below 0x0300008000000000.
// The size is the simulator's reading of those addresses.
const (
	gaudi3CFGBase = 0x0300007FE0000000
	gaudi3CFGSize = 0x20000000
)
