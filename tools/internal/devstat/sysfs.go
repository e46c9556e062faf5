package devstat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
)

// Where the sysfs facts come from (linux 6.12 unless said otherwise):
//   - drivers/accel/habanalabs/common/hwmon.c, hl_hwmon_init: the driver
//     registers a hwmon device on the PCI function, so its channels are
//     <pci function>/hwmon/hwmonM/temp<n>_input; the hwmon ABI
//     (Documentation/hwmon/sysfs-interface.rst) gives temperatures in
//     millidegrees Celsius. The driver gives no temp<n>_label; others may.
//   - drivers/pci/pci-sysfs.c, current_link_speed_show and
//     current_link_width_show (max_link_* alike): the speed is printed as
//     "16.0 GT/s PCIe" (drivers/pci/probe.c, pci_speed_string) or
//     "Unknown", the width as a decimal lane count.
//   - Documentation/ABI/testing/sysfs-driver-habanalabs: max_power is in
//     milliwatts; hard_reset_cnt and soft_reset_cnt count resets.
//   - Neither serial_number nor uuid is an attribute of the kernel's
//     driver (the card's serial is in its EEPROM, whose layout the kernel
//     does not document); they are read when a driver provides them.

// firmwareAttrs are the driver's sysfs attributes that name firmware
// versions (common/sysfs.c, hl_dev_attrs).
var firmwareAttrs = []string{
	"armcp_kernel_ver", "armcp_ver", "cpld_ver", "cpucp_kernel_ver", "cpucp_ver", "fuse_ver", "fw_os_ver",
	"infineon_ver", "preboot_btl_ver", "thermal_ver", "uboot_ver", "vrm_ver",
}

// readText returns a sysfs attribute without surrounding white space.
func readText(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// fillSysfs adds what sysfs says about node n to r. Serial, UUID, NUMA
// node and link width are gohlml's readings (hd), so each has one
// implementation.
func fillSysfs(r *Device, sys device.SysFS, n device.Node, hd gohlml.Device) {
	if v, err := hd.NumaNode(); err == nil && v != nil {
		r.NUMANode = ptr(int(*v))
	}
	if n.ModuleID >= 0 {
		r.ModuleID = ptr(n.ModuleID)
	}
	if n.Status != "" {
		r.Status = strings.ToLower(n.Status)
	}
	r.PCIDeviceID, r.PCIRevision = n.DeviceID, n.Revision
	r.ASIC = asicName(device.ASICFromPCI(uint32(n.DeviceID), n.Revision))
	for _, a := range firmwareAttrs {
		if v, ok := n.Attrs[a]; ok && v != "" {
			r.Firmware[a] = v
		}
	}
	if v, ok := n.Attrs["max_power"]; ok {
		if mw, err := strconv.ParseUint(v, 10, 64); err == nil {
			r.PowerMaxMW = ptr(mw)
		}
	}
	if v, err := hd.SerialNumber(); err == nil {
		r.Serial = ptr(v)
	}
	if v, err := hd.UUID(); err == nil {
		r.UUID = ptr(v)
	}
	pci := sys.PCIDir(n)
	if pci == "" {
		return
	}
	r.PCIe.LinkSpeedGTs = readLinkSpeed(filepath.Join(pci, "current_link_speed"))
	if w, err := hd.PCILinkWidth(); err == nil {
		r.PCIe.LinkWidth = ptr(int(w))
	}
	r.PCIe.MaxLinkSpeedGTs = readLinkSpeed(filepath.Join(pci, "max_link_speed"))
	r.PCIe.MaxLinkWidth = readLinkWidth(filepath.Join(pci, "max_link_width"))
	temps, err := readTemperatures(pci)
	if err != nil {
		r.Errors = append(r.Errors, queryError("hwmon", err))
	}
	r.Temperatures = temps
}

// sysfsResets reads the driver's reset counters, for when INFO
// RESET_COUNT cannot be had.
func sysfsResets(n device.Node) *Resets {
	hard, okh := n.Attrs["hard_reset_cnt"]
	soft, oks := n.Attrs["soft_reset_cnt"]
	if !okh && !oks {
		return nil
	}
	var r Resets
	if v, err := strconv.ParseUint(hard, 10, 32); err == nil {
		r.Hard = uint32(v)
	}
	if v, err := strconv.ParseUint(soft, 10, 32); err == nil {
		r.Soft = uint32(v)
	}
	return &r
}

// readLinkSpeed parses "16.0 GT/s PCIe"; nil for "Unknown" or a missing
// file.
func readLinkSpeed(path string) *float64 {
	s, ok := readText(path)
	if !ok {
		return nil
	}
	num, _, found := strings.Cut(s, " GT/s")
	if !found {
		return nil
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return nil
	}
	return &v
}

// readLinkWidth parses a lane count; nil for 0 (no link) or a missing file.
func readLinkWidth(path string) *int {
	s, ok := readText(path)
	if !ok {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return nil
	}
	return &v
}

// readTemperatures reads every temp<n>_input of the hwmon devices below the
// PCI function dir, sorted by hwmon device then channel number. A channel
// whose input cannot be read (the firmware did not answer) is left out.
func readTemperatures(pci string) ([]Temperature, error) {
	temps := []Temperature{}
	hwmons, err := filepath.Glob(filepath.Join(pci, "hwmon", "hwmon*"))
	if err != nil {
		return temps, err
	}
	slices.SortFunc(hwmons, func(a, b string) int { return compareNumbered(filepath.Base(a), filepath.Base(b), "hwmon") })
	for _, h := range hwmons {
		ents, err := os.ReadDir(h)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return temps, err
		}
		var channels []string
		for _, e := range ents {
			name := e.Name()
			if ch, ok := strings.CutSuffix(name, "_input"); ok && strings.HasPrefix(ch, "temp") {
				if _, err := strconv.Atoi(strings.TrimPrefix(ch, "temp")); err == nil {
					channels = append(channels, ch)
				}
			}
		}
		slices.SortFunc(channels, func(a, b string) int { return compareNumbered(a, b, "temp") })
		for _, ch := range channels {
			s, ok := readText(filepath.Join(h, ch+"_input"))
			if !ok {
				continue
			}
			milli, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				continue
			}
			t := Temperature{Sensor: ch, Celsius: float64(milli) / 1000}
			if l, ok := readText(filepath.Join(h, ch+"_label")); ok && l != "" {
				t.Label = ptr(l)
			}
			temps = append(temps, t)
		}
	}
	return temps, nil
}

// compareNumbered orders prefix<N> names by N.
func compareNumbered(a, b, prefix string) int {
	x, _ := strconv.Atoi(strings.TrimPrefix(a, prefix))
	y, _ := strconv.Atoi(strings.TrimPrefix(b, prefix))
	return x - y
}
