//go:build amd64 || arm64

package hl

import "structs"

// Out-of-tree driver additions.
//
// Intel's out-of-tree habanalabs driver, which most Gaudi2 and Gaudi3
// servers run, keeps the six core ioctls of the upstream driver byte for
// byte and adds what this file holds. The facts (numbers, names, layouts)
// come from its uapi header, include/uapi/drm/habanalabs_accel.h of
// HabanaAI/drivers.accel.habanalabs.kernel at commit
// 1646573d024143de16936b6b2b105e3e03f8e5da (driver 1.24.x); the MEMORY
// op's rules from drivers/accel/habanalabs/common/memory.c at e20162dd
// (map_device_va_from_dmabuf_fd). Nothing here is generated from or copied
// out of that header: the upstream header (linux 6.12) is what genuapi
// reads, and these declarations are written by hand, kept apart in this
// file. oot_test.go pins every size and offset; they were checked once
// against gcc's layout of the header's definitions during development.
//
// An upstream driver answers the requests below with EINVAL (an unknown
// INFO or MEMORY op, a DEBUG op) or ENOTTY (the NIC ioctl): probe, never
// assume.

// INFO ops the out-of-tree driver adds (upstream 6.12 has none of these
// numbers; 40, HL_INFO_DEV_SIGNED, exists in both).
const (
	HL_INFO_HABANA_LINK_STATE        = 19
	HL_INFO_HABANA_LINK_COUNTERS     = 20
	HL_INFO_TIME_SYNC_PER_DIE        = 39
	HL_INFO_MEMORY_CONSUMPTION       = 41
	HL_INFO_CONFIG_DRM_ACCEL_ENABLED = 42
	HL_INFO_MODULE_PARAMS            = 255
)

// HL_SOFT_RESET_STALL_AFTER_POLLING_MS is how long the out-of-tree driver
// stalls a soft reset after an INFO DEVICE_STATUS whose soft_reset_stall
// (upstream's pad) is not zero: the driver reads the caller's buffer
// before answering, so callers send it zeroed.
const HL_SOFT_RESET_STALL_AFTER_POLLING_MS = 30

// MEMORY additions.
const (
	// HL_MEM_OP_REG_DMABUF_FD registers a dma-buf by descriptor: the driver
	// attaches to it (peer to peer), maps its pages into the device's host
	// MMU range and answers the device address in out.device_virt_addr;
	// UNMAP of that address releases it. Marked experimental by the driver.
	HL_MEM_OP_REG_DMABUF_FD = 99
	// HL_MEM_ODP asks for on-demand paging of host memory.
	HL_MEM_ODP = 0x20
)

// HL_CS_FLAGS_FLUSH_HBW_WRITES_FSE flushes high-bandwidth writes through
// the fabric serialization register; blocking, and its sequence number is
// not valid.
const HL_CS_FLAGS_FLUSH_HBW_WRITES_FSE = 0x20000

// DEBUG ops the out-of-tree driver adds.
const (
	HL_DEBUG_OP_FETCH_TRACE          = 8
	HL_DEBUG_OP_DIO                  = 9
	HL_DEBUG_OP_READMEM              = 1024
	HL_DEBUG_OP_MEMCPY               = 1025
	HL_DEBUG_OP_SCHED_SUBMIT_BUF     = 1031
	HL_DEBUG_OP_READBLOCK            = 1032
	HL_DEBUG_ENABLE_ERR_INFO_CAPTURE = 1033
)

// Server types the out-of-tree driver adds (enum hl_server_type).
const (
	HL_SERVER_GAUDI3_HLS3_DEPRECATED                   ServerType = 6
	HL_SERVER_GAUDI3_HLS3_FULLSCALE_IN                 ServerType = 8
	HL_SERVER_GAUDI3_HLS3_FULLSCALE_OUT                ServerType = 9
	HL_SERVER_GAUDI3_HLS3_FULL_OAM_3PORTS_SCALE_OUT    ServerType = 10
	HL_SERVER_GAUDI3_HLS3_FULL_OAM_6PORTS_SCALE_OUT    ServerType = 11
	HL_SERVER_GAUDI3_HLS3_SINGLEPORT_OAM_FULLSCALE_OUT ServerType = 12
	HL_SERVER_GAUDI3_HL338                             ServerType = 13
	HL_SERVER_GAUDI2_HL288                             ServerType = 14
	HL_SERVER_GAUDI3_RACK                              ServerType = 15
	HL_SERVER_GAUDI3_RACK_WHITEBOX                     ServerType = 16
)

// Habana link (NIC port) information.
const (
	HL_LINK_QUAL_POOR       = 0
	HL_LINK_QUAL_GOOD       = 1
	HL_LINK_QUAL_EXCELLENT  = 2
	HABANA_LINK_CNT_MAX_NUM = 256
	HABANA_LINK_STR_LEN     = 32
)

