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

// infoOps is the INFO table of the 6.12 driver (_hl_info_ioctl).
var infoOps map[uint32]infoOp

func init() {
	infoOps = map[uint32]infoOp{
		hl.HL_INFO_HW_IP_INFO:         {true, (*File).infoHWIPInfo},
		hl.HL_INFO_DEVICE_STATUS:      {true, (*File).infoDeviceStatus},
		hl.HL_INFO_RESET_COUNT:        {true, (*File).infoResetCount},
		hl.HL_INFO_DRAM_USAGE:         {true, (*File).infoDRAMUsage},
		hl.HL_INFO_OPEN_STATS:         {true, (*File).infoOpenStats},
		hl.HL_INFO_GET_EVENTS:         {true, (*File).infoGetEvents},
		hl.HL_INFO_UNREGISTER_EVENTFD: {true, (*File).infoUnregisterEventfd},
		hl.HL_INFO_REGISTER_EVENTFD:   {false, (*File).infoRegisterEventfd},
	}
}

// info runs INFO with the driver's order of checks: the pad word, then the
// ops served in any state, then the operational check, then the rest.
func (f *File) info(a *hl.InfoArgs) error {
	if a.Pad != 0 {
		return unix.EINVAL
	}
	if f.control {
		switch a.Op {
		case hl.HL_INFO_GET_EVENTS, hl.HL_INFO_REGISTER_EVENTFD, hl.HL_INFO_UNREGISTER_EVENTFD:
			return unix.EOPNOTSUPP
		}
	}
	op, known := infoOps[a.Op]
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

// copyResult copies min(return_size, len(b)) bytes of b to return_pointer,
// after the usual check that both are set.
func copyResult(a *hl.InfoArgs, b []byte) error {
	if a.ReturnSize == 0 || a.ReturnPointer == 0 {
		return unix.EINVAL
	}
	return copyOut(a.ReturnPointer, b[:min(int(a.ReturnSize), len(b))])
}

func (f *File) infoHWIPInfo(a *hl.InfoArgs) error {
	d := f.dev
	p := &d.prof
	var r hl.InfoHWIPInfo
	r.DeviceID = p.deviceID
	r.SRAMBaseAddress = p.sramUserBase
	if p.dramVirtual {
		r.DRAMBaseAddress = p.dmmuStart
	} else {
		r.DRAMBaseAddress = p.dramUserBase
	}
	r.TPCEnabledMask = uint8(p.tpcMask)
	r.TPCEnabledMaskExt = p.tpcMask
	r.SRAMSize = uint32(p.sramSize - (p.sramUserBase - p.sramBase))
	kmd := p.dramUserBase - p.dramBase
	r.DRAMSize = (p.dramSize - kmd) / p.dramPageSize * p.dramPageSize
	if r.DRAMSize > 4096 {
		r.DRAMEnabled = 1
	}
	r.DRAMPageSize = p.dramPageSize
	r.DeviceMemAllocDefaultPageSize = p.defaultAllocPageSize
	r.NumOfEvents = p.numEvents
	copy(r.CPUCPVersion[:], p.cpucpVersion)
	copy(r.CardName[:], p.cardName)
	r.CpldVersion = p.cpldVersion
	r.ModuleID = d.cfg.ModuleID
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
	r.RotatorEnabledMask = uint32(p.rotatorMask)
	r.EngineCoreInterruptRegAddr = p.engineCoreIRQAddr
	r.ReservedDRAMSize = kmd
	return copyResult(a, structBytes(&r))
}

func (f *File) infoDeviceStatus(a *hl.InfoArgs) error {
	var r hl.InfoDeviceStatus
	r.Status = uint32(f.dev.State())
	return copyResult(a, structBytes(&r))
}

func (f *File) infoResetCount(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r := hl.InfoResetCount{HardResetCnt: d.hardResets, SoftResetCnt: d.computeResets}
	d.mu.Unlock()
	return copyResult(a, structBytes(&r))
}

func (f *File) infoDRAMUsage(a *hl.InfoArgs) error {
	d := f.dev
	p := &d.prof
	d.mu.Lock()
	var r hl.InfoDRAMUsage
	r.DRAMFreeMem = p.dramSize - (p.dramUserBase - p.dramBase) - d.dramUsed
	if !f.control {
		r.CtxDRAMMem = d.dramUsed
	}
	d.mu.Unlock()
	return copyResult(a, structBytes(&r))
}

func (f *File) infoOpenStats(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	var r hl.OpenStatsInfo
	r.OpenCounter = d.openCounter
	r.LastOpenPeriodMs = uint64(d.lastOpenPeriod.Milliseconds())
	if d.compute != nil {
		r.IsComputeCtxActive = 1
	}
	d.mu.Unlock()
	return copyResult(a, structBytes(&r))
}

func (f *File) infoGetEvents(a *hl.InfoArgs) error {
	if a.ReturnSize < 8 || a.ReturnPointer == 0 {
		return unix.EINVAL
	}
	f.mu.Lock()
	ev := f.events
	f.events = 0
	f.mu.Unlock()
	return copyOut(a.ReturnPointer, structBytes(&ev))
}
