package device

import (
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Queries only Intel's out-of-tree driver serves (INFO ops 19, 20, 39, 41,
// 42 and 255 and the NIC ioctl; uapi/hl/oot.go). On the kernel's driver
// each fails with an error matching ioctl.ErrNotSupported; the driver is
// probed for that (DriverInfo), never assumed.

// ErrNoNIC reports a NIC request on a device whose NIC ports the driver
// did not initialize (none enabled, or the NIC driver not loaded): the
// out-of-tree driver answers EFAULT then (hl_cn_control,
// hl_cn_get_port_status), which the library's own valid buffers cannot
// otherwise cause. The errors keep the errno too.
var ErrNoNIC = errors.New("NIC ports not initialized")

// ModuleParams are the values the out-of-tree driver's module parameters
// took (INFO MODULE_PARAMS).
type ModuleParams struct {
	TPCMask                   uint64
	GaudiHugePageOptimization bool
	TimeoutLocked             time.Duration // CS timeout
	ResetOnLockup             bool
	PLDM                      bool
	MMUEnable                 bool
	ClockGating               uint64 // clock_gating_ext<<32 | clock_gating
	MMEEnable                 bool
	NICPortsMask              uint32
	NICLanesPerPort           uint32
	DRAMEnable                bool
	CPUEnable                 bool
	ResetPCILink              bool
	ConfigPLL                 bool
	CPUQueuesEnable           bool
	FWLoading                 uint64 // fw_loading_ext<<32 | fw_loading: the firmware components
	Heartbeat                 bool
	AXIDrain                  uint32
	SecurityEnable            bool
	SRAMScramblerEnable       bool
	DRAMScramblerEnable       bool
	CacheEnabled              bool
	HBMECCEnable              bool
	CompatibilityMode         bool
	HardResetOnFWEvents       bool
	DecoderMask               uint32
	RotatorMask               uint32
	DRAMPageScrub             bool
}

// ModuleParams returns the driver's module parameters. It is served in
// every device state.
func (d *Device) ModuleParams() (ModuleParams, error) {
	r, err := infoStruct[hl.InfoModuleParams](d, hl.HL_INFO_MODULE_PARAMS, nil)
	if err != nil {
		return ModuleParams{}, d.notOnThisDriver("module parameters", err)
	}
	return ModuleParams{
		TPCMask:                   r.TPCMask,
		GaudiHugePageOptimization: r.GaudiHugePageOptimization != 0,
		TimeoutLocked:             time.Duration(r.TimeoutLocked) * time.Second,
		ResetOnLockup:             r.ResetOnLockup != 0,
		PLDM:                      r.PLDM != 0,
		MMUEnable:                 r.MMUEnable != 0,
		ClockGating:               uint64(r.ClockGatingExt)<<32 | uint64(r.ClockGating),
		MMEEnable:                 r.MMEEnable != 0,
		NICPortsMask:              r.NICPortsMask,
		NICLanesPerPort:           r.NICLanesPerPort,
		DRAMEnable:                r.DRAMEnable != 0,
		CPUEnable:                 r.CPUEnable != 0,
		ResetPCILink:              r.ResetPCILink != 0,
		ConfigPLL:                 r.ConfigPLL != 0,
		CPUQueuesEnable:           r.CPUQueuesEnable != 0,
		FWLoading:                 uint64(r.FWLoadingExt)<<32 | uint64(r.FWLoading),
		Heartbeat:                 r.Heartbeat != 0,
		AXIDrain:                  r.AXIDrain,
		SecurityEnable:            r.SecurityEnable != 0,
		SRAMScramblerEnable:       r.SRAMScramblerEnable != 0,
		DRAMScramblerEnable:       r.DRAMScramblerEnable != 0,
		CacheEnabled:              r.CacheEnabled != 0,
		HBMECCEnable:              r.HBMECCEnable != 0,
		CompatibilityMode:         r.CompatibilityMode != 0,
		HardResetOnFWEvents:       r.HardResetOnFWEvents != 0,
		DecoderMask:               r.DecoderMask,
		RotatorMask:               r.RotatorMask,
		DRAMPageScrub:             r.DRAMPageScrub != 0,
	}, nil
}

// TimeSyncDie is TimeSync for one die of a multi-die device (Gaudi3 has
// two; a single-die device has die 0 only, another die is EINVAL). It
// needs an operational device.
func (d *Device) TimeSyncDie(die uint32) (TimeSync, error) {
	r := hl.InfoTimeSyncPerDie{DieIndex: die}
	err := infoInOut(d, hl.HL_INFO_TIME_SYNC_PER_DIE, &r)
	if err != nil {
		return TimeSync{}, d.notOnThisDriver("per-die time sync", err)
	}
	return TimeSync{Device: r.DeviceTime, Host: time.Duration(r.HostTime), TSC: r.TSCTime}, nil
}

// ReportMemoryConsumption tells the driver, which passes it to the
// firmware, how much device memory the program uses and when it measured
// it (INFO MEMORY_CONSUMPTION). used may not exceed the device memory
// allocated on the device (EINVAL otherwise). It needs an operational
// device.
func (d *Device) ReportMemoryConsumption(used uint64, at time.Time) error {
	r := hl.InfoMemoryConsumption{UsedMem: used, TimestampSec: uint64(max(at.Unix(), 0))}
	return d.notOnThisDriver("memory consumption report", infoInOut(d, hl.HL_INFO_MEMORY_CONSUMPTION, &r))
}

// LinkQuality is a NIC link's quality (hl.HL_LINK_QUAL_*).
type LinkQuality uint8

// LinkState is a NIC port's state (INFO HABANA_LINK_STATE).
type LinkState struct {
	Up       bool
	PortOpen bool
	Quality  LinkQuality
}

// LinkState returns the state of NIC port port. A device whose NIC is not
// initialized answers an error matching ErrNoNIC. It needs an operational
// device.
func (d *Device) LinkState(port uint32) (LinkState, error) {
	r, err := infoStruct[hl.InfoHabanaLinkState](d, hl.HL_INFO_HABANA_LINK_STATE, func(a *hl.InfoArgs) {
		a.SetHabanaLinkID(port)
	})
	if err != nil {
		return LinkState{}, d.nicError(fmt.Sprintf("link state of port %d", port), err)
	}
	return LinkState{Up: r.Up != 0, PortOpen: r.PortOpen != 0, Quality: LinkQuality(r.LinkQual)}, nil
}

// NICAppParams is what NIC GET_USER_APP_PARAMS reports for a port.
type NICAppParams struct {
	MaxQPs, AllocatedQPs, MaxAllocatedQPIndex uint32
	MaxCQSize                                 uint32
	Advanced                                  bool
	MaxCQs, MaxDBFifos, MaxEncaps             uint8
	SpeedMbps                                 uint32
	MacroIndex, PhysPortIndex                 uint8
}

// NICAppParams returns the NIC parameters of a port (the NIC ioctl's
// GET_USER_APP_PARAMS), on a compute node. A device whose NIC is not
// initialized answers an error matching ErrNoNIC; the kernel's driver,
// which has no NIC ioctl, one matching ioctl.ErrNotSupported.
func (d *Device) NICAppParams(port uint32) (NICAppParams, error) {
	in := hl.NICGetUserAppParamsIn{Port: port}
	var out hl.NICGetUserAppParamsOut
	a := hl.NICArgs{Op: hl.HL_NIC_OP_GET_USER_APP_PARAMS}
	if err := d.io.NIC(&a, structBytes(&in), structBytes(&out)); err != nil {
		return NICAppParams{}, d.nicError(fmt.Sprintf("NIC parameters of port %d", port), err)
	}
	return NICAppParams{
		MaxQPs: out.MaxNumOfQPs, AllocatedQPs: out.NumAllocatedQPs, MaxAllocatedQPIndex: out.MaxAllocatedQPIdx,
		MaxCQSize: out.MaxCQSize, Advanced: out.Advanced != 0,
		MaxCQs: out.MaxNumOfCQs, MaxDBFifos: out.MaxNumOfDBFifos, MaxEncaps: out.MaxNumOfEncaps,
		SpeedMbps: out.Speed, MacroIndex: out.NICMacroIdx, PhysPortIndex: out.NICPhysPortIdx,
	}, nil
}

// nicError gives the EFAULT of a NIC request its meaning, and refusals of
// the kernel's driver theirs.
func (d *Device) nicError(what string, err error) error {
	if errors.Is(err, unix.EFAULT) {
		return fmt.Errorf("%s: %w (%w)", what, ErrNoNIC, err)
	}
	return d.notOnThisDriver(what, err)
}
