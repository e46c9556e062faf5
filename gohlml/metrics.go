package gohlml

import (
	"time"

	"github.com/gaudi-go/gaudi/device"
)

// MemoryInfo returns the device memory users get, in bytes: total (INFO
// HW_IP_INFO dram_size), used (total minus free) and free (INFO DRAM_USAGE
// dram_free_mem, the whole device's, every context's allocations
// counted).
func (d Device) MemoryInfo() (uint64, uint64, uint64, error) {
	dev, err := d.ctl("memory")
	if err != nil {
		return 0, 0, 0, err
	}
	total := dev.HWIPInfo().DRAMSize
	u, err := dev.DRAMUsage()
	if err != nil {
		return 0, 0, 0, driverError("dram usage", err)
	}
	free := min(u.Free, total)
	return total, total - free, free, nil
}

// UtilizationPeriod is the window INFO DEVICE_UTILIZATION averages over
// for UtilizationInfo.
const UtilizationPeriod = 100 * time.Millisecond

// UtilizationInfo returns the device's utilization in percent over the
// last UtilizationPeriod (INFO DEVICE_UTILIZATION, hl_device_utilization).
func (d Device) UtilizationInfo() (uint, error) {
	dev, err := d.ctl("utilization")
	if err != nil {
		return 0, err
	}
	u, err := dev.Utilization(UtilizationPeriod)
	if err != nil {
		return 0, driverError("utilization", err)
	}
	return uint(u), nil
}

// clock returns INFO CLK_RATE (the firmware's current and maximum
// frequency of the PLL the driver reports, in MHz).
func (d Device) clock() (device.Clock, error) {
	dev, err := d.ctl("clock")
	if err != nil {
		return device.Clock{}, err
	}
	c, err := dev.ClockRate()
	return c, driverError("clock rate", err)
}

// SOCClockInfo returns the current clock in MHz (INFO CLK_RATE
// cur_clk_rate_mhz).
func (d Device) SOCClockInfo() (uint, error) {
	c, err := d.clock()
	return uint(c.CurrentMHz), err
}

// SOCClockMax returns the maximum clock in MHz (INFO CLK_RATE
// max_clk_rate_mhz).
func (d Device) SOCClockMax() (uint, error) {
	c, err := d.clock()
	return uint(c.MaxMHz), err
}

// ICClockMax is ErrNotSupported: the driver reports one clock (CLK_RATE)
// and the raw outputs of numbered PLLs (PLL_FREQUENCY), whose mapping to
// the interconnect is not documented.
func (d Device) ICClockMax() (uint, error) { return d.unsupported() }

// MMEClockMax is ErrNotSupported, as ICClockMax.
func (d Device) MMEClockMax() (uint, error) { return d.unsupported() }

// TPCClockMax is ErrNotSupported, as ICClockMax.
func (d Device) TPCClockMax() (uint, error) { return d.unsupported() }

// unsupported checks d, then returns ErrNotSupported.
func (d Device) unsupported() (uint, error) {
	if _, err := d.handle(); err != nil {
		return 0, err
	}
	return 0, ErrNotSupported
}

// PowerUsage returns the input power in mW (INFO POWER,
// hl_fw_cpucp_power_get).
func (d Device) PowerUsage() (uint, error) {
	dev, err := d.ctl("power")
	if err != nil {
		return 0, err
	}
	p, err := dev.Power()
	return uint(p), driverError("power", err)
}

// EnergyConsumptionCounter returns the energy the device used since the
// firmware booted, in mJ (INFO TOTAL_ENERGY).
func (d Device) EnergyConsumptionCounter() (uint64, error) {
	dev, err := d.ctl("energy")
	if err != nil {
		return 0, err
	}
	e, err := dev.TotalEnergy()
	return e, driverError("total energy", err)
}

// ClockThrottleReasons returns the throttling in force (INFO
// CLK_THROTTLE_REASON clk_throttling_reason): HL_CLK_THROTTLE_POWER (bit
// 0) and HL_CLK_THROTTLE_THERMAL (bit 1) are HLML's
// HLML_CLOCKS_THROTTLE_REASON_POWER and _THERMAL, the same bits; other
// bits pass through.
func (d Device) ClockThrottleReasons() (uint64, error) {
	dev, err := d.ctl("clock throttle")
	if err != nil {
		return 0, err
	}
	t, err := dev.ClockThrottle()
	return uint64(t.Reasons), driverError("clock throttle", err)
}

// PowerManagementDefaultLimit is ErrNotSupported: the driver's max_power
// attribute is the limit in force, which can be changed, not the one the
// device booted with (max_power_default, which no interface reports).
func (d Device) PowerManagementDefaultLimit() (uint, error) { return d.unsupported() }
