package sim

import (
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The out-of-tree driver's additions (Driver DriverOutOfTree).
//
// Read from HabanaAI/drivers.accel.habanalabs.kernel, paths under
// drivers/accel/habanalabs/:
//   - common/habanalabs_ioctl.c @c8bb11f30eed5ed0ac9d86e6e6f52df831052dd5:
//     _hl_info_ioctl (which ops are served in any state),
//     device_status_info, module_params_info, drm_accel_enabled_info,
//     time_sync_info_per_die, report_memory_consumption_ioctl,
//     cn_link_state_info, cn_statistics, hw_ip_info, hl_nic_ioctl,
//     cn_control and the hl_nic_input_size and hl_nic_output_size tables
//     (the struct sizes from include/uapi/drm/habanalabs_accel.h
//     @1646573d024143de16936b6b2b105e3e03f8e5da);
//   - the NIC core, hl_cn_control and hl_cn_get_port_status: a device
//     whose NIC is not initialized (get_hw_cap false, as with no ports
//     enabled) answers EFAULT;
//   - common/habanalabs_drv.c @c8bb11f3, set_driver_behavior_per_device:
//     the values MODULE_PARAMS and HW_IP_INFO report for Gaudi2
//     (mme_mask 0xF, sched_arc_mask 0x3F, tpc_mask 0x1FFFFFF,
//     decoder_mask 0x3FF, rotator_mask 0x3, fw_components
//     FW_TYPE_ALL_TYPES, clock gating, heartbeat, scramblers and HBM ECC
//     on) and for other ASICs (the default case: mme_mask 0x3,
//     sched_arc_mask 0, tpc_mask 0x3FF); timeout_locked 30 s, 600 s on
//     Gaudi (fixup_device_params_per_asic);
//   - gaudi2/gaudi2.c @4058b6e1280374fab990403cd98d0a4e8358b6b1,
//     gaudi2_set_fixed_properties: neither supports_odp nor
//     pdma_user_owned_ch_mask is set, so odp_supported and the PDMA
//     channel mask are 0; num_of_dies is not set either, which the driver
//     counts as one die.

// ootInfoOps are the INFO ops only the out-of-tree driver has, with the
// split of _hl_info_ioctl: MODULE_PARAMS and CONFIG_DRM_ACCEL_ENABLED in
// its first switch (any state), the rest after the operational check.
var ootInfoOps map[uint32]infoOp

func init() {
	ootInfoOps = map[uint32]infoOp{
		hl.HL_INFO_MODULE_PARAMS:            {true, (*File).infoModuleParams},
		hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED: {true, (*File).infoDRMAccelEnabled},
		hl.HL_INFO_HABANA_LINK_STATE:        {false, (*File).infoLinkState},
		hl.HL_INFO_HABANA_LINK_COUNTERS:     {false, (*File).infoLinkCounters},
		hl.HL_INFO_TIME_SYNC_PER_DIE:        {false, (*File).infoTimeSyncPerDie},
		hl.HL_INFO_MEMORY_CONSUMPTION:       {false, (*File).infoMemoryConsumption},
	}
}

// infoOpOf returns the device's handler of an INFO op.
func (d *Device) infoOpOf(op uint32) (infoOp, bool) {
	if d.oot() {
		if o, ok := ootInfoOps[op]; ok {
			return o, true
		}
		if op == hl.HL_INFO_DEVICE_STATUS {
			return infoOp{true, (*File).infoDeviceStatusOOT}, true
		}
	}
	o, ok := infoOps[op]
	return o, ok
}

// ootHWIPInfo fills the bytes of HW_IP_INFO the out-of-tree driver names
// and upstream reserves. interposer_version and substrate_version come
// from the firmware's cpucp info, which the simulated firmware leaves 0;
// the NIC masks are the enabled ports (cn.ports_mask, cn.eth_ports_mask),
// none here.
func (d *Device) ootHWIPInfo(r *hl.InfoHWIPInfo) {
	m := d.ootMasks()
	r.Reserved6 = m.mme   // mme_enabled_mask
	r.Reserved9 = m.sched // sched_arc_enabled_mask
}

// ootMasks are the engine masks set_driver_behavior_per_device gives the
// ASIC.
type ootMaskSet struct {
	mme, sched, decoder, rotator uint32
	tpc                          uint64
}

func (d *Device) ootMasks() ootMaskSet {
	if d.prof.asic == Gaudi2 {
		return ootMaskSet{mme: 0xF, sched: 0x3F, decoder: 0x3FF, rotator: 0x3, tpc: 0x1FFFFFF}
	}
	return ootMaskSet{mme: 0x3, sched: 0, decoder: 0x3FF, rotator: 0x3, tpc: 0x3FF}
}

// fwTypeAllTypes is FW_TYPE_ALL_TYPES (linux, boot CPU and preboot
// images; common/habanalabs.h).
const fwTypeAllTypes = 0x7

// module_params_info: the values the driver's parameters took, with the
// driver's defaults on a production card (no bring-up flags). Parameters
// whose default the simulator cannot source are 0 (axi_drain,
// nic_lanes_per_port with no NIC).
func (f *File) infoModuleParams(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	m := f.dev.ootMasks()
	var r hl.InfoModuleParams
	r.GaudiHugePageOptimization = 1
	r.TimeoutLocked = 30
	if f.dev.prof.asic == Gaudi {
		r.TimeoutLocked = 600
	}
	r.ResetOnLockup = 1
	r.MMUEnable = 1
	r.ClockGating, r.ClockGatingExt = ^uint32(0), ^uint32(0)
	if m.mme != 0 {
		r.MMEEnable = 1
	}
	r.TPCMask = m.tpc
	r.NICPortsMask = 0 // no port enabled
	r.DRAMEnable = 1
	r.CPUEnable = 1 // !!fw_components
	r.CPUQueuesEnable = 1
	r.FWLoading = fwTypeAllTypes
	r.Heartbeat = 1
	r.SecurityEnable = 1
	r.SRAMScramblerEnable = 1
	r.DRAMScramblerEnable = 1
	r.HBMECCEnable = 1
	r.HardResetOnFWEvents = 1
	r.DecoderMask = m.decoder
	r.RotatorMask = m.rotator
	return f.copyResult(a, structBytes(&r))
}

// drm_accel_enabled_info: the buffer must hold a u64; the driver is built
// with CONFIG_DRM_ACCEL here, so it writes 1.
func (f *File) infoDRMAccelEnabled(a *hl.InfoArgs) error {
	if a.ReturnPointer.IsNil() || a.ReturnSize < 8 {
		return unix.EINVAL
	}
	one := uint64(1)
	return f.copyOut(a.ReturnPointer.Addr(), structBytes(&one))
}

// device_status_info of the out-of-tree driver: it reads min(return_size,
// 8) bytes of the caller's buffer first; a non-zero soft_reset_stall (the
// upstream pad) makes soft resets wait until 30 ms after this call
// (HL_SOFT_RESET_STALL_AFTER_POLLING_MS), a zero one cancels an earlier
// stall. Only those bytes are written back.
func (f *File) infoDeviceStatusOOT(a *hl.InfoArgs) error {
	size := min(a.ReturnSize, uint32(8))
	if size == 0 || a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	var r hl.InfoDeviceStatus
	b := structBytes(&r)[:size]
	if err := f.copyIn(a.ReturnPointer.Addr(), b); err != nil {
		return err
	}
	d := f.dev
	d.mu.Lock()
	if r.SoftResetStall() != 0 {
		d.stallUntil = monotonicNow() + int64(hl.HL_SOFT_RESET_STALL_AFTER_POLLING_MS*time.Millisecond)
		d.stallRequests++
	} else {
		d.stallUntil = 0
	}
	r.Status = uint32(d.state)
	d.mu.Unlock()
	return f.copyOut(a.ReturnPointer.Addr(), b)
}

// SoftResetStallRequests returns how many INFO DEVICE_STATUS calls asked
// for a soft reset stall (a non-zero soft_reset_stall, which the
// out-of-tree driver reads from the caller's buffer). The library always
// sends it zeroed; tests check that it stays 0.
func (d *Device) SoftResetStallRequests() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stallRequests
}

