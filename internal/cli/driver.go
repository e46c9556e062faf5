package cli

import (
	"os"
	"path/filepath"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// DriverOf returns the driver behind d as every command names it
// (hlinfo and hlexporter through package devstat, hlperf): its flavour
// as the device answers the driver probe (device.Device.DriverInfo), else
// as sysfs says, "upstream" or "out-of-tree" (nil when neither can tell);
// and its version, HostDriverVersion of the machine whose sysfs lists
// the devices (GAUDI_ROOT's tree, else this one's), or nil for a
// simulated device (in process or served), which runs on no driver of
// the host.
func DriverOf(d *device.Device) (driver, version *string) {
	if info, err := d.DriverInfo(); err == nil && info.Driver != device.DriverUnknown {
		s := info.Driver.String()
		driver = &s
	}
	if d.Simulated() {
		return driver, nil
	}
	sys := device.SysFS{}
	if drv, _ := sys.Driver(); driver == nil && drv != device.DriverUnknown {
		s := drv.String()
		driver = &s
	}
	if v, ok := HostDriverVersion(sys.RootDir()); ok {
		version = &v
	}
	return driver, version
}

// DriverText is how every command writes a driver in text, given its
// flavour and version as DriverOf returns them (nil for unknown): "upstream
// driver linux 6.12.0-1-amd64", "upstream driver" without a version,
// "driver 1.19.0-561ad2c" without a flavour, "driver unknown" with
// neither.
func DriverText(driver, version *string) string {
	switch {
	case driver != nil && version != nil:
		return *driver + " driver " + *version
	case driver != nil:
		return *driver + " driver"
	case version != nil:
		return "driver " + *version
	}
	return "driver unknown"
}

// HostDriverVersion returns the version of the habanalabs driver of the
// machine whose sysfs and procfs are below root ("/" for this one, a
// fixture tree in tests): the module's version attribute
// (sys/module/habanalabs/version), which Habana's out-of-tree driver has;
// else, for the kernel's own driver, which has none (no MODULE_VERSION in
// drivers/accel/habanalabs/common/habanalabs_drv.c, linux 6.12), "linux "
// and the kernel release (proc/sys/kernel/osrelease). ok is false when
// the driver is not loaded (no sys/module/habanalabs) or neither can be
// read.
func HostDriverVersion(root string) (v string, ok bool) {
	mod := sysfsattr.Join(root, "sys", "module", "habanalabs")
	if v, err := sysfsattr.Read(filepath.Join(mod, "version")); err == nil && v != "" {
		return v, true
	}
	if _, err := os.Stat(mod); err != nil {
		return "", false
	}
	if r, err := sysfsattr.Read(sysfsattr.Join(root, "proc", "sys", "kernel", "osrelease")); err == nil && r != "" {
		return "linux " + r, true
	}
	return "", false
}
