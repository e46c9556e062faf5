package cli

import (
	"path/filepath"
	"strings"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/sysfsattr"
	"golang.org/x/sys/unix"
)

// DriverVersion returns the version of the driver behind d: "sim" for a
// simulated device; else the habanalabs module's version attribute
// (/sys/module/habanalabs/version, which Habana's out-of-tree driver
// has); else, for the driver built into the kernel, which has no version
// of its own, "linux " and the kernel release; "unknown" when neither
// can be read.
func DriverVersion(d *device.Device) string {
	if d.Simulated() {
		return "sim"
	}
	var u unix.Utsname
	release := ""
	if unix.Uname(&u) == nil {
		release = unix.ByteSliceToString(u.Release[:])
	}
	return driverVersionAt("/", release)
}

// driverVersionAt is DriverVersion for hardware, reading sysfs under root.
func driverVersionAt(root, release string) string {
	if v, err := sysfsattr.Read(filepath.Join(root, "sys/module/habanalabs/version")); err == nil && v != "" {
		return v
	}
	if release = strings.TrimSpace(release); release != "" {
		return "linux " + release
	}
	return "unknown"
}
