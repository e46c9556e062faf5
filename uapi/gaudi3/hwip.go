package gaudi3

// HWIPInfo holds the members of struct hl_info_hw_ip_info (INFO
// HW_IP_INFO) whose Gaudi3 values the out-of-tree driver's source fixes,
// for a production Gaudi3 or HL-338 loaded with the default module
// parameters. Members not listed come from the firmware, the board or the
// HBM found at run time (device_id and revision_id from PCI, DRAM size and
// base, card name, versions, module id, server type, NIC masks, TPC and
// decoder masks after binning). Each field is named after its C member.
//
// Sources: common/habanalabs_ioctl.c hw_ip_info() (which member comes from
// which property); gaudi3.c at 58be9646 (gaudi3_set_fixed_properties,
// gaudi3_init_pdma, gaudi3_validate_set_rotator_binning);
// common/habanalabs_drv.c at 4058b6e1 (set_driver_behavior_per_device, the
// ASIC_GAUDI3 and ASIC_GAUDI3_HL_338 defaults); gaudi3P.h at f9523baa
// (enum gaudi3_irq_num); include/gaudi3/gaudi3.h at 1d459ad5.
type HWIPInfo struct {
	// FirstAvailableInterruptID is GAUDI3_IRQ_NUM_USER_FIRST: the MSI-X
	// vectors before it are the event queue, two page-fault queues, 16
	// decoders, NIC_MAX_NUM_OF_PORTS NIC ports and GAUDI3_NUM_ETR trace
	// buffers. Derived from enum gaudi3_irq_num and the counts of
	// include/gaudi3/gaudi3.h at 1d459ad5 (the header version the driver
	// builds with may differ).
	FirstAvailableInterruptID uint16
	// NumberOfUserInterrupts is GAUDI3_NUM_USER_INTERRUPTS.
	NumberOfUserInterrupts uint16
	// TPCInterruptID is USHRT_MAX: Gaudi3 has no TPC interrupt.
	TPCInterruptID uint16
	// DeviceMemAllocDefaultPageSize is the default DRAM allocation page
	// size, 32 MiB.
	DeviceMemAllocDefaultPageSize uint64
	// PDMAUserOwnedChMask is pdma_ch_mask (0xFFFFFF, all 24 channels, by
	// default; 0xFFF with bring-up flags) without KDMA_CH_ID.
	PDMAUserOwnedChMask uint64
	// EDMAEnabledMask is edma_mask, 0xFF: all 8 EDMA engines.
	EDMAEnabledMask uint32
	// MMEEnabledMask is mme_mask, 0xFF.
	MMEEnabledMask uint32
	// SchedArcEnabledMask is sched_arc_mask, 0xFFFF.
	SchedArcEnabledMask uint32
	// RotatorEnabledMask is rotator_mask (0xFF) with the last rotator of
	// each die left out, as gaudi3_validate_set_rotator_binning always
	// does: 0x77.
	RotatorEnabledMask uint32
	// SRAMSize is 0: the defaults set cache_enable, and hw_ip_info reports
	// no SRAM when the SRAM serves as a cache.
	SRAMSize uint32
	// SecurityEnabled is 0: is_asic_secured is false for every Gaudi3
	// asic type.
	SecurityEnabled uint8
}

// DefaultHWIPInfo is what the out-of-tree driver reports on a production
// Gaudi3 with default module parameters, for the members HWIPInfo lists.
var DefaultHWIPInfo = HWIPInfo{
	FirstAvailableInterruptID:     3 + NUMBER_OF_DEC + NIC_MAX_NUM_OF_PORTS + GAUDI3_NUM_ETR,
	NumberOfUserInterrupts:        GAUDI3_NUM_USER_INTERRUPTS,
	TPCInterruptID:                0xFFFF,
	DeviceMemAllocDefaultPageSize: DefaultAllocPageSize,
	PDMAUserOwnedChMask:           PDMAUserOwned(DefaultPDMAChMask),
	EDMAEnabledMask:               0xFF,
	MMEEnabledMask:                0xFF,
	SchedArcEnabledMask:           0xFFFF,
	RotatorEnabledMask:            0x77,
	SRAMSize:                      0,
	SecurityEnabled:               0,
}

// Default PDMA channel masks (common/habanalabs_drv.c at 4058b6e1): all 24
// channels on a production Gaudi3, and the bring-up flag bfe_pdma_ch_mask's
// default, the 12 channels of die 0, when bringup_flags_enable is set.
const (
	DefaultPDMAChMask        = 0xFFFFFF
	DefaultBringUpPDMAChMask = 0xFFF
)

// PDMAUserOwned returns the pdma_user_owned_ch_mask the driver reports for
// the enabled PDMA channel mask chMask: every enabled channel but
// KDMA_CH_ID (gaudi3_init_pdma).
func PDMAUserOwned(chMask uint64) uint64 {
	return chMask & (1<<NUM_OF_PDMA_CH - 1) &^ (1 << KDMA_CH_ID)
}

// PDMAChannelEngine returns the engine id of PDMA channel ch (bit ch of
// pdma_user_owned_ch_mask), from 0 to NUM_OF_PDMA_CH-1.
func PDMAChannelEngine(ch int) EngineID {
	return GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0 + EngineID(ch)
}
