package sim

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// infoOp serves one INFO op. anyState ops are answered in every device
// state; the others need an operational device and get EBUSY otherwise.
type infoOp struct {
	anyState bool
	serve    func(f *File, a *hl.InfoArgs) error
}

// infoOps is the INFO table of the 6.12 driver (_hl_info_ioctl in
// common/habanalabs_ioctl.c): the ops of its first switch are served in any
// state, those of its second only when the device is operational.
var infoOps map[uint32]infoOp

func init() {
	infoOps = map[uint32]infoOp{
		// First switch: any state.
		hl.HL_INFO_HW_IP_INFO:               {true, (*File).infoHWIPInfo},
		hl.HL_INFO_DEVICE_STATUS:            {true, (*File).infoDeviceStatus},
		hl.HL_INFO_RESET_COUNT:              {true, (*File).infoResetCount},
		hl.HL_INFO_HW_EVENTS:                {true, (*File).infoHWEvents},
		hl.HL_INFO_HW_EVENTS_AGGREGATE:      {true, (*File).infoHWEventsAggregate},
		hl.HL_INFO_CS_COUNTERS:              {true, (*File).infoCSCounters},
		hl.HL_INFO_CLK_THROTTLE_REASON:      {true, (*File).infoClkThrottle},
		hl.HL_INFO_SYNC_MANAGER:             {true, (*File).infoSyncManager},
		hl.HL_INFO_OPEN_STATS:               {true, (*File).infoOpenStats},
		hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME:   {true, (*File).infoLastErrOpenDevTime},
		hl.HL_INFO_CS_TIMEOUT_EVENT:         {true, (*File).infoCSTimeoutEvent},
		hl.HL_INFO_RAZWI_EVENT:              {true, (*File).infoRazwiEvent},
		hl.HL_INFO_UNDEFINED_OPCODE_EVENT:   {true, (*File).infoUndefinedOpcodeEvent},
		hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES: {true, (*File).infoDevMemAllocPageSizes},
		hl.HL_INFO_GET_EVENTS:               {true, (*File).infoGetEvents},
		hl.HL_INFO_PAGE_FAULT_EVENT:         {true, (*File).infoPageFaultEvent},
		hl.HL_INFO_USER_MAPPINGS:            {true, (*File).infoUserMappings},
		hl.HL_INFO_UNREGISTER_EVENTFD:       {true, (*File).infoUnregisterEventfd},
		hl.HL_INFO_HW_ERR_EVENT:             {true, (*File).infoHWErrEvent},
		hl.HL_INFO_FW_ERR_EVENT:             {true, (*File).infoFWErrEvent},
		hl.HL_INFO_USER_ENGINE_ERR_EVENT:    {true, (*File).infoEngineErrEvent},
		hl.HL_INFO_DRAM_USAGE:               {true, (*File).infoDRAMUsage},
		// Second switch: operational only.
		hl.HL_INFO_HW_IDLE:             {false, (*File).infoHWIdle},
		hl.HL_INFO_DEVICE_UTILIZATION:  {false, (*File).infoDeviceUtilization},
		hl.HL_INFO_CLK_RATE:            {false, (*File).infoClkRate},
		hl.HL_INFO_TIME_SYNC:           {false, (*File).infoTimeSync},
		hl.HL_INFO_PCI_COUNTERS:        {false, (*File).infoPCICounters},
		hl.HL_INFO_TOTAL_ENERGY:        {false, (*File).infoTotalEnergy},
		hl.HL_INFO_PLL_FREQUENCY:       {false, (*File).infoPLLFrequency},
		hl.HL_INFO_POWER:               {false, (*File).infoPower},
		hl.HL_INFO_DRAM_REPLACED_ROWS:  {false, (*File).infoDRAMReplacedRows},
		hl.HL_INFO_DRAM_PENDING_ROWS:   {false, (*File).infoDRAMPendingRows},
		hl.HL_INFO_SECURED_ATTESTATION: {false, (*File).infoSecuredAttestation},
		hl.HL_INFO_REGISTER_EVENTFD:    {false, (*File).infoRegisterEventfd},
		hl.HL_INFO_ENGINE_STATUS:       {false, (*File).infoEngineStatus},
		hl.HL_INFO_FW_GENERIC_REQ:      {false, (*File).infoFWGenericReq},
		hl.HL_INFO_DEV_SIGNED:          {false, (*File).infoDevSigned},
	}
}

// info runs INFO with the driver's order of checks: on the control node the
// three notifier ops are refused first (hl_info_ioctl_control), then the pad
// word, the ops served in any state, the operational check, and the rest;
// an unknown op gets EBUSY on a device that is not operational and EINVAL
// otherwise.
func (f *File) info(a *hl.InfoArgs) error {
	if f.control {
		switch a.Op {
		case hl.HL_INFO_GET_EVENTS, hl.HL_INFO_REGISTER_EVENTFD, hl.HL_INFO_UNREGISTER_EVENTFD:
			return unix.EOPNOTSUPP
		}
	}
	if a.Pad != 0 {
		return unix.EINVAL
	}
	op, known := f.dev.infoOpOf(a.Op)
	if known && op.anyState {
		return op.serve(f, a)
	}
	if !f.dev.State().operational() {
		return unix.EBUSY
	}
	if !known {
		return unix.EINVAL
	}
	return op.serve(f, a)
}

