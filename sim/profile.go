package sim

import "fmt"

// profile holds what the 6.12 driver knows about an ASIC once the device is
// up: the fixed properties (gaudi/gaudi.c gaudi_set_fixed_properties,
// gaudi2/gaudi2.c gaudi2_set_fixed_properties and gaudi2_set_dram_properties)
// and the values the firmware reports at boot (cpucp info, PLLs, power),
// which INFO returns and MEMORY enforces.
//
// Values marked "firmware" come from the device's firmware on real hardware;
// the simulator answers with plausible fixed stand-ins.
type profile struct {
	asic     ASIC
	deviceID uint32 // PCI device id (get_pci_id)

	sramBase     uint64 // SRAM physical base
	sramUserBase uint64 // first SRAM byte users get
	sramSize     uint64 // total SRAM

	dramBase     uint64 // DRAM physical base
	dramUserBase uint64 // first DRAM byte users get (the rest is the driver's)
	dramSize     uint64 // total DRAM
	dramPageSize uint64 // the unit DRAM is allocated and mapped in
	dramVirtual  bool   // dram_supports_virtual_memory: DRAM reached through the device MMU (Gaudi2)
	dmmuStart    uint64 // dmmu.start_addr, the DRAM VA base when dramVirtual

	defaultAllocPageSize uint64 // device_mem_alloc_default_page_size
	pageOrderBitmask     uint64 // dmmu.supported_pages_mask (DEV_MEM_ALLOC_PAGE_SIZES)
	numEvents            uint32 // num_of_events: the ASIC's event queue ids (HW_EVENTS counters)
	serverType           uint16 // server_type

	firstUserInterrupt uint16 // first_available_user_interrupt
	userInterrupts     uint16 // user_interrupt_count
	tpcInterruptID     uint16 // tpc_interrupt_id
	decoderMask        uint32 // decoder_enabled_mask
	edmaMask           uint32 // edma_enabled_mask
	tpcMask            uint64 // tpc_enabled_mask
	rotatorMask        uint32 // rotator_enabled_mask
	mmeMasterSlave     uint8  // mme_master_slave_mode
	securityEnabled    uint8  // fw_security_enabled (firmware boot status)
	engineCoreIRQAddr  uint64 // engine_core_interrupt_reg_addr (firmware register map)

	psocPCIPLL [4]uint32 // psoc_pci_pll_nr, nf, od, div_factor

	// Sync manager resources per dcore (SYNC_MANAGER): first available
	// sync object, monitor and completion queue.
	firstSOB, firstMon, firstCQ [hlMaxDcores]uint32

	// Firmware-provided cpucp info.
	cpucpVersion string
	cardName     string
	cpldVersion  uint32

	// PLLs: pll_index values 0..len(pllOutputs)-1 are valid (the ASIC's
	// hl_*_pll_index enum); each entry is the four output frequencies in
	// MHz the firmware reports (PLL_FREQUENCY). clkPLL is clk_pll_index,
	// whose output 0 CLK_RATE reports.
	pllOutputs [][4]uint16
	clkPLL     int
	// tsPLL/tsOutput select the PLL output that clocks the PSOC timestamp
	// counter TIME_SYNC reads (psoc_timestamp_frequency).
	tsPLL, tsOutput int

	// Power in mW: dc_power_default (driver), the firmware's max power and
	// the idle power the simulated firmware reports.
	dcPowerMW, maxPowerMW, idlePowerMW uint64

	// Virtual memory (MEMORY ioctl), see vm.go.
	vm vmProps
}