// StalledSoftResets returns how many soft resets waited for a stall a
// DEVICE_STATUS call asked for.
func (d *Device) StalledSoftResets() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stalledResets
}

// softResetStall waits, before a soft (compute) reset, until the stall a
// DEVICE_STATUS call asked for is over.
func (d *Device) softResetStall() {
	d.mu.Lock()
	until := d.stallUntil
	wait := time.Duration(until - monotonicNow())
	if until != 0 && wait > 0 {
		d.stalledResets++
	}
	d.mu.Unlock()
	if until != 0 && wait > 0 {
		time.Sleep(wait)
	}
}

// time_sync_info_per_die: the caller's buffer is read first (die_index);
// a die the device does not have is EINVAL.
func (f *File) infoTimeSyncPerDie(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	var r hl.InfoTimeSyncPerDie
	b := structBytes(&r)
	n := min(int(a.ReturnSize), len(b))
	if err := f.copyIn(a.ReturnPointer.Addr(), b[:n]); err != nil {
		return err
	}
	const dies = 1 // num_of_dies unset: one die
	if r.DieIndex >= dies {
		return unix.EINVAL
	}
	r = hl.InfoTimeSyncPerDie{DieIndex: r.DieIndex, DeviceTime: f.dev.deviceTime(), HostTime: uint64(clockNs(unix.CLOCK_MONOTONIC_RAW)), TSCTime: readTSC()}
	return f.copyOut(a.ReturnPointer.Addr(), b[:n])
}

