package sim

import (
	"fmt"
	"os"
	"strings"
)

// Driver is the habanalabs kernel driver a simulated system behaves as.
//
// The two drivers share the six core ioctls byte for byte; the out-of-tree
// one (Intel's, shipped with the Gaudi software stack, which most Gaudi2
// and Gaudi3 servers run) adds INFO ops, the NIC ioctl, MEMORY
// REG_DMABUF_FD, named bytes of HW_IP_INFO and the soft reset stall of
// DEVICE_STATUS. The facts come from its public source,
// HabanaAI/drivers.accel.habanalabs.kernel (see oot.go for the files and
// commits read).
type Driver int

const (
	// DriverUpstream is the driver of linux 6.12 (drivers/accel/habanalabs),
	// the default.
	DriverUpstream Driver = iota + 1
	// DriverOutOfTree is Intel's out-of-tree driver (version 1.24), built
	// with CONFIG_DRM_ACCEL, on devices whose NIC ports are not enabled:
	// its NIC ioctl and link queries answer as that driver does when the
	// NIC is not initialized.
	DriverOutOfTree
)

// String returns "upstream" or "out-of-tree".
func (d Driver) String() string {
	switch d {
	case DriverUpstream:
		return "upstream"
	case DriverOutOfTree:
		return "out-of-tree"
	}
	return fmt.Sprintf("Driver(%d)", int(d))
}

// ParseDriver parses "upstream" or "oot" ("out-of-tree" also; any case).
func ParseDriver(s string) (Driver, error) {
	switch strings.ToLower(s) {
	case "upstream":
		return DriverUpstream, nil
	case "oot", "out-of-tree":
		return DriverOutOfTree, nil
	}
	return 0, fmt.Errorf("unknown driver %q (want upstream or oot)", s)
}

// driverEnv is the variable that chooses the driver of a Config whose
// Driver is zero.
const driverEnv = "GAUDI_SIM_DRIVER"

// resolveDriver returns the driver a Config asks for: its own, else
// GAUDI_SIM_DRIVER, else DriverUpstream.
func resolveDriver(d Driver) (Driver, error) {
	switch d {
	case DriverUpstream, DriverOutOfTree:
		return d, nil
	case 0:
	default:
		return 0, fmt.Errorf("unknown simulator driver %d", int(d))
	}
	env := os.Getenv(driverEnv)
	if env == "" {
		return DriverUpstream, nil
	}
	d, err := ParseDriver(env)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", driverEnv, err)
	}
	return d, nil
}

// ootModuleVersion is the module version the simulated out-of-tree
// driver reports: MODULE_VERSION is "major.minor.patchlevel-sha"
// (common/habanalabs_drv.c, HL_MODULE_VERSION; the newest release seen is
// 1.24.1, common/version.h).
const ootModuleVersion = "1.24.1-sim"

// upstreamVersion stands for the kernel release of the upstream driver,
// which has no module version of its own.
const upstreamVersion = "6.12"

// Driver returns the driver the system's devices behave as.
func (s *System) Driver() Driver { return s.cfg.Driver }

// Driver returns the driver the device behaves as.
func (d *Device) Driver() Driver { return d.driver }

// oot reports whether the device behaves as the out-of-tree driver.
func (d *Device) oot() bool { return d.driver == DriverOutOfTree }

// DriverVersion returns the version a program reads for the driver the
// file's device behaves as: the out-of-tree driver's module version
// (/sys/module/habanalabs/version and the driver_ver attribute on
// hardware), or, for the upstream driver, which has none, the release of
// the kernel it comes with. package device uses it for simulated devices,
// which have no sysfs.
func (f *File) DriverVersion() string {
	if f.dev.oot() {
		return ootModuleVersion
	}
	return upstreamVersion
}