// vmProps are the fixed properties the MEMORY ioctl works with: the
// device MMU's virtual address ranges as hl_vm_ctx_init builds them from
// pmmu, pmmu_huge and dmmu, the ranges that allocations without a hint
// avoid (hints_*_reserved_va_range), and what a new context reserves.
type vmProps struct {
	// The three VA ranges of a context, bounds inclusive, after
	// va_range_init's rounding. With hugeRange false (pmmu_huge_range),
	// host memory mapped with huge pages shares the 4 KB range.
	host, hostHuge, dram vaSpan
	hugeRange            bool
	hostPage, hugePage   uint64 // pmmu.page_size, pmmu_huge.page_size
	dmmuPage             uint64 // dmmu.page_size: DRAM VA alignment and hl_is_dram_va's size
	dmmuStart, dmmuEnd   uint64 // dmmu.start_addr, dmmu.end_addr (exclusive)

	// hints_range_reservation and the reserved ranges per range type.
	hintsReserved                              bool
	hintsHost, hintsHostHuge, hintsDRAM        vaSpan
	dramHintsMask                              uint64 // dram_hints_align_mask
	cbPoolSize, internalCBSize, msixDoorbellVA uint64
}

// vaSpan is an inclusive address range.
type vaSpan struct{ start, end uint64 }

// hlMaxDcores is HL_MAX_DCORES (common/habanalabs.h): the dcore_id bound of
// SYNC_MANAGER.
const hlMaxDcores = 8

const (
	sz1M  = 1 << 20
	sz8M  = 8 << 20
	sz1G  = 1 << 30
	sz16G = 16 << 30
)

// Gaudi2 constants (drivers/accel/habanalabs/include/gaudi2/gaudi2.h,
// gaudi2/gaudi2P.h, gaudi2/gaudi2.c).
const (
	gaudi2SRAMBase     = 0x1000FFFFFD000000 // SRAM_BASE_ADDR; SRAM_USER_BASE_OFFSET is 0
	gaudi2SRAMSize     = 0x3000000          // SRAM_SIZE, 48 MB
	gaudi2DRAMPhysBase = 0x1001000000000000 // DRAM_PHYS_BASE
	gaudi2CFGBase      = 0x1000007FF8000000 // CFG_BASE
	gaudi2HBMs         = 6                  // GAUDI2_HBM_NUM
	gaudi2TLBFactor    = 16                 // GAUDI2_COMPENSATE_TLB_PAGE_SIZE_FACTOR
	gaudi2EventSize    = 1329               // GAUDI2_EVENT_SIZE (gaudi2_async_events.h)
)