// deviceTime is the PSOC timestamp counter TIME_SYNC reads.
func (d *Device) deviceTime() uint64 {
	p := &d.prof
	mhz := uint64(p.pllOutputs[p.tsPLL][p.tsOutput])
	return uint64(time.Since(d.created).Nanoseconds()) * mhz / 1000
}

// MemoryConsumption is what a program last reported with INFO
// MEMORY_CONSUMPTION (the out-of-tree driver passes it to the firmware).
type MemoryConsumption struct {
	UsedMem      uint64
	TimestampSec uint64
	Reports      uint64 // accepted reports so far
}

// MemoryConsumption returns the last report INFO MEMORY_CONSUMPTION made.
func (d *Device) MemoryConsumption() MemoryConsumption {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memReport
}

// report_memory_consumption_ioctl: return_size must be the struct's 16
// bytes exactly; the buffer is an input (EFAULT when unreadable, NULL
// included); the reported use may not exceed the device's allocated DRAM
// (dram_used_mem). The firmware takes it; the simulated firmware keeps it.
func (f *File) infoMemoryConsumption(a *hl.InfoArgs) error {
	var r hl.InfoMemoryConsumption
	b := structBytes(&r)
	if int(a.ReturnSize) != len(b) {
		return unix.EINVAL
	}
	if err := f.copyIn(a.ReturnPointer.Addr(), b); err != nil {
		return err
	}
	d := f.dev
	if r.UsedMem > uint64(d.dramUsed.Load()) {
		return unix.EINVAL
	}
	d.mu.Lock()
	d.memReport = MemoryConsumption{UsedMem: r.UsedMem, TimestampSec: r.TimestampSec, Reports: d.memReport.Reports + 1}
	d.mu.Unlock()
	return nil
}

// cn_link_state_info: with the NIC not initialized, hl_cn_get_port_status
// answers EFAULT.
func (f *File) infoLinkState(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	return unix.EFAULT
}

// cn_statistics: the buffer is read first (it names the user's name and
// value buffers), then the NIC core answers EFAULT.
func (f *File) infoLinkCounters(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	var r hl.InfoHabanaLinkCounters
	b := structBytes(&r)
	if err := f.copyIn(a.ReturnPointer.Addr(), b[:min(int(a.ReturnSize), len(b))]); err != nil {
		return err
	}
	return unix.EFAULT
}