// checkOut is the check most ops start with: a buffer size and pointer.
func checkOut(a *hl.InfoArgs) error {
	if a.ReturnSize == 0 || a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	return nil
}

// copyResult copies min(return_size, len(b)) bytes of b to return_pointer,
// after checkOut.
func (f *File) copyResult(a *hl.InfoArgs, b []byte) error {
	if err := checkOut(a); err != nil {
		return err
	}
	return f.copyOut(a.ReturnPointer.Addr(), b[:min(int(a.ReturnSize), len(b))])
}

// hw_ip_info
func (f *File) infoHWIPInfo(a *hl.InfoArgs) error {
	r := f.dev.hwIPInfo()
	return f.copyResult(a, structBytes(&r))
}

// hwIPInfo computes HW_IP_INFO as hw_ip_info does.
func (d *Device) hwIPInfo() hl.InfoHWIPInfo {
	p := &d.prof
	var r hl.InfoHWIPInfo
	sramKMD := p.sramUserBase - p.sramBase
	dramKMD := p.dramUserBase - p.dramBase
	r.DeviceID = p.deviceID
	r.SRAMBaseAddress = p.sramUserBase
	if p.dramVirtual {
		r.DRAMBaseAddress = p.dmmuStart
	} else {
		r.DRAMBaseAddress = p.dramUserBase
	}
	r.TPCEnabledMask = uint8(p.tpcMask & 0xFF)
	r.TPCEnabledMaskExt = p.tpcMask
	r.SRAMSize = uint32(p.sramSize - sramKMD)
	r.DRAMSize = (p.dramSize - dramKMD) / p.dramPageSize * p.dramPageSize
	if r.DRAMSize > pageSize {
		r.DRAMEnabled = 1
	}
	r.DRAMPageSize = p.dramPageSize
	r.DeviceMemAllocDefaultPageSize = p.defaultAllocPageSize
	r.NumOfEvents = p.numEvents
	copy(r.CPUCPVersion[:], p.cpucpVersion)
	copy(r.CardName[:], p.cardName)
	r.CpldVersion = p.cpldVersion
	r.ModuleID = d.cfg.ModuleID // cpucp card_location
	r.PsocPCIPLLNr, r.PsocPCIPLLNf, r.PsocPCIPLLOd, r.PsocPCIPLLDivFactor = p.psocPCIPLL[0], p.psocPCIPLL[1], p.psocPCIPLL[2], p.psocPCIPLL[3]
	r.DecoderEnabledMask = p.decoderMask
	r.MMEMasterSlaveMode = p.mmeMasterSlave
	r.FirstAvailableInterruptID = p.firstUserInterrupt
	r.NumberOfUserInterrupts = p.userInterrupts
	r.TPCInterruptID = p.tpcInterruptID
	r.EDMAEnabledMask = p.edmaMask
	r.ServerType = p.serverType
	r.SecurityEnabled = p.securityEnabled
	r.RevisionID = d.cfg.Revision
	r.RotatorEnabledMask = p.rotatorMask
	r.EngineCoreInterruptRegAddr = p.engineCoreIRQAddr
	r.ReservedDRAMSize = dramKMD
	if d.oot() {
		d.ootHWIPInfo(&r)
	}
	return r
}

// pageSize is the kernel's PAGE_SIZE on x86_64, against which hw_ip_info
// decides dram_enabled.
const pageSize = 4096

// device_status_info
func (f *File) infoDeviceStatus(a *hl.InfoArgs) error {
	var r hl.InfoDeviceStatus
	r.Status = uint32(f.dev.State())
	return f.copyResult(a, structBytes(&r))
}

// get_reset_count
func (f *File) infoResetCount(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r := hl.InfoResetCount{HardResetCnt: d.hardResets, SoftResetCnt: d.computeResets}
	d.mu.Unlock()
	return f.copyResult(a, structBytes(&r))
}

// hw_events_info: one u32 counter per event id; HW_EVENTS counts since the
// last hard reset, HW_EVENTS_AGGREGATE since the driver loaded.
func (f *File) infoHWEvents(a *hl.InfoArgs) error          { return f.hwEvents(a, false) }
func (f *File) infoHWEventsAggregate(a *hl.InfoArgs) error { return f.hwEvents(a, true) }

func (f *File) hwEvents(a *hl.InfoArgs, aggregate bool) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	d.mu.Lock()
	src := d.hwEvents
	if aggregate {
		src = d.hwEventsAgg
	}
	b := append([]byte(nil), sliceBytes(src)...)
	d.mu.Unlock()
	return f.copyResult(a, b)
}