// gaudi2Profile is an HL-225 with six healthy HBM stacks and no binning.
//
// DRAM (gaudi2_set_dram_properties): the page is
// GAUDI2_COMPENSATE_TLB_PAGE_SIZE_FACTOR (16) × functional HBMs × 8 MB =
// 768 MB; the size is HBMs × 16 GB = 96 GB; the driver keeps the first page
// (dram_user_base_address = DRAM_PHYS_BASE + page), so HW_IP_INFO reports
// 127 pages (95.25 GB) and reserved_dram_size 768 MB. The DRAM VA base
// (dmmu.start_addr) is DRAM_PHYS_BASE + page × DIV_ROUND_UP(size, page) =
// 0x1001000000000000 + 768 MB × 128 = 0x1001001800000000 (setDRAM).
//
// Interrupts (enum gaudi2_irq_num): the event queue is MSI-X 0, the 20
// decoder interrupts 1..20, completion 21, 24 NIC ports 22..45, TPC assert
// 46, EQ error 47, so the 64 user interrupts (GAUDI2_NUM_USER_INTERRUPTS)
// start at 48.
//
// Sync manager (dcore 0 only; other dcores stay 0):
// GAUDI2_RESERVED_SOB_NUMBER (64 CS + 1 KDMA + 10 + 10 decoder = 85) + 2
// (HL_RSVD_SOBS) × 164 sync-stream queues (queues 0..259 less the 96 NIC
// queues) = 413; GAUDI2_RESERVED_MON_NUMBER (64 + 1 + 30 + 30 = 125) + 1 ×
// 164 = 289; GAUDI2_RESERVED_CQ_NUMBER = 2.
var gaudi2Profile = profile{
	asic:                 Gaudi2,
	deviceID:             0x1020, // PCI_IDS_GAUDI2
	sramBase:             gaudi2SRAMBase,
	sramUserBase:         gaudi2SRAMBase,
	sramSize:             gaudi2SRAMSize,
	dramBase:             gaudi2DRAMPhysBase,
	dramVirtual:          true,
	numEvents:            gaudi2EventSize,
	serverType:           0, // HL_SERVER_TYPE_UNKNOWN; nothing upstream sets another
	firstUserInterrupt:   48,
	userInterrupts:       64,
	tpcInterruptID:       46,    // GAUDI2_IRQ_NUM_TPC_ASSERT
	decoderMask:          0x3FF, // GAUDI2_DECODER_FULL_MASK (no decoder binning)
	edmaMask:             0xFF,  // GAUDI2_EDMA_FULL_MASK (no EDMA binning)
	tpcMask:              0x1FFFFFF,
	rotatorMask:          0x3, // BIT(NUM_OF_ROT) - 1
	mmeMasterSlave:       1,
	securityEnabled:      1, // firmware: production Gaudi2 boots secured (CPU_BOOT_DEV_STS0_SECURITY_EN)
	engineCoreIRQAddr:    gaudi2CFGBase + 0x4E88300,
	firstSOB:             [hlMaxDcores]uint32{413},
	firstMon:             [hlMaxDcores]uint32{289},
	firstCQ:              [hlMaxDcores]uint32{2},
	cpucpVersion:         "1.18.0-fw-52.0.0-sec-9", // firmware
	cardName:             "HL225",                  // GAUDI2_DEFAULT_CARD_NAME, also the firmware's
	cpldVersion:          0x10,                     // firmware
	pageOrderBitmask:     0,                        // dmmu.supported_pages_mask is never set
	psocPCIPLL:           [4]uint32{},              // only gaudi.c fills these
	defaultAllocPageSize: 0,                        // setDRAM: the DRAM page
	// hl_gaudi2_pll_index order: CPU, PCI, SRAM, HBM, NIC, DMA, MESH,
	// MME, TPC, IF, VID, MSS (firmware frequencies).
	pllOutputs: [][4]uint16{
		{1500, 750, 500, 100}, // CPU: output 3 clocks the PSOC timestamp
		{1000, 500, 250, 100}, // PCI
		{1600, 800, 400, 200}, // SRAM
		{1600, 800, 400, 200}, // HBM
		{1400, 700, 350, 175}, // NIC
		{1650, 825, 412, 206}, // DMA
		{1650, 825, 412, 206}, // MESH
		{1650, 825, 412, 206}, // MME: clk_pll_index (HL_GAUDI2_MME_PLL)
		{1650, 825, 412, 206}, // TPC
		{1650, 825, 412, 206}, // IF
		{800, 400, 200, 100},  // VID
		{1000, 500, 250, 125}, // MSS
	},
	clkPLL:      7, // HL_GAUDI2_MME_PLL
	tsPLL:       0, // gaudi2_fetch_psoc_frequency: CPU PLL output 3
	tsOutput:    3,
	dcPowerMW:   60000,  // DC_POWER_DEFAULT
	maxPowerMW:  600000, // firmware (hl_fw_get_max_power): HL-225 600 W
	idlePowerMW: 95000,  // firmware: an idle card
}

// Gaudi constants (include/gaudi/gaudi.h, gaudi/gaudiP.h, uapi header).
const (
	gaudiSRAMBase     = 0x7FF0000000 // SRAM_BASE_ADDR
	gaudiSRAMSize     = 0x1400000    // SRAM_SIZE, 20 MB
	gaudiSRAMReserved = 0x80         // GAUDI_DRIVER_SRAM_RESERVED_SIZE_FROM_START
	gaudiDRAMUserBase = 0x20000000   // DRAM_BASE_ADDR_USER
	gaudiHBMSize      = 0x800000000  // GAUDI_HBM_SIZE_32GB
	gaudiEventSize    = 663          // GAUDI_EVENT_SIZE (gaudi_async_events.h)
	ushrtMax          = 0xFFFF       // USHRT_MAX
)