// The NIC ioctl.
const (
	// HL_IOCTL_NIC is the NIC ioctl's number; HL_COMMAND_END becomes 0x47.
	HL_IOCTL_NIC = 0x06
	// HL_COMMAND_END_OOT is the out-of-tree header's HL_COMMAND_END
	// (HabanaAI/drivers.accel.habanalabs.kernel,
	// include/uapi/drm/habanalabs_accel.h): 0x47, one past the NIC ioctl.
	// HL_COMMAND_END (zconst.go, generated from the 6.12 header) keeps
	// upstream's 0x46 (70), which has no NIC ioctl; a driver's ioctl
	// table is indexed by nr - HL_COMMAND_START up to its own END.
	HL_COMMAND_END_OOT = HL_COMMAND_END + 1
	// DRM_IOCTL_HL_NIC is DRM_IOWR(DRM_COMMAND_BASE + HL_IOCTL_NIC, struct
	// hl_nic_args). There is no legacy 'H' encoding of it.
	DRM_IOCTL_HL_NIC = 0xC0206446
)

// NIC ops (HL_NIC_OP_*).
const (
	HL_NIC_OP_ALLOC_CONN              = 0
	HL_NIC_OP_SET_REQ_CONN_CTX        = 1
	HL_NIC_OP_SET_RES_CONN_CTX        = 2
	HL_NIC_OP_DESTROY_CONN            = 3
	HL_NIC_OP_CQ_CREATE               = 4
	HL_NIC_OP_CQ_DESTROY              = 5
	HL_NIC_OP_CQ_WAIT                 = 6
	HL_NIC_OP_CQ_POLL                 = 7
	HL_NIC_OP_CQ_UPDATE_CONSUMED_CQES = 8
	HL_NIC_OP_USER_WQ_SET             = 9
	HL_NIC_OP_USER_WQ_UNSET           = 10
	HL_NIC_OP_USER_CQ_SET             = 11
	HL_NIC_OP_USER_CQ_UNSET           = 12
	HL_NIC_OP_USER_CQ_UPDATE_CI       = 13
	HL_NIC_OP_ALLOC_USER_CQ_ID        = 14
	HL_NIC_OP_SET_USER_APP_PARAMS     = 15
	HL_NIC_OP_GET_USER_APP_PARAMS     = 16
	HL_NIC_OP_ALLOC_USER_DB_FIFO      = 17
	HL_NIC_OP_USER_DB_FIFO_SET        = 18
	HL_NIC_OP_USER_DB_FIFO_UNSET      = 19
	HL_NIC_OP_EQ_POLL                 = 20
	HL_NIC_OP_USER_ENCAP_ALLOC        = 21
	HL_NIC_OP_USER_ENCAP_SET          = 22
	HL_NIC_OP_USER_ENCAP_UNSET        = 23
	HL_NIC_OP_USER_CCQ_SET            = 24
	HL_NIC_OP_USER_CCQ_UNSET          = 25
	HL_NIC_OP_USER_CQ_ID_SET          = 26
	HL_NIC_OP_USER_CQ_ID_UNSET        = 27
	HL_NIC_OP_ALLOC_COLL_CONN         = 28
	HL_NIC_OP_DUMP_QP                 = 29
)

// NICArgs mirrors struct hl_nic_args of the out-of-tree driver (32 bytes).
type NICArgs struct {
	_          structs.HostLayout
	InputPtr   Pointer
	OutputPtr  Pointer
	InputSize  uint32
	OutputSize uint32
	CtxID      uint32
	Op         uint32
}

// NICGetUserAppParamsIn mirrors struct hl_nic_get_user_app_params_in.
type NICGetUserAppParamsIn struct {
	_    structs.HostLayout
	Port uint32
	_    [4]byte
}

// NICGetUserAppParamsOut mirrors struct hl_nic_get_user_app_params_out.
type NICGetUserAppParamsOut struct {
	_                       structs.HostLayout
	MaxNumOfQPs             uint32
	NumAllocatedQPs         uint32
	MaxAllocatedQPIdx       uint32
	MaxCQSize               uint32
	Advanced                uint8
	MaxNumOfCQs             uint8
	MaxNumOfDBFifos         uint8
	MaxNumOfEncaps          uint8
	Speed                   uint32
	NICMacroIdx             uint8
	NICPhysPortIdx          uint8
	_                       [2]byte
	MaxNumOfScaleOutCollQPs uint32
	MaxNumOfCollQPs         uint32
	CollQPsOffset           uint32
	BaseScaleOutCollQPIdx   uint32
	BaseCollQPIdx           uint32
}

// InfoHabanaLinkState mirrors struct hl_info_habana_link_state.
type InfoHabanaLinkState struct {
	_        structs.HostLayout
	Up       uint8
	PortOpen uint8
	LinkQual uint8
	_        [5]byte
}

// InfoHabanaLinkCounters mirrors struct hl_info_habana_link_counters: the
// names and values are written at the two user addresses.
type InfoHabanaLinkCounters struct {
	_         structs.HostLayout
	StrBufPtr Pointer
	ValBufPtr Pointer
	NumOfStat uint32
	_         uint32
}

