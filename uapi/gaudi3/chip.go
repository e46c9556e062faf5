package gaudi3

// PCI device ids of Gaudi3 (include/common/pci_ids.h at 08bf146e, enum
// hl_pci_ids). The driver's own id table and get_asic_type
// (common/habanalabs_drv.c at 4058b6e1) bind only PCI_IDS_GAUDI3 (asic type
// ASIC_GAUDI3, sysfs device_type "GAUDI3"), PCI_IDS_GAUDI3_HL_338
// (ASIC_GAUDI3_HL_338, "GAUDI3 HL-338") and PCI_IDS_GAUDI3_FPGA; the die-1
// and single-die ids are listed but no driver binds them. The driver ignores
// the PCI revision on Gaudi3 (it reports it in hw_ip_info's revision_id).
const (
	PCI_IDS_GAUDI3            = 0x1060
	PCI_IDS_GAUDI3_DIE1       = 0x1061
	PCI_IDS_GAUDI3_SINGLE_DIE = 0x1062
	PCI_IDS_GAUDI3_HL_338     = 0x1063

	PCI_IDS_GAUDI3_SIMULATOR                = 0xff0b
	PCI_IDS_GAUDI3_SIMULATOR_SINGLE_DIE     = 0xff0c
	PCI_IDS_GAUDI3_FPGA                     = 0xff0d
	PCI_IDS_GAUDI3_ARC_SIMULATOR            = 0xff0f
	PCI_IDS_GAUDI3_ARC_SIMULATOR_SINGLE_DIE = 0xff10
	PCI_IDS_GAUDI3_HL_338_SIMULATOR         = 0xff17
	PCI_IDS_GAUDI3_HL_338_ARC_SIMULATOR     = 0xff18
)

// Counts of the chip (include/gaudi3/gaudi3.h at 1d459ad5; gaudi3P.h at
// f9523baa for KDMA_CH_ID, the HBM figures and GAUDI3_NUM_USER_INTERRUPTS).
const (
	MAX_NUM_OF_DIES         = 2
	NUM_OF_HDCORES_PER_DIE  = 4
	NUM_OF_PDMA_CH_PER_GRP  = 6
	NUM_OF_PDMA_GRP_PER_DIE = 2
	NUM_OF_PDMA_GRP         = NUM_OF_PDMA_GRP_PER_DIE * MAX_NUM_OF_DIES
	NUM_OF_PDMA_CH          = NUM_OF_PDMA_GRP * NUM_OF_PDMA_CH_PER_GRP
	NUM_OF_PDMA_CH_PER_DIE  = NUM_OF_PDMA_GRP_PER_DIE * NUM_OF_PDMA_CH_PER_GRP
	NUM_OF_ROTATOR_PER_DIE  = 4
	NUMBER_OF_DEC           = 16
	NUMBER_OF_EDMA          = 8
	NUMBER_OF_MME           = 8
	NIC_MAX_NUM_OF_PORTS    = 12 * 4 // NIC_MAX_NUM_OF_ENGINES * NIC_MAC_NUM_OF_LANES
	GAUDI3_NUM_ETR          = 4      // enum gaudi3_etrs

	// KDMA_CH_ID is the PDMA channel the driver keeps for itself (the
	// last channel of die 1's second group); gaudi3_init_pdma leaves it
	// out of pdma_user_owned_ch_mask.
	KDMA_CH_ID = 23

	// GAUDI3_NUM_USER_INTERRUPTS is the number of user interrupts, one per
	// completion queue: 64 per HDCORE.
	GAUDI3_NUM_USER_INTERRUPTS = 256

	NUM_HBM_PER_DIE = 4
	SINGLE_HBM_SIZE = 16 << 30
	// MAX_FAULTY_HBMS is how many HBMs may be binned off.
	MAX_FAULTY_HBMS = 1
)

