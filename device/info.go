package device

import (
	"errors"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Status is a device's state as INFO DEVICE_STATUS reports it.
type Status uint32

// The driver's device states (enum hl_device_status).
const (
	StatusOperational               Status = Status(hl.HL_DEVICE_STATUS_OPERATIONAL)
	StatusInReset                   Status = Status(hl.HL_DEVICE_STATUS_IN_RESET)
	StatusMalfunction               Status = Status(hl.HL_DEVICE_STATUS_MALFUNCTION)
	StatusNeedsReset                Status = Status(hl.HL_DEVICE_STATUS_NEEDS_RESET)
	StatusInDeviceCreation          Status = Status(hl.HL_DEVICE_STATUS_IN_DEVICE_CREATION)
	StatusInResetAfterDeviceRelease Status = Status(hl.HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE)
)

// String returns the driver's sysfs spelling, e.g. "operational".
func (s Status) String() string {
	switch s {
	case StatusOperational:
		return "operational"
	case StatusInReset:
		return "in reset"
	case StatusMalfunction:
		return "disabled"
	case StatusNeedsReset:
		return "needs reset"
	case StatusInDeviceCreation:
		return "in device creation"
	case StatusInResetAfterDeviceRelease:
		return "in reset after device release"
	}
	return "unknown"
}

// Status returns the device's state. It is served in every state.
func (d *Device) Status() (Status, error) {
	r, err := infoStruct[hl.InfoDeviceStatus](d, hl.HL_INFO_DEVICE_STATUS, nil)
	return Status(r.Status), err
}

// DRAMUsage is what INFO DRAM_USAGE reports.
type DRAMUsage struct {
	Free    uint64 // device DRAM not allocated by anyone, bytes
	Context uint64 // DRAM allocated by this compute context, bytes (0 on a control node)
}

// DRAMUsage returns free and allocated device memory.
func (d *Device) DRAMUsage() (DRAMUsage, error) {
	r, err := infoStruct[hl.InfoDRAMUsage](d, hl.HL_INFO_DRAM_USAGE, nil)
	return DRAMUsage{Free: r.DRAMFreeMem, Context: r.CtxDRAMMem}, err
}

// Idle is what INFO HW_IDLE reports.
type Idle struct {
	Idle        bool
	BusyEngines [4]uint64 // bitmask of busy engines, by the ASIC's engine ids
}

// HWIdle reports whether every engine is idle. It needs an operational
// device.
func (d *Device) HWIdle() (Idle, error) {
	r, err := infoStruct[hl.InfoHWIdle](d, hl.HL_INFO_HW_IDLE, nil)
	return Idle{Idle: r.IsIdle != 0, BusyEngines: r.BusyEnginesMaskExt}, err
}

// Utilization returns the device's utilization in percent over the last
// period, which the driver accepts from 100 ms to 1 s.
func (d *Device) Utilization(period time.Duration) (int, error) {
	r, err := infoStruct[hl.InfoDeviceUtilization](d, hl.HL_INFO_DEVICE_UTILIZATION, func(a *hl.InfoArgs) {
		a.SetPeriodMs(uint32(period.Milliseconds()))
	})
	return int(r.Utilization), err
}

// Clock is what INFO CLK_RATE reports, in MHz.
type Clock struct{ CurrentMHz, MaxMHz uint32 }

// ClockRate returns the current and maximum clock.
func (d *Device) ClockRate() (Clock, error) {
	r, err := infoStruct[hl.InfoClkRate](d, hl.HL_INFO_CLK_RATE, nil)
	return Clock{CurrentMHz: r.CurClkRateMhz, MaxMHz: r.MaxClkRateMhz}, err
}

// ResetCount is what INFO RESET_COUNT reports.
type ResetCount struct{ Hard, Soft uint32 }

// ResetCount returns how many hard and soft (compute) resets the device had.
func (d *Device) ResetCount() (ResetCount, error) {
	r, err := infoStruct[hl.InfoResetCount](d, hl.HL_INFO_RESET_COUNT, nil)
	return ResetCount{Hard: r.HardResetCnt, Soft: r.SoftResetCnt}, err
}

// TimeSync pairs a device timestamp with host clocks read at the same
// moment (INFO TIME_SYNC).
type TimeSync struct {
	Device uint64        // device time counter
	Host   time.Duration // host CLOCK_MONOTONIC_RAW
	TSC    uint64        // host time-stamp counter
}

// TimeSync reads the device clock and the host clocks together.
func (d *Device) TimeSync() (TimeSync, error) {
	r, err := infoStruct[hl.InfoTimeSync](d, hl.HL_INFO_TIME_SYNC, nil)
	return TimeSync{Device: r.DeviceTime, Host: time.Duration(r.HostTime), TSC: r.TscTime}, err
}

// CSCounters counts dropped command submissions by cause, for the whole
// device and for this context (INFO CS_COUNTERS).
type CSCounters struct {
	OutOfMemory, Parsing, QueueFull, DeviceInReset, MaxInFlight, Validation DropCount
}

// DropCount is one drop counter.
type DropCount struct{ Total, Context uint64 }

// CSCounters returns the submission drop counters.
func (d *Device) CSCounters() (CSCounters, error) {
	r, err := infoStruct[hl.InfoCSCounters](d, hl.HL_INFO_CS_COUNTERS, nil)
	return CSCounters{
		OutOfMemory:   DropCount{r.TotalOutOfMemDropCnt, r.CtxOutOfMemDropCnt},
		Parsing:       DropCount{r.TotalParsingDropCnt, r.CtxParsingDropCnt},
		QueueFull:     DropCount{r.TotalQueueFullDropCnt, r.CtxQueueFullDropCnt},
		DeviceInReset: DropCount{r.TotalDeviceInResetDropCnt, r.CtxDeviceInResetDropCnt},
		MaxInFlight:   DropCount{r.TotalMaxCSInFlightDropCnt, r.CtxMaxCSInFlightDropCnt},
		Validation:    DropCount{r.TotalValidationDropCnt, r.CtxValidationDropCnt},
	}, err
}

// PCICounters is what INFO PCI_COUNTERS reports.
type PCICounters struct{ RX, TX, Replays uint64 }

// PCICounters returns PCIe throughput and replay counters from firmware.
func (d *Device) PCICounters() (PCICounters, error) {
	r, err := infoStruct[hl.InfoPCICounters](d, hl.HL_INFO_PCI_COUNTERS, nil)
	return PCICounters{RX: r.RxThroughput, TX: r.TxThroughput, Replays: r.ReplayCnt}, err
}

// Throttle is what INFO CLK_THROTTLE_REASON reports: a bitmask of
// hl.HL_CLK_THROTTLE_* reasons and, per throttling type, when it began and
// how long it lasted.
type Throttle struct {
	Reasons  uint32
	Since    [hl.HL_CLK_THROTTLE_TYPE_MAX]time.Time
	Duration [hl.HL_CLK_THROTTLE_TYPE_MAX]time.Duration
}

// ClockThrottle returns why and since when the clock is throttled.
func (d *Device) ClockThrottle() (Throttle, error) {
	r, err := infoStruct[hl.InfoClkThrottle](d, hl.HL_INFO_CLK_THROTTLE_REASON, nil)
	t := Throttle{Reasons: r.ClkThrottlingReason}
	for i := range t.Since {
		if r.ClkThrottlingTimestampUs[i] != 0 {
			t.Since[i] = time.UnixMicro(int64(r.ClkThrottlingTimestampUs[i]))
		}
		t.Duration[i] = time.Duration(r.ClkThrottlingDurationNs[i])
	}
	return t, err
}

// SyncManager is what INFO SYNC_MANAGER reports for one dcore: the first
// sync object, monitor and completion queue users may take.
type SyncManager struct{ FirstSyncObject, FirstMonitor, FirstCQ uint32 }

// SyncManager returns the user-available sync resources of a dcore.
func (d *Device) SyncManager(dcore uint32) (SyncManager, error) {
	r, err := infoStruct[hl.InfoSyncManager](d, hl.HL_INFO_SYNC_MANAGER, func(a *hl.InfoArgs) { a.SetDcoreID(dcore) })
	return SyncManager{r.FirstAvailableSyncObject, r.FirstAvailableMonitor, r.FirstAvailableCQ}, err
}

// TotalEnergy returns the energy the device consumed, as firmware counts it.
func (d *Device) TotalEnergy() (uint64, error) {
	r, err := infoStruct[hl.InfoEnergy](d, hl.HL_INFO_TOTAL_ENERGY, nil)
	return r.TotalEnergyConsumption, err
}

// Power returns the device's current power draw, as firmware reports it.
func (d *Device) Power() (uint64, error) {
	r, err := infoStruct[hl.PowerInfo](d, hl.HL_INFO_POWER, nil)
	return r.Power, err
}

// PLLFrequency returns the four output frequencies of a PLL, by the ASIC's
// PLL index (hl.GAUDI2_*_PLL and so on).
func (d *Device) PLLFrequency(index uint32) ([4]uint16, error) {
	r, err := infoStruct[hl.PLLFrequencyInfo](d, hl.HL_INFO_PLL_FREQUENCY, func(a *hl.InfoArgs) { a.SetPLLIndex(index) })
	return r.Output, err
}

// OpenStats is what INFO OPEN_STATS reports.
type OpenStats struct {
	Opens            uint64        // compute opens since the driver loaded
	LastSession      time.Duration // how long the previous compute session lasted
	ComputeActive    bool          // a process owns the device now
	ComputeInRelease bool          // the previous owner is still being released
}

// OpenStats returns the device's open counters.
func (d *Device) OpenStats() (OpenStats, error) {
	r, err := infoStruct[hl.OpenStatsInfo](d, hl.HL_INFO_OPEN_STATS, nil)
	return OpenStats{
		Opens:            r.OpenCounter,
		LastSession:      time.Duration(r.LastOpenPeriodMs) * time.Millisecond,
		ComputeActive:    r.IsComputeCtxActive != 0,
		ComputeInRelease: r.ComputeCtxInRelease != 0,
	}, err
}

// DRAMPendingRows returns how many DRAM rows wait to be replaced.
func (d *Device) DRAMPendingRows() (uint32, error) {
	r, err := infoStruct[uint32](d, hl.HL_INFO_DRAM_PENDING_ROWS, nil)
	return r, err
}

// DRAMReplacedRows returns the firmware's record of replaced DRAM rows, as
// raw bytes (struct cpucp_hbm_row_replaced_rows_info of the firmware
// interface, which the uapi does not define).
func (d *Device) DRAMReplacedRows() ([]byte, error) {
	r, err := infoStruct[[264]byte](d, hl.HL_INFO_DRAM_REPLACED_ROWS, nil)
	return r[:], err
}

// DevMemAllocPageSizes returns the bitmask of page orders ALLOC accepts.
func (d *Device) DevMemAllocPageSizes() (uint64, error) {
	r, err := infoStruct[hl.InfoDevMemallocPageSizes](d, hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, nil)
	return r.PageOrderBitmask, err
}

// HWEvents returns the count of each hardware event id since the last reset,
// or since the driver loaded when aggregate is set.
func (d *Device) HWEvents(aggregate bool) ([]uint32, error) {
	op := uint32(hl.HL_INFO_HW_EVENTS)
	if aggregate {
		op = hl.HL_INFO_HW_EVENTS_AGGREGATE
	}
	counts := make([]uint32, d.hw.NumEvents)
	if len(counts) == 0 {
		return nil, nil
	}
	err := d.infoSlice(op, nil, counts)
	return counts, err
}

// EngineStatus returns the driver's text dump of every engine's state: the
// tables of the ASIC's is_device_idle (on Gaudi3, the PDMA groups, PDMA
// dup engines, EDMAs, TPCs, MMEs, rotators, decoders and scheduler ARC dup
// engines). The driver stores each string of the dump followed by its NUL
// (hl_engine_data_sprintf); the text returned is those strings joined.
func (d *Device) EngineStatus() (string, error) {
	buf := make([]byte, 64<<10)
	var a hl.InfoArgs
	if err := d.io.Info(hl.HL_INFO_ENGINE_STATUS, &a, buf); err != nil {
		return "", err
	}
	n := min(int(a.UserBufferActualSize()), len(buf))
	return strings.ReplaceAll(string(buf[:n]), "\x00", ""), nil
}

// Mapping is one device MMU mapping that INFO USER_MAPPINGS reports.
type Mapping struct{ VA, Size uint64 }

// UserMappings returns the MMU mappings recorded with the last page fault,
// or none.
func (d *Device) UserMappings() ([]Mapping, error) {
	for n := 64; ; n *= 4 {
		ms := make([]hl.UserMapping, n)
		var a hl.InfoArgs
		err := infoSliceArgs(d, hl.HL_INFO_USER_MAPPINGS, &a, ms)
		if errors.Is(err, unix.ENOMEM) && n < 1<<20 {
			continue
		}
		if err != nil {
			return nil, err
		}
		out := make([]Mapping, 0, a.ArraySize())
		for _, m := range ms[:min(int(a.ArraySize()), n)] {
			out = append(out, Mapping{VA: m.DevVA, Size: m.Size})
		}
		return out, nil
	}
}