// InfoTimeSyncPerDie mirrors struct hl_info_time_sync_per_die.
type InfoTimeSyncPerDie struct {
	_          structs.HostLayout
	DieIndex   uint32
	_          uint32
	DeviceTime uint64
	HostTime   uint64
	TSCTime    uint64
}

// InfoMemoryConsumption mirrors struct hl_info_memory_consumption, an
// input: the caller tells the driver its memory use.
type InfoMemoryConsumption struct {
	_            structs.HostLayout
	UsedMem      uint64
	TimestampSec uint64
}

// InfoModuleParams mirrors struct hl_info_module_params (128 bytes): the
// values the driver's module parameters took.
type InfoModuleParams struct {
	_                         structs.HostLayout
	TPCMask                   uint64
	GaudiHugePageOptimization uint32
	TimeoutLocked             uint32
	ResetOnLockup             uint32
	PLDM                      uint32
	MMUEnable                 uint32
	ClockGating               uint32
	MMEEnable                 uint32
	NICPortsMask              uint32
	DRAMEnable                uint32
	CPUEnable                 uint32
	ResetPCILink              uint32
	ConfigPLL                 uint32
	CPUQueuesEnable           uint32
	FWLoading                 uint32
	Heartbeat                 uint32
	AXIDrain                  uint32
	SecurityEnable            uint32
	SRAMScramblerEnable       uint32
	DRAMScramblerEnable       uint32
	CacheEnabled              uint32
	HBMECCEnable              uint32
	CompatibilityMode         uint32
	HardResetOnFWEvents       uint32
	DecoderMask               uint32
	RotatorMask               uint32
	DRAMPageScrub             uint32
	ClockGatingExt            uint32
	FWLoadingExt              uint32
	NICLanesPerPort           uint32
	_                         uint32
}

// MemRegDmabufFDArgs mirrors union hl_mem_args of the out-of-tree driver
// for HL_MEM_OP_REG_DMABUF_FD: in.reg_dmabuf_fd is {fd, length} over the
// first 16 bytes; out.device_virt_addr is the answer. It is a view (see
// Pointer), without user addresses.
type MemRegDmabufFDArgs struct {
	_      structs.HostLayout
	FD     uint64
	Length uint64
	_      [8]byte
	Op     uint32
	Flags  uint32
	CtxID  uint32
	_      [4]byte
}

// Out returns the answer, which the driver writes over the arguments.
func (a *MemRegDmabufFDArgs) Out() *MemOut { return memOutOf(a) }

// The out-of-tree driver names bytes of struct hl_info_hw_ip_info that
// upstream calls reserved; these read them under its names.

// InterposerVersion is hw_ip_info.interposer_version (upstream Reserved1).
func (h *InfoHWIPInfo) InterposerVersion() uint8 { return h.Reserved1 }

// SubstrateVersion is hw_ip_info.substrate_version (upstream Reserved2).
func (h *InfoHWIPInfo) SubstrateVersion() uint8 { return h.Reserved2 }

// PDMAUserOwnedChMask is hw_ip_info.pdma_user_owned_ch_mask (upstream
// Reserved3): the Gaudi3 PDMA channels the user may drive.
func (h *InfoHWIPInfo) PDMAUserOwnedChMask() uint64 { return h.Reserved3 }

// NICPortsMask is hw_ip_info.nic_ports_mask (upstream Reserved4).
func (h *InfoHWIPInfo) NICPortsMask() uint64 { return h.Reserved4 }

// NICPortsExternalMask is hw_ip_info.nic_ports_external_mask (upstream
// Reserved5).
func (h *InfoHWIPInfo) NICPortsExternalMask() uint64 { return h.Reserved5 }

// MMEEnabledMask is hw_ip_info.mme_enabled_mask (upstream Reserved6).
func (h *InfoHWIPInfo) MMEEnabledMask() uint32 { return h.Reserved6 }

// ODPSupported is hw_ip_info.odp_supported (upstream Reserved7).
func (h *InfoHWIPInfo) ODPSupported() bool { return h.Reserved7 != 0 }

// SchedArcEnabledMask is hw_ip_info.sched_arc_enabled_mask (upstream
// Reserved9).
func (h *InfoHWIPInfo) SchedArcEnabledMask() uint32 { return h.Reserved9 }

// SetHabanaLinkID sets hl_info_args.habana_link_id, a member of the union
// the other per-op u32 parameters share (the out-of-tree driver's name for
// it; upstream has no such member).
func (s *InfoArgs) SetHabanaLinkID(v uint32) { s.SetDcoreID(v) }

// SoftResetStall is hl_info_device_status.soft_reset_stall of the
// out-of-tree driver (upstream's pad): non-zero stalls soft reset.
func (s *InfoDeviceStatus) SoftResetStall() uint32 { return s.Pad }

// ComputeCtxHasMappedResources is hl_open_stats_info byte 18 of the
// out-of-tree driver (upstream padding).
func (s *OpenStatsInfo) ComputeCtxHasMappedResources() bool { return s.Pad[0] != 0 }
