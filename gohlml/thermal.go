package gohlml

import (
	"path/filepath"
	"strconv"
	"strings"
)

// temperature reads the hwmon channel of the device's PCI function whose
// temp<n>_label names what, and its file suffix ("input", "crit", "max"),
// in °C. The kernel's driver labels no channel (common/hwmon.c), so which
// sensor is the chip's and which the board's is unknown there:
// ErrNotSupported.
func (d Device) temperature(what []string, suffix string) (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.pciDir == "" {
		return 0, ErrNotSupported
	}
	labels, _ := filepath.Glob(filepath.Join(h.pciDir, "hwmon", "hwmon*", "temp*_label"))
	for _, l := range labels {
		label := strings.ToLower(readAttr(filepath.Dir(l), filepath.Base(l)))
		if !containsAny(label, what) {
			continue
		}
		ch := strings.TrimSuffix(filepath.Base(l), "_label")
		// hwmon reports millidegrees (Documentation/hwmon/sysfs-interface.rst).
		v, err := strconv.ParseInt(readAttr(filepath.Dir(l), ch+"_"+suffix), 10, 64)
		if err != nil || v < 0 {
			return 0, ErrNotSupported
		}
		return uint(v / 1000), nil
	}
	return 0, ErrNotSupported
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

var (
	boardSensor = []string{"board"}
	chipSensor  = []string{"chip", "asic", "aip", "die"}
)

// TemperatureOnBoard returns the board's temperature in °C: the hwmon
// channel of the device labelled as the board's (temp<n>_label);
// ErrNotSupported without one.
func (d Device) TemperatureOnBoard() (uint, error) { return d.temperature(boardSensor, "input") }

// TemperatureOnChip returns the chip's temperature in °C: the hwmon
// channel labelled as the chip's; ErrNotSupported without one.
func (d Device) TemperatureOnChip() (uint, error) { return d.temperature(chipSensor, "input") }

// TemperatureThresholdShutdown returns the chip channel's critical limit
// (temp<n>_crit) in °C; ErrNotSupported without one.
func (d Device) TemperatureThresholdShutdown() (uint, error) {
	return d.temperature(chipSensor, "crit")
}

// TemperatureThresholdSlowdown returns the chip channel's maximum
// (temp<n>_max) in °C; ErrNotSupported without one.
func (d Device) TemperatureThresholdSlowdown() (uint, error) { return d.temperature(chipSensor, "max") }

// TemperatureThresholdMemory is ErrNotSupported: no driver reports an HBM
// temperature limit.
func (d Device) TemperatureThresholdMemory() (uint, error) { return d.unsupported() }

// TemperatureThresholdGPU is ErrNotSupported: the driver reports no
// limit beyond the channel's crit and max.
func (d Device) TemperatureThresholdGPU() (uint, error) { return d.unsupported() }