// gaudiProfile is an HL-205: 32 GB of HBM addressed physically, the driver
// keeping the first 512 MB, 2 MB pages, no DRAM virtual memory.
//
// Sync manager (dcore HL_GAUDI_WS_DCORE = 0): sync_stream_first_sob is
// ALIGN(NUMBER_OF_SOBS_IN_GRP 11, HL_MAX_SOBS_PER_MONITOR 8) × 4 streams × 2
// = 128, plus 2 × 8 external queues = 144; sync_stream_first_mon is 12
// collective queues × 4 + 8 external × 2 = 64, plus 1 × 8 = 72; every
// dcore's first CQ is USHRT_MAX.
var gaudiProfile = profile{
	asic:                 Gaudi,
	deviceID:             0x1000, // PCI_IDS_GAUDI
	sramBase:             gaudiSRAMBase,
	sramUserBase:         gaudiSRAMBase + gaudiSRAMReserved,
	sramSize:             gaudiSRAMSize,
	dramBase:             0, // DRAM_PHYS_BASE
	dramUserBase:         gaudiDRAMUserBase,
	dramSize:             gaudiHBMSize,
	dramPageSize:         2 * sz1M, // PAGE_SIZE_2MB
	defaultAllocPageSize: 2 * sz1M,
	numEvents:            gaudiEventSize,
	serverType:           0,
	firstUserInterrupt:   ushrtMax,
	userInterrupts:       0, // never set for Gaudi
	tpcInterruptID:       ushrtMax,
	tpcMask:              0xFF, // TPC_ENABLED_MASK
	securityEnabled:      0,    // PCI id 0x1000 is the non-secured part
	firstSOB:             [hlMaxDcores]uint32{144},
	firstMon:             [hlMaxDcores]uint32{72},
	firstCQ:              [hlMaxDcores]uint32{ushrtMax, ushrtMax, ushrtMax, ushrtMax, ushrtMax, ushrtMax, ushrtMax, ushrtMax},
	cpucpVersion:         "1.18.0-fw-52.0.0-sec-7", // firmware
	cardName:             "HL205",                  // GAUDI_DEFAULT_CARD_NAME, also the firmware's
	cpldVersion:          0x10,                     // firmware
	// gaudi_fetch_psoc_frequency leaves nr/nf/od/div at 0 when the
	// firmware reports PLL info (CPU_BOOT_DEV_STS0_PLL_INFO_EN), as
	// current firmware does; only the legacy path reads the registers.
	psocPCIPLL: [4]uint32{},
	// hl_gaudi_pll_index order: CPU, PCI, SRAM, HBM, NIC, DMA, MESH, MME,
	// TPC, IF (firmware frequencies).
	pllOutputs: [][4]uint16{
		{1500, 750, 100, 100},  // CPU: output 2 clocks the PSOC timestamp
		{1000, 500, 250, 100},  // PCI
		{1600, 800, 400, 200},  // SRAM
		{1000, 500, 250, 125},  // HBM
		{1400, 700, 350, 175},  // NIC
		{1600, 800, 400, 200},  // DMA
		{1600, 800, 400, 200},  // MESH
		{2200, 1100, 550, 275}, // MME: clk_pll_index, set to max_freq_value GAUDI_MAX_CLK_FREQ
		{1600, 800, 400, 200},  // TPC
		{1600, 800, 400, 200},  // IF
	},
	clkPLL:      7, // HL_GAUDI_MME_PLL
	tsPLL:       0, // gaudi_fetch_psoc_frequency: CPU PLL output 2
	tsOutput:    2,
	dcPowerMW:   60000,  // DC_POWER_DEFAULT_PMC (set_default_power_values, PMC card, not secured)
	maxPowerMW:  350000, // MAX_POWER_DEFAULT_PMC
	idlePowerMW: 80000,  // firmware: an idle card
}

