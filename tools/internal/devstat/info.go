package devstat

import (
	"errors"
	"strconv"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Details is every INFO value Device does not already hold (hlinfo -v).
type Details struct {
	HWIP HWIP `json:"hw_ip"`
	// SyncManager is dcore 0's first user sync object, monitor and
	// completion queue.
	SyncManager *SyncManager `json:"sync_manager"`
	// PLL0OutputsMHz are the four outputs of PLL 0.
	PLL0OutputsMHz []uint16   `json:"pll0_outputs_mhz"`
	OpenStats      *OpenStats `json:"open_stats"`
	// DevMemAllocPageSizesMask has bit n set when 2^n-byte pages may be
	// allocated.
	DevMemAllocPageSizesMask *Hex `json:"dev_mem_alloc_page_sizes_mask"`
	// HWEvents counts each hardware event id the device raised since
	// the driver loaded (across resets); ids with no event are left out.
	HWEvents []EventCount `json:"hw_events"`
	// UserMappings is how many device MMU mappings INFO USER_MAPPINGS
	// recorded with the last page fault.
	UserMappings *int `json:"user_mappings"`
	// Events are the first error of each kind the driver recorded since
	// the last compute open.
	Events []Event `json:"events"`
	// OutOfTree holds what only Intel's out-of-tree driver reports; nil
	// on the kernel's driver.
	OutOfTree *OutOfTree `json:"out_of_tree"`
}

// OutOfTree is what Intel's out-of-tree driver reports beyond the kernel's:
// the named bytes of INFO HW_IP_INFO, INFO CONFIG_DRM_ACCEL_ENABLED and
// MODULE_PARAMS, and whether its NIC ports are up.
type OutOfTree struct {
	// DRMAccel says whether the driver was built with CONFIG_DRM_ACCEL
	// (its nodes are DRM accel devices) rather than making its own accel
	// class.
	DRMAccel *bool `json:"drm_accel"`
	// MMEMask and SchedArcMask are the enabled MMEs and scheduler ARCs.
	MMEMask      Hex `json:"mme_mask"`
	SchedArcMask Hex `json:"sched_arc_mask"`
	// NICPortsMask are the enabled NIC ports, NICPortsExternalMask those
	// used for scale-out.
	NICPortsMask         Hex `json:"nic_ports_mask"`
	NICPortsExternalMask Hex `json:"nic_ports_external_mask"`
	// NICInitialized is false when the driver answers that its NIC is not
	// initialized (INFO HABANA_LINK_STATE of port 0); nil when not asked
	// or another error came.
	NICInitialized *bool `json:"nic_initialized"`
	ODPSupported   bool  `json:"odp_supported"`
	// ModuleParams are the driver's module parameters.
	ModuleParams *ModuleParams `json:"module_params"`
}

// ModuleParams is part of INFO MODULE_PARAMS: the values the driver's
// module parameters took.
type ModuleParams struct {
	TimeoutLockedS      int64 `json:"timeout_locked_s"`
	ResetOnLockup       bool  `json:"reset_on_lockup"`
	MMUEnable           bool  `json:"mmu_enable"`
	MMEEnable           bool  `json:"mme_enable"`
	DRAMEnable          bool  `json:"dram_enable"`
	TPCMask             Hex   `json:"tpc_mask"`
	DecoderMask         Hex   `json:"decoder_mask"`
	RotatorMask         Hex   `json:"rotator_mask"`
	NICPortsMask        Hex   `json:"nic_ports_mask"`
	FWLoadingMask       Hex   `json:"fw_loading_mask"`
	Heartbeat           bool  `json:"heartbeat"`
	SecurityEnable      bool  `json:"security_enable"`
	HBMECCEnable        bool  `json:"hbm_ecc_enable"`
	HardResetOnFWEvents bool  `json:"hard_reset_on_fw_events"`
}

// HWIP is INFO HW_IP_INFO: the device's fixed properties.
type HWIP struct {
	SRAMBase                  Hex    `json:"sram_base"`
	SRAMSizeBytes             uint64 `json:"sram_size_bytes"`
	DRAMEnabled               bool   `json:"dram_enabled"`
	DRAMBase                  Hex    `json:"dram_base"`
	DRAMSizeBytes             uint64 `json:"dram_size_bytes"`
	DRAMPageSizeBytes         uint64 `json:"dram_page_size_bytes"`
	DRAMReservedBytes         uint64 `json:"dram_reserved_bytes"`
	DefaultAllocPageSizeBytes uint64 `json:"default_alloc_page_size_bytes"`
	NumEvents                 uint32 `json:"num_events"`
	FirstUserInterrupt        uint16 `json:"first_user_interrupt"`
	UserInterrupts            uint16 `json:"user_interrupts"`
	TPCMask                   Hex    `json:"tpc_mask"`
	DecoderMask               Hex    `json:"decoder_mask"`
	EDMAMask                  Hex    `json:"edma_mask"`
	CPLDVersion               uint32 `json:"cpld_version"`
	SecurityEnabled           bool   `json:"security_enabled"`
	ServerType                uint16 `json:"server_type"`
}

// SyncManager is INFO SYNC_MANAGER for one dcore.
type SyncManager struct {
	FirstSyncObject uint32 `json:"first_sync_object"`
	FirstMonitor    uint32 `json:"first_monitor"`
	FirstCQ         uint32 `json:"first_cq"`
}

// OpenStats is INFO OPEN_STATS.
type OpenStats struct {
	Opens            uint64 `json:"opens"`
	LastSessionNS    int64  `json:"last_session_ns"`
	ComputeActive    bool   `json:"compute_active"`
	ComputeInRelease bool   `json:"compute_in_release"`
}

// EventCount is how often one hardware event id occurred.
type EventCount struct {
	ID    int    `json:"id"`
	Count uint32 `json:"count"`
}

// Event is an error the driver recorded. Kind says which, and which of the
// optional fields it sets: "cs_timeout" (seq), "razwi" (addr, engines,
// flags), "page_fault" (addr, engine), "undefined_opcode" (engine, stream,
// cq_addr, cq_size), "hw_error" (event_id), "fw_error" (event_id,
// fw_error_type), "engine_error" (engine, count).
type Event struct {
	Kind string `json:"kind"`
	// TimeNS is the driver's CLOCK_MONOTONIC stamp.
	TimeNS      int64    `json:"time_ns"`
	Seq         *uint64  `json:"seq,omitempty"`
	Addr        *Hex     `json:"addr,omitempty"`
	Engines     []uint16 `json:"engines,omitempty"`
	Engine      *uint32  `json:"engine,omitempty"`
	Flags       *uint8   `json:"flags,omitempty"`
	Stream      *uint32  `json:"stream,omitempty"`
	CQAddr      *Hex     `json:"cq_addr,omitempty"`
	CQSize      *uint32  `json:"cq_size,omitempty"`
	EventID     *uint16  `json:"event_id,omitempty"`
	FWErrorType *uint32  `json:"fw_error_type,omitempty"`
	Count       *uint16  `json:"count,omitempty"`
}

// fillInfo reads the INFO values of an open control node into r. The
// values gohlml also reports (card name, module id, memory, power,
// energy, clocks, throttling, PCIe counters) are read through hd, gohlml's
// reading of the same node, so each has one implementation; the others
// straight from d.
func fillInfo(r *Device, d *device.Device, hd gohlml.Device, o *Options) {
	hw := d.HWIPInfo()
	// One rule with hlperf and cli: a device is simulated when the
	// device layer says so, served nodes (hlsim serve, hlsim run)
	// included.
	r.Simulated = r.Simulated || d.Simulated()
	r.ASIC = asicName(d.ASIC())
	r.PCIDeviceID = uint16(hw.DeviceID)
	r.PCIRevision = hw.Revision
	if r.ModuleID == nil {
		if m, err := hd.ModuleID(); err == nil {
			r.ModuleID = ptr(int(m))
		}
	}
	if n, err := hd.Name(); err == nil {
		r.CardName = ptr(n)
	}
	if hw.CPUCPVersion != "" {
		r.FirmwareVersion = ptr(hw.CPUCPVersion)
	}
	r.ABI = d.Encoding().String()
	info, err := d.DriverInfo()
	if err == nil && info.Driver != device.DriverUnknown {
		r.Driver = ptr(info.Driver.String())
	}
	// Every driver that speaks the DRM encoding (6.6 and later) has
	// MEMORY EXPORT_DMABUF_FD; for older ones a control node cannot tell.
	if d.Encoding() == ioctl.EncodingDRM {
		r.DMABufExport = ptr(true)
	}
	r.MemoryTotalBytes = ptr(hw.DRAMSize)
	r.MemoryPageSizeBytes = ptr(hw.DRAMPageSize)

	fail := func(q string, err error) { r.Errors = append(r.Errors, queryError(q, driverCause(err))) }
	if st, err := d.Status(); err == nil {
		r.Status = st.String()
	} else {
		fail("device_status", err)
	}
	if total, used, free, err := hd.MemoryInfo(); err == nil {
		r.MemoryTotalBytes, r.MemoryUsedBytes, r.MemoryFreeBytes = ptr(total), ptr(used), ptr(free)
	} else {
		fail("dram_usage", err)
	}
	if p, err := hd.PowerUsage(); err == nil {
		r.PowerMW = ptr(uint64(p))
	} else {
		fail("power", err)
	}
	if e, err := hd.EnergyConsumptionCounter(); err == nil {
		r.EnergyMJ = ptr(e)
	} else {
		fail("total_energy", err)
	}
	if u, err := d.Utilization(o.utilizationPeriod()); err == nil {
		r.UtilizationPercent = ptr(u)
	} else {
		fail("utilization", err)
	}
	// Utilization stays a query of its own: its window is
	// o.UtilizationPeriod, gohlml's is fixed (gohlml.UtilizationPeriod).
	if c, err := hd.SOCClockInfo(); err == nil {
		r.ClockMHz = ptr(uint32(c))
	} else {
		fail("clk_rate", err)
	}
	if c, err := hd.SOCClockMax(); err == nil {
		r.ClockMaxMHz = ptr(uint32(c))
	} else if r.ClockMHz != nil {
		fail("clk_rate", err)
	}
	if t, err := hd.ClockThrottleReasons(); err == nil {
		r.ClockThrottleReasons = throttleNames(uint32(t))
	} else {
		fail("clk_throttle_reason", err)
	}
	if rx, err := hd.PCIeRX(); err == nil {
		r.PCIe.RXKBps = ptr(uint64(rx))
	} else {
		fail("pci_counters", err)
	}
	if tx, err := hd.PCIeTX(); err == nil {
		r.PCIe.TXKBps = ptr(uint64(tx))
	} else if r.PCIe.RXKBps != nil {
		fail("pci_counters", err)
	}
	if n, err := hd.PCIReplayCounter(); err == nil {
		r.PCIe.Replays = ptr(uint64(n))
	} else if r.PCIe.RXKBps != nil {
		fail("pci_counters", err)
	}
	if c, err := d.ResetCount(); err == nil {
		r.Resets = &Resets{Hard: c.Hard, Soft: c.Soft}
	} else {
		fail("reset_count", err)
	}
	if c, err := d.CSCounters(); err == nil {
		r.CSDrops = &CSDrops{
			OutOfMemory: c.OutOfMemory.Total, Parsing: c.Parsing.Total, QueueFull: c.QueueFull.Total,
			DeviceInReset: c.DeviceInReset.Total, MaxInFlight: c.MaxInFlight.Total, Validation: c.Validation.Total,
		}
	} else {
		fail("cs_counters", err)
	}
	if n, err := d.DRAMPendingRows(); err == nil {
		r.DRAMPendingRows = ptr(n)
	} else {
		fail("dram_pending_rows", err)
	}
	if i, err := d.HWIdle(); err == nil {
		r.Idle = ptr(i.Idle)
		r.BusyEngineMask = make([]Hex, len(i.BusyEngines))
		for k, m := range i.BusyEngines {
			r.BusyEngineMask[k] = Hex(m)
		}
	} else {
		fail("hw_idle", err)
	}
	if s, err := d.OpenStats(); err == nil {
		r.ComputeActive = ptr(s.ComputeActive)
		if o.Details {
			r.Details = &Details{OpenStats: &OpenStats{
				Opens: s.Opens, LastSessionNS: s.LastSession.Nanoseconds(),
				ComputeActive: s.ComputeActive, ComputeInRelease: s.ComputeInRelease,
			}}
		}
	} else {
		fail("open_stats", err)
	}
	if o.Engines {
		if s, err := d.EngineStatus(); err == nil {
			r.EngineStatus = ptr(s)
		} else {
			fail("engine_status", err)
		}
	}
	if o.Details {
		if r.Details == nil {
			r.Details = &Details{}
		}
		fillDetails(r.Details, d, hw, fail)
		if info.Driver == device.DriverOutOfTree {
			r.Details.OutOfTree = outOfTree(d, hw, info, fail)
		}
	}
}

// driverCause returns the driver's error inside a gohlml error (whose
// text names gohlml's kind), so that hlinfo and hlexporter show the
// driver's message and errno; other errors as they are.
func driverCause(err error) error {
	if e, ok := errors.AsType[*gohlml.Error](err); ok {
		return e.Err
	}
	return err
}

// outOfTree reads what only the out-of-tree driver reports.
func outOfTree(d *device.Device, hw device.HWIPInfo, info device.DriverInfo, fail func(string, error)) *OutOfTree {
	x := &OutOfTree{
		DRMAccel: info.DRMAccel, MMEMask: Hex(hw.MMEMask), SchedArcMask: Hex(hw.SchedArcMask),
		NICPortsMask: Hex(hw.NICPortsMask), NICPortsExternalMask: Hex(hw.NICPortsExternalMask), ODPSupported: hw.ODPSupported,
	}
	switch _, err := d.LinkState(0); {
	case err == nil:
		x.NICInitialized = ptr(true)
	case errors.Is(err, device.ErrNoNIC):
		x.NICInitialized = ptr(false)
	default:
		fail("habana_link_state", err)
	}
	if p, err := d.ModuleParams(); err == nil {
		x.ModuleParams = &ModuleParams{
			TimeoutLockedS: int64(p.TimeoutLocked / time.Second), ResetOnLockup: p.ResetOnLockup, MMUEnable: p.MMUEnable,
			MMEEnable: p.MMEEnable, DRAMEnable: p.DRAMEnable, TPCMask: Hex(p.TPCMask), DecoderMask: Hex(p.DecoderMask),
			RotatorMask: Hex(p.RotatorMask), NICPortsMask: Hex(p.NICPortsMask), FWLoadingMask: Hex(p.FWLoading), Heartbeat: p.Heartbeat,
			SecurityEnable: p.SecurityEnable, HBMECCEnable: p.HBMECCEnable, HardResetOnFWEvents: p.HardResetOnFWEvents,
		}
	} else {
		fail("module_params", err)
	}
	return x
}

// throttleNames names the hl.HL_CLK_THROTTLE_* bits of mask; unknown bits
// are named by number ("bit5").
func throttleNames(mask uint32) []string {
	names := []string{}
	for bit := range 32 {
		if mask&(1<<bit) == 0 {
			continue
		}
		switch uint32(1) << bit {
		case hl.HL_CLK_THROTTLE_POWER:
			names = append(names, "power")
		case hl.HL_CLK_THROTTLE_THERMAL:
			names = append(names, "thermal")
		default:
			names = append(names, "bit"+strconv.Itoa(bit))
		}
	}
	return names
}

// fillDetails reads the INFO values only -v shows.
func fillDetails(x *Details, d *device.Device, hw device.HWIPInfo, fail func(string, error)) {
	x.HWIP = HWIP{
		SRAMBase: Hex(hw.SRAMBase), SRAMSizeBytes: hw.SRAMSize, DRAMEnabled: hw.DRAMEnabled, DRAMBase: Hex(hw.DRAMBase),
		DRAMSizeBytes: hw.DRAMSize, DRAMPageSizeBytes: hw.DRAMPageSize, DRAMReservedBytes: hw.DRAMReserved,
		DefaultAllocPageSizeBytes: hw.DefaultAllocPageSize, NumEvents: hw.NumEvents,
		FirstUserInterrupt: hw.FirstUserInterrupt, UserInterrupts: hw.UserInterrupts, TPCMask: Hex(hw.TPCMask),
		DecoderMask: Hex(hw.DecoderMask), EDMAMask: Hex(hw.EDMAMask), CPLDVersion: hw.CPLDVersion,
		SecurityEnabled: hw.SecurityEnabled, ServerType: hw.ServerType,
	}
	if s, err := d.SyncManager(0); err == nil {
		x.SyncManager = &SyncManager{FirstSyncObject: s.FirstSyncObject, FirstMonitor: s.FirstMonitor, FirstCQ: s.FirstCQ}
	} else {
		fail("sync_manager", err)
	}
	if f, err := d.PLLFrequency(0); err == nil {
		x.PLL0OutputsMHz = f[:]
	} else {
		fail("pll_frequency", err)
	}
	if m, err := d.DevMemAllocPageSizes(); err == nil {
		x.DevMemAllocPageSizesMask = ptr(Hex(m))
	} else {
		fail("dev_mem_alloc_page_sizes", err)
	}
	x.HWEvents = []EventCount{}
	if counts, err := d.HWEvents(true); err == nil {
		for id, c := range counts {
			if c != 0 {
				x.HWEvents = append(x.HWEvents, EventCount{ID: id, Count: c})
			}
		}
	} else {
		fail("hw_events_aggregate", err)
	}
	if m, err := d.UserMappings(); err == nil {
		x.UserMappings = ptr(len(m))
	} else {
		fail("user_mappings", err)
	}
	x.Events = []Event{}
	add := func(kind string, t time.Duration, ok bool, err error, set func(*Event)) {
		if err != nil {
			fail(kind+"_event", err)
			return
		}
		if ok {
			e := Event{Kind: kind, TimeNS: t.Nanoseconds()}
			set(&e)
			x.Events = append(x.Events, e)
		}
	}
	cst, ok, err := d.CSTimeoutEvent()
	add("cs_timeout", cst.Time, ok, err, func(e *Event) { e.Seq = ptr(cst.Seq) })
	rz, ok, err := d.RazwiEvent()
	add("razwi", rz.Time, ok, err, func(e *Event) {
		e.Addr, e.Engines, e.Flags = ptr(Hex(rz.Addr)), rz.Engines, ptr(rz.Flags)
	})
	pf, ok, err := d.PageFaultEvent()
	add("page_fault", pf.Time, ok, err, func(e *Event) { e.Addr, e.Engine = ptr(Hex(pf.Addr)), ptr(uint32(pf.Engine)) })
	uo, ok, err := d.UndefinedOpcodeEvent()
	add("undefined_opcode", uo.Time, ok, err, func(e *Event) {
		e.Engine, e.Stream, e.CQAddr, e.CQSize = ptr(uo.Engine), ptr(uo.Stream), ptr(Hex(uo.CQAddr)), ptr(uo.CQSize)
	})
	he, ok, err := d.HWErrEvent()
	add("hw_error", he.Time, ok, err, func(e *Event) { e.EventID = ptr(he.EventID) })
	fe, ok, err := d.FWErrEvent()
	add("fw_error", fe.Time, ok, err, func(e *Event) { e.EventID, e.FWErrorType = ptr(fe.EventID), ptr(uint32(fe.Type)) })
	ee, ok, err := d.EngineErrEvent()
	add("engine_error", ee.Time, ok, err, func(e *Event) { e.Engine, e.Count = ptr(uint32(ee.Engine)), ptr(ee.Count) })
}
