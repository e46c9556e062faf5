package sim

import (
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The operational-only ops that the driver answers by asking the device's
// firmware (CPU-CP packets) or reading its registers. The simulated
// firmware answers with the profile's fixed values: an idle card at its
// nominal clocks, with healthy HBM and a quiet PCIe link.

// device_utilization: the driver derives the utilization from the power
// the firmware reports, (power - dc_power) × 100 / (max_power - dc_power)
// with power clamped to [dc_power, max_power], and maps any failure to
// EINVAL. The 6.12 driver does not read period_ms: any value is accepted.
func (f *File) infoDeviceUtilization(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	p := &f.dev.prof
	if p.maxPowerMW == p.dcPowerMW {
		return unix.EINVAL // hl_device_utilization: not supported
	}
	power := min(max(p.idlePowerMW, p.dcPowerMW), p.maxPowerMW)
	r := hl.InfoDeviceUtilization{Utilization: uint32((power - p.dcPowerMW) * 100 / (p.maxPowerMW - p.dcPowerMW))}
	return f.copyResult(a, structBytes(&r))
}

// get_clk_rate: the current and maximum frequency of the clock PLL
// (clk_pll_index, the MME PLL), which the firmware reports in Hz and the
// driver converts to MHz. The simulated clock never throttles, so both are
// the PLL's output 0.
func (f *File) infoClkRate(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	p := &f.dev.prof
	mhz := uint32(p.pllOutputs[p.clkPLL][0])
	r := hl.InfoClkRate{CurClkRateMhz: mhz, MaxClkRateMhz: mhz}
	return f.copyResult(a, structBytes(&r))
}

// time_sync_info: device_time is the PSOC timestamp counter, which the
// simulator runs from the device's creation at the frequency of the PLL
// output that clocks it (psoc_timestamp_frequency, 100 MHz); host_time is
// CLOCK_MONOTONIC_RAW in ns (ktime_get_raw_ns); tsc_time is the CPU's time
// stamp counter (RDTSC on amd64, the kernel's only architecture; CNTVCT_EL0
// on arm64).
func (f *File) infoTimeSync(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	p := &d.prof
	mhz := uint64(p.pllOutputs[p.tsPLL][p.tsOutput])
	r := hl.InfoTimeSync{
		DeviceTime: uint64(time.Since(d.created).Nanoseconds()) * mhz / 1000,
		HostTime:   uint64(clockNs(unix.CLOCK_MONOTONIC_RAW)),
		TscTime:    readTSC(),
	}
	return f.copyResult(a, structBytes(&r))
}

// pci_counters_info: firmware counters; the simulated link is idle (0 KB/s
// each way) and has never replayed a packet.
func (f *File) infoPCICounters(a *hl.InfoArgs) error {
	var r hl.InfoPCICounters
	return f.copyResult(a, structBytes(&r))
}

// total_energy_consumption_info: a firmware counter the driver passes
// through unparsed. The simulator reports millijoules used at the idle
// power since the host booted (CLOCK_BOOTTIME), as if the firmware
// started then: one count for every process that simulates the device,
// as every reader of a Gaudi's firmware reads one counter (counting from
// the device's creation in each process made hlinfo and hlexporter
// disagree about the same device).
func (f *File) infoTotalEnergy(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	ms := uint64(clockNs(unix.CLOCK_BOOTTIME) / 1e6)
	r := hl.InfoEnergy{TotalEnergyConsumption: d.prof.idlePowerMW * ms / 1000}
	return f.copyResult(a, structBytes(&r))
}

// pll_frequency_info: pll_index is the ASIC's hl_*_pll_index. Current
// firmware maps PLLs dynamically (CPU_BOOT_DEV_STS0_DYN_PLL_EN), so the
// driver's map_pll_idx_to_fw_idx refuses an index outside the enum with
// EINVAL (get_used_pll_index); the simulated firmware supports every PLL
// of the enum.
func (f *File) infoPLLFrequency(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	p := &f.dev.prof
	idx := a.PLLIndex()
	if idx >= uint32(len(p.pllOutputs)) {
		return unix.EINVAL
	}
	r := hl.PLLFrequencyInfo{Output: p.pllOutputs[idx]}
	return f.copyResult(a, structBytes(&r))
}

// power_info: the input power in mW, from the firmware.
func (f *File) infoPower(a *hl.InfoArgs) error {
	r := hl.PowerInfo{Power: f.dev.prof.idlePowerMW}
	return f.copyResult(a, structBytes(&r))
}

// hbmRowInfo mirrors the firmware's struct cpucp_hbm_row_info (8 bytes),
// which is all dram_replaced_rows_info copies.
type hbmRowInfo struct {
	HBMIdx, PC, SID, BankIdx uint8
	RowAddr                  uint16
	ReplacedRowCause, Pad    uint8
}

// dram_replaced_rows_info: the simulated HBM has no replaced row, so the
// firmware's row record is all zeros.
func (f *File) infoDRAMReplacedRows(a *hl.InfoArgs) error {
	var r hbmRowInfo
	return f.copyResult(a, structBytes(&r))
}

// dram_pending_rows_info: a u32 count of rows waiting for replacement; 0.
func (f *File) infoDRAMPendingRows(a *hl.InfoArgs) error {
	var n uint32
	return f.copyResult(a, structBytes(&n))
}

// errFWUnsupported is what the driver returns when the firmware refuses a
// packet it does not implement (hl_fw_send_cpu_message: any firmware error
// code becomes EIO).
const errFWUnsupported = unix.EIO

// sec_attest_info: the attestation report comes from the firmware's
// security module. The simulated firmware does not implement it, so after
// the driver's checks the answer is EIO.
func (f *File) infoSecuredAttestation(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	return errFWUnsupported
}

// dev_info_signed: like SECURED_ATTESTATION, a signed firmware report the
// simulated firmware does not implement: EIO after the checks.
func (f *File) infoDevSigned(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	return errFWUnsupported
}

// send_fw_generic_request: fw_sub_opcode must be HL_PASSTHROUGH_VERSIONS
// (0) and return_size at most 1 MB (EINVAL); the driver then allocates
// return_size bytes of the CPU-accessible pool, which fails for 0 bytes
// (ENOMEM). The return pointer is not checked. The passthrough answer is
// firmware-defined and the simulated firmware does not implement it: EIO.
func (f *File) infoFWGenericReq(a *hl.InfoArgs) error {
	const passthroughVersions = 0
	if a.FWSubOpcode() != passthroughVersions {
		return unix.EINVAL
	}
	if a.ReturnSize > sz1M {
		return unix.EINVAL
	}
	if a.ReturnSize == 0 {
		return unix.ENOMEM
	}
	return errFWUnsupported
}