// newProfile returns the profile of asic with total DRAM of dramSize bytes
// (0 for the default).
func newProfile(asic ASIC, dramSize uint64) (profile, error) {
	p := gaudi2Profile
	switch asic {
	case Gaudi:
		p = gaudiProfile
	case Gaudi3:
		p = gaudi3Profile
	case Gaudi2:
	default:
		return profile{}, fmt.Errorf("unknown ASIC %v", asic)
	}
	p.pllOutputs = append([][4]uint16(nil), p.pllOutputs...)
	if asic == Gaudi3 {
		if err := p.setDRAMGaudi3(dramSize); err != nil {
			return profile{}, err
		}
		p.setVMGaudi3()
		return p, nil
	}
	if err := p.setDRAM(dramSize); err != nil {
		return profile{}, err
	}
	p.setVM()
	return p, nil
}

// Address space constants of the device MMUs (gaudi2/gaudi2P.h,
// include/gaudi2/gaudi2.h, gaudi/gaudiP.h).
const (
	gaudi2HostVAStart  = 0xFFF0000000000000 // VA_HOST_SPACE_PAGE_START
	gaudi2HostVAEnd    = 0xFFF0800000000000 // VA_HOST_SPACE_PAGE_END
	gaudi2HugeVAStart  = 0xFFF0800000000000 // VA_HOST_SPACE_HPAGE_START
	gaudi2HugeVAEnd    = 0xFFF1000000000000 // VA_HOST_SPACE_HPAGE_END
	gaudi2HBMVAEnd     = 0x1002000000000000 // VA_HBM_SPACE_END
	gaudi2DoorbellVA   = 0xFFF077FFFFFF0000 // RESERVED_VA_FOR_VIRTUAL_MSIX_DOORBELL_START
	gaudi2HostHintsEnd = 0xFFF07FFFFFFFFFFF // RESERVED_VA_RANGE_FOR_ARC_ON_HOST_END
	gaudi2HugeHints    = 0xFFF0F80000000000 // RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_START
	gaudi2HugeHintsEnd = 0xFFF0FFFFFFFFFFFF // ..._HPAGE_END
	gaudi2DRAMHints    = 0x1001500000000000 // RESERVED_VA_RANGE_FOR_ARC_ON_HBM_START
	gaudi2DRAMHintsEnd = 0x10016FFFFFFFFFFF // RESERVED_VA_RANGE_FOR_ARC_ON_HBM_END
	gaudi2DRAMHintMask = 0xFFFFFFFFFFFF     // DRAM_VA_HINT_MASK (GAUDI2_HBM_MMU_SCRM_ADDRESS_MASK)
	gaudiVAStart       = 0x1000000000000    // VA_HOST_SPACE_START
	gaudiVAEnd         = 0x3FF8000000000    // VA_HOST_SPACE_END
	cbVAPoolSize       = 4 * sz1G           // CB_VA_POOL_SIZE (common/command_buffer.c)
	internalCBSize     = 2 * sz1M           // HOST_SPACE_INTERNAL_CB_SZ
	hostPageSize       = 4096               // pmmu.page_size on 4 KB-page kernels
	hugePageSize       = 2 * sz1M           // pmmu_huge.page_size on 4 KB-page kernels
)

