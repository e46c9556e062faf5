package cli

import (
	"os"
	"path/filepath"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// DriverVersion returns the version of the driver behind d: "sim" for a
// simulated device, else HostDriverVersion of this machine, else
// "unknown".
func DriverVersion(d *device.Device) string {
	if d.Simulated() {
		return "sim"
	}
	if v, ok := HostDriverVersion("/"); ok {
		return v
	}
	return "unknown"
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