// The device address map (include/gaudi3/gaudi3.h at 1d459ad5 and gaudi3P.h
// at f9523baa).
const (
	SRAM_BASE_ADDR = 0x0200FFFFF0000000
	SRAM_SIZE      = 0x0000000010000000 // 256 MiB

	// DRAM_PHYS_BASE is where HBM starts in the device's physical space;
	// the device-MMU virtual range for DRAM (dmmu) starts at the end of the
	// physical HBM, found at run time, and ends at VA_HBM_SPACE_END.
	DRAM_PHYS_BASE   = 0x0201000000000000
	DRAM_MAX_SIZE    = 0x0001000000000000 // 48 bits
	VA_HBM_SPACE_END = 0x0202000000000000

	// DRAM_VA_HINT_MASK masks the bits of a DRAM virtual-address hint.
	DRAM_VA_HINT_MASK = 0xFFFFFFFFFFFF

	RESERVED_VA_RANGE_FOR_ARC_ON_HBM_START = 0x0201E00000000000
	RESERVED_VA_RANGE_FOR_ARC_ON_HBM_END   = 0x0201FFFFFFFFFFFF

	// Host memory mapped to the device (PMMU): 4 KiB pages (64 KiB on a
	// 64 KiB-page kernel) in the regular range, 2 MiB (16 MiB) pages in
	// the huge range, which is the regular one with bit 55 set.
	VA_HOST_SPACE_PAGE_START  = 0xFF70000000000000
	VA_HOST_SPACE_PAGE_END    = 0xFF70800000000000 // 140 TB
	VA_PMMU_HUGE_HINT_BIT     = 0x0080000000000000
	VA_HOST_SPACE_HPAGE_START = VA_HOST_SPACE_PAGE_START | VA_PMMU_HUGE_HINT_BIT
	VA_HOST_SPACE_HPAGE_END   = VA_HOST_SPACE_PAGE_END | VA_PMMU_HUGE_HINT_BIT

	RESERVED_VA_RANGE_FOR_ARC_ON_HOST_START       = 0xFF70780000000000
	RESERVED_VA_RANGE_FOR_ARC_ON_HOST_END         = 0xFF707FFFFFFFFFFF
	RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_START = 0xFFF0780000000000
	RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_END   = 0xFFF07FFFFFFFFFFF

	// HBM the driver reserves below the user's memory, in this order, each
	// start rounded up to the DRAM page size (gaudi3_set_fixed_properties):
	// firmware, the device-MMU page tables, then ETR_BUF_PER_DIE trace
	// buffers per die.
	FW_RESERVED_HBM_SIZE  = 32 << 20
	HMMU_PAGE_TABLES_SIZE = 0x500000   // 5 MiB
	ETR_BUF_SIZE          = 0x02000000 // 32 MiB
	ETR_BUF_PER_DIE       = 2

	// PMMU_PAGE_TABLES_SIZE is the host-resident page tables of the
	// host-memory MMU.
	PMMU_PAGE_TABLES_SIZE = 0x0C000000 // 192 MiB
)

// DRAM page sizes (gaudi3.c's header comment and gaudi3P.h): the device
// MMU supports every power of two from 32 MiB to 2 GiB except 128 MiB, with
// up to three sizes active at once: at most two of the small ones (32 and
// 64 MiB) and one large one (256 MiB to 2 GiB). The driver's default
// allocation page size is 32 MiB (PAGE_SIZE_32MB in
// gaudi3_set_fixed_properties) and users may choose the page size of an
// allocation (supports_user_set_page_size).
const (
	GAUDI3_HMMU_MAX_SMALL_PAGES_NUM = 2
	GAUDI3_HMMU_MAX_LARGE_PAGES_NUM = 1
	// HMMU_TLB_MAX_SUPPORTED_PAGE_TYPES is how many page sizes may be
	// active at once.
	HMMU_TLB_MAX_SUPPORTED_PAGE_TYPES = 3

	GAUDI3_HMMU_VALID_SMALL_PAGES_MASK = 32<<20 | 64<<20
	GAUDI3_HMMU_VALID_LARGE_PAGES_MASK = 256<<20 | 512<<20 | 1<<30 | 2<<30
	GAUDI3_HMMU_VALID_PAGES_MASK       = GAUDI3_HMMU_VALID_SMALL_PAGES_MASK | GAUDI3_HMMU_VALID_LARGE_PAGES_MASK

	// DefaultAllocPageSize is hw_ip_info's device_mem_alloc_default_page_size
	// unless the bring-up flag bfe_hmmu_default_page_size changes it.
	DefaultAllocPageSize = 32 << 20
)