// setVM fills the MEMORY properties: the ranges are what hl_vm_ctx_init
// passes to va_range_init (end_addr - 1 as the inclusive end), rounded as
// va_range_init rounds power-of-two ranges. Gaudi sets pmmu.end_addr to an
// inclusive value already, so its host range loses its last page to that
// double "- 1" and the rounding, exactly as on the driver.
func (p *profile) setVM() {
	v := &p.vm
	v.hostPage, v.hugePage = hostPageSize, hugePageSize
	v.internalCBSize = internalCBSize
	if p.dramVirtual {
		// gaudi2_set_fixed_properties, gaudi2_set_dram_properties.
		v.host = vaInit(gaudi2HostVAStart, gaudi2HostVAEnd-1, hostPageSize)
		v.hostHuge = vaInit(gaudi2HugeVAStart, gaudi2HugeVAEnd-1, hugePageSize)
		v.hugeRange = true
		v.dmmuPage = sz1G // PAGE_SIZE_1GB
		v.dmmuStart = p.dmmuStart
		v.dmmuEnd = p.dmmuStart + p.dramPageSize*((gaudi2HBMVAEnd-p.dmmuStart)/v.dmmuPage)
		v.dram = vaInit(v.dmmuStart, v.dmmuEnd-1, p.dramPageSize)
		v.hintsReserved = true
		v.hintsHost = vaSpan{gaudi2DoorbellVA, gaudi2HostHintsEnd}
		v.hintsHostHuge = vaSpan{gaudi2HugeHints, gaudi2HugeHintsEnd}
		v.hintsDRAM = vaSpan{gaudi2DRAMHints, gaudi2DRAMHintsEnd}
		v.dramHintsMask = ^uint64(gaudi2DRAMHintMask)
		v.cbPoolSize = cbVAPoolSize // supports_cb_mapping
		v.msixDoorbellVA = gaudi2DoorbellVA
		return
	}
	// gaudi_set_fixed_properties: the host range is the lower half of
	// VA_HOST_SPACE, the DMMU range (unused: no DRAM MMU) the upper half.
	half := uint64(gaudiVAEnd-gaudiVAStart) / 2
	v.host = vaInit(gaudiVAStart, gaudiVAStart+half-1-1, hostPageSize)
	v.hostHuge = v.host
	v.dmmuPage = 2 * sz1M
	v.dmmuStart, v.dmmuEnd = gaudiVAStart+half, gaudiVAEnd
	v.dram = vaInit(v.dmmuStart, v.dmmuEnd-1, p.dramPageSize)
}

// vaInit applies va_range_init's rounding to [start, end] (inclusive) for a
// range of pages of the given size.
func vaInit(start, end, page uint64) vaSpan {
	if isPow2(page) {
		start = (start + page - 1) &^ (page - 1)
		end = (end+1)&^(page-1) - 1
	}
	return vaSpan{start, end}
}

// isPow2 is the kernel's is_power_of_2: false for 0.
func isPow2(n uint64) bool { return n != 0 && n&(n-1) == 0 }

// setDRAM sets the DRAM size and what depends on it. Gaudi2 derives its
// page from the number of functional HBMs: 80 GB is a card with one HBM
// binned (640 MB pages); any other size keeps the six-HBM 768 MB page, so
// tests can build small devices. Gaudi's geometry is fixed.
func (p *profile) setDRAM(size uint64) error {
	if p.dramVirtual {
		hbms := uint64(gaudi2HBMs)
		if size == 0 {
			size = hbms * sz16G
		} else if size == (gaudi2HBMs-1)*sz16G {
			hbms = gaudi2HBMs - 1
		}
		p.dramPageSize = gaudi2TLBFactor * hbms * sz8M
		p.defaultAllocPageSize = p.dramPageSize
		p.dramUserBase = p.dramBase + p.dramPageSize
	} else if size == 0 {
		size = p.dramSize
	}
	page := p.dramPageSize
	kmd := p.dramUserBase - p.dramBase
	if size%page != 0 || size < kmd+page {
		return fmt.Errorf("DRAM size %#x is not a multiple of %#x-byte pages above the driver's %#x bytes", size, page, kmd)
	}
	p.dramSize = size
	if p.dramVirtual {
		p.dmmuStart = p.dramBase + page*((size+page-1)/page)
	}
	return nil
}