// nicInSize and nicOutSize are hl_nic_input_size and hl_nic_output_size:
// the driver's input and output struct sizes per NIC op (0 where an op
// has none; ops 4 to 8 are not served).
var nicInSize = [...]uint32{
	hl.HL_NIC_OP_ALLOC_CONN:          8,
	hl.HL_NIC_OP_SET_REQ_CONN_CTX:    72,
	hl.HL_NIC_OP_SET_RES_CONN_CTX:    56,
	hl.HL_NIC_OP_DESTROY_CONN:        8,
	hl.HL_NIC_OP_USER_WQ_SET:         32,
	hl.HL_NIC_OP_USER_WQ_UNSET:       8,
	hl.HL_NIC_OP_USER_CQ_SET:         16,
	hl.HL_NIC_OP_USER_CQ_UNSET:       8,
	hl.HL_NIC_OP_USER_CQ_UPDATE_CI:   8,
	hl.HL_NIC_OP_ALLOC_USER_CQ_ID:    8,
	hl.HL_NIC_OP_SET_USER_APP_PARAMS: 80,
	hl.HL_NIC_OP_GET_USER_APP_PARAMS: 8,
	hl.HL_NIC_OP_ALLOC_USER_DB_FIFO:  8,
	hl.HL_NIC_OP_USER_DB_FIFO_SET:    24,
	hl.HL_NIC_OP_USER_DB_FIFO_UNSET:  8,
	hl.HL_NIC_OP_EQ_POLL:             8,
	hl.HL_NIC_OP_USER_ENCAP_ALLOC:    8,
	hl.HL_NIC_OP_USER_ENCAP_SET:      32,
	hl.HL_NIC_OP_USER_ENCAP_UNSET:    8,
	hl.HL_NIC_OP_USER_CCQ_SET:        8,
	hl.HL_NIC_OP_USER_CCQ_UNSET:      8,
	hl.HL_NIC_OP_USER_CQ_ID_SET:      16,
	hl.HL_NIC_OP_USER_CQ_ID_UNSET:    8,
	hl.HL_NIC_OP_ALLOC_COLL_CONN:     8,
	hl.HL_NIC_OP_DUMP_QP:             24,
}

var nicOutSize = [...]uint32{
	hl.HL_NIC_OP_ALLOC_CONN:          8,
	hl.HL_NIC_OP_SET_REQ_CONN_CTX:    24,
	hl.HL_NIC_OP_USER_WQ_SET:         8,
	hl.HL_NIC_OP_ALLOC_USER_CQ_ID:    8,
	hl.HL_NIC_OP_GET_USER_APP_PARAMS: 48,
	hl.HL_NIC_OP_ALLOC_USER_DB_FIFO:  8,
	hl.HL_NIC_OP_USER_DB_FIFO_SET:    32,
	hl.HL_NIC_OP_EQ_POLL:             16,
	hl.HL_NIC_OP_USER_ENCAP_ALLOC:    8,
	hl.HL_NIC_OP_USER_CCQ_SET:        24,
	hl.HL_NIC_OP_USER_CQ_ID_SET:      32,
	hl.HL_NIC_OP_ALLOC_COLL_CONN:     8,
	hl.HL_NIC_OP_DUMP_QP:             0,
}

// nicIoctl is hl_nic_ioctl on a device whose NIC is not initialized: EBUSY
// when the device is not operational, EINVAL for an op it does not serve
// (past HL_NIC_OP_DUMP_QP, or the kernel-internal CQ ops 4 to 8); for the
// others it clamps input_size and output_size to the op's structs (the
// caller sees the clamped sizes: drm_ioctl copies the arguments back),
// copies the input in (EFAULT when unreadable), then the NIC core answers
// EFAULT, and cn_control still copies the zeroed output out.
func (f *File) nicIoctl(a *hl.NICArgs) error {
	if !f.dev.State().operational() {
		return unix.EBUSY
	}
	op := a.Op
	if op > hl.HL_NIC_OP_DUMP_QP || (op >= hl.HL_NIC_OP_CQ_CREATE && op <= hl.HL_NIC_OP_CQ_UPDATE_CONSUMED_CQES) {
		return unix.EINVAL
	}
	a.InputSize = min(a.InputSize, nicInSize[op])
	a.OutputSize = min(a.OutputSize, nicOutSize[op])
	if !a.InputPtr.IsNil() && a.InputSize > 0 {
		in := make([]byte, a.InputSize)
		if err := f.copyIn(a.InputPtr.Addr(), in); err != nil {
			return err
		}
	}
	// hl_cn_control answers EFAULT ("NIC is not initialized"); the output
	// goes out anyway, and a fault there is EFAULT too.
	if !a.OutputPtr.IsNil() && a.OutputSize > 0 {
		f.copyOut(a.OutputPtr.Addr(), make([]byte, a.OutputSize))
	}
	return unix.EFAULT
}