// dram_usage_info: the free memory is the device's; the context's memory is
// reported only to the file that holds the compute context.
func (f *File) infoDRAMUsage(a *hl.InfoArgs) error {
	d := f.dev
	p := &d.prof
	d.reap()
	var r hl.InfoDRAMUsage
	r.DRAMFreeMem = p.dramSize - (p.dramUserBase - p.dramBase) - uint64(d.dramUsed.Load())
	if f.ctx != nil {
		r.CtxDRAMMem = uint64(f.ctx.dramPhysMem.Load())
	}
	return f.copyResult(a, structBytes(&r))
}

// open_stats_info. The simulator releases a context at once, so
// compute_ctx_in_release is always 0.
func (f *File) infoOpenStats(a *hl.InfoArgs) error {
	d := f.dev
	d.reap()
	d.mu.Lock()
	var r hl.OpenStatsInfo
	r.OpenCounter = d.openCounter
	r.LastOpenPeriodMs = uint64(d.lastOpenPeriod.Milliseconds())
	if d.compute != nil {
		r.IsComputeCtxActive = 1
	}
	d.mu.Unlock()
	return f.copyResult(a, structBytes(&r))
}

// events_info: the notifier bits of this file, read and cleared; the buffer
// must hold a u64, and exactly 8 bytes are written.
func (f *File) infoGetEvents(a *hl.InfoArgs) error {
	if a.ReturnSize < 8 || a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	f.mu.Lock()
	ev := f.events
	f.events = 0
	f.mu.Unlock()
	return f.copyOut(a.ReturnPointer.Addr(), structBytes(&ev))
}

// cs_counters_info: device totals, and the context's own counters for the
// file that holds the compute context (the control node has none).
func (f *File) infoCSCounters(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	total := d.csDrops
	d.mu.Unlock()
	var ctx csCounters
	if !f.control {
		f.mu.Lock()
		ctx = f.csDrops
		f.mu.Unlock()
	}
	r := hl.InfoCSCounters{
		TotalOutOfMemDropCnt:      total[0],
		CtxOutOfMemDropCnt:        ctx[0],
		TotalParsingDropCnt:       total[1],
		CtxParsingDropCnt:         ctx[1],
		TotalQueueFullDropCnt:     total[2],
		CtxQueueFullDropCnt:       ctx[2],
		TotalDeviceInResetDropCnt: total[3],
		CtxDeviceInResetDropCnt:   ctx[3],
		TotalMaxCSInFlightDropCnt: total[4],
		CtxMaxCSInFlightDropCnt:   ctx[4],
		TotalValidationDropCnt:    total[5],
		CtxValidationDropCnt:      ctx[5],
	}
	return f.copyResult(a, structBytes(&r))
}

// clk_throttle_info: the current reasons and, for every reason seen since
// the driver loaded, its last start (µs) and duration (ns; still growing
// while it lasts).
func (f *File) infoClkThrottle(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	d.mu.Lock()
	t := d.throttle
	d.mu.Unlock()
	var r hl.InfoClkThrottle
	r.ClkThrottlingReason = t.current
	for i := range t.start {
		if t.aggregated&(1<<i) == 0 {
			continue
		}
		end := t.end[i]
		if end == 0 {
			end = monotonicNow()
		}
		r.ClkThrottlingTimestampUs[i] = uint64(t.start[i] / 1000)
		r.ClkThrottlingDurationNs[i] = uint64(end - t.start[i])
	}
	return f.copyResult(a, structBytes(&r))
}

// sync_manager_info: dcore_id must be below HL_MAX_DCORES.
func (f *File) infoSyncManager(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	dc := a.DcoreID()
	if dc >= hlMaxDcores {
		return unix.EINVAL
	}
	p := &f.dev.prof
	r := hl.InfoSyncManager{
		FirstAvailableSyncObject: p.firstSOB[dc],
		FirstAvailableMonitor:    p.firstMon[dc],
		FirstAvailableCQ:         p.firstCQ[dc],
	}
	return f.copyResult(a, structBytes(&r))
}

// last_err_open_dev_info: CLOCK_MONOTONIC of the last successful compute
// open, 0 before the first.
func (f *File) infoLastErrOpenDevTime(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r := hl.InfoLastErrOpenDevTime{Timestamp: d.lastOpenMono}
	d.mu.Unlock()
	return f.copyResult(a, structBytes(&r))
}

// dev_mem_alloc_page_sizes_info: neither ASIC sets
// dmmu.supported_pages_mask, so the bitmask is 0 (one page size only).
func (f *File) infoDevMemAllocPageSizes(a *hl.InfoArgs) error {
	r := hl.InfoDevMemallocPageSizes{PageOrderBitmask: f.dev.prof.pageOrderBitmask}
	return f.copyResult(a, structBytes(&r))
}
