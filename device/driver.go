package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Which habanalabs driver a device runs on, and where each fact comes
// from.
//
// The kernel's driver (drivers/accel/habanalabs, linux 6.12) and Intel's
// out-of-tree one (HabanaAI/drivers.accel.habanalabs.kernel, driver 1.24)
// share the six core ioctls; the out-of-tree driver adds INFO ops, the NIC
// ioctl and MEMORY REG_DMABUF_FD (see uapi/hl/oot.go). The library probes
// for them instead of assuming:
//   - INFO CONFIG_DRM_ACCEL_ENABLED (op 42) is served by the out-of-tree
//     driver in every device state (common/habanalabs_ioctl.c
//     @c8bb11f30eed5ed0ac9d86e6e6f52df831052dd5, _hl_info_ioctl's first
//     switch and drm_accel_enabled_info: a u64, 1 when built with
//     CONFIG_DRM_ACCEL); 6.12 does not know it and answers EINVAL on an
//     operational device (EBUSY otherwise, which tells nothing).
//   - The out-of-tree driver has MODULE_VERSION "major.minor.patch-sha"
//     (common/habanalabs_drv.c @c8bb11f3, HL_MODULE_VERSION), which sysfs
//     shows as /sys/module/habanalabs/version, and a per-device driver_ver
//     attribute (common/sysfs.c @4058b6e1280374fab990403cd98d0a4e8358b6b1);
//     6.12's driver has neither (common/habanalabs_drv.c has no
//     MODULE_VERSION, common/sysfs.c no driver_ver), so its version is the
//     kernel release (/proc/sys/kernel/osrelease).

// Driver is the habanalabs driver a device runs on.
type Driver int

const (
	// DriverUnknown: neither the probe nor sysfs could tell.
	DriverUnknown Driver = iota
	// DriverUpstream is the kernel's own driver.
	DriverUpstream
	// DriverOutOfTree is Intel's out-of-tree driver, shipped with the
	// Gaudi software stack.
	DriverOutOfTree
)

// String returns "unknown", "upstream" or "out-of-tree".
func (d Driver) String() string {
	switch d {
	case DriverUnknown:
		return "unknown"
	case DriverUpstream:
		return "upstream"
	case DriverOutOfTree:
		return "out-of-tree"
	}
	return "Driver(" + strconv.Itoa(int(d)) + ")"
}

// DriverInfo identifies the driver behind an open device.
type DriverInfo struct {
	// Driver is the driver, as the probe (INFO CONFIG_DRM_ACCEL_ENABLED)
	// or, when the probe cannot tell, sysfs says.
	Driver Driver
	// Version is the out-of-tree driver's module version, such as
	// "1.24.1-a1b2c3d", or the kernel release for the kernel's driver; ""
	// when unknown. A simulated device reports the version of the driver
	// it simulates.
	Version string
	// DRMAccel reports, for the out-of-tree driver, whether it was built
	// with CONFIG_DRM_ACCEL (its nodes are DRM accel devices) or makes its
	// own "accel" class; nil when unknown. The kernel's driver is always a
	// DRM accel driver.
	DRMAccel *bool
}

// DriverInfo returns the driver the device runs on and its version. The
// first call probes the driver with an INFO that only the out-of-tree
// driver serves and reads sysfs; a definite answer is kept. Errors are
// those of a closed device; a driver that cannot be told is
// DriverUnknown, not an error.
func (d *Device) DriverInfo() (DriverInfo, error) {
	d.drvMu.Lock()
	defer d.drvMu.Unlock()
	if d.drv != nil {
		return *d.drv, nil
	}
	info, err := d.probeDriver()
	if err != nil {
		return DriverInfo{}, err
	}
	if info.Driver != DriverUnknown {
		d.drv = &info
	}
	return info, nil
}

// probeDriver asks the driver, then sysfs.
func (d *Device) probeDriver() (DriverInfo, error) {
	var info DriverInfo
	var b [8]byte
	var a hl.InfoArgs
	err := d.io.Info(hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, &a, b[:])
	switch {
	case err == nil:
		info.Driver = DriverOutOfTree
		drm := binary.NativeEndian.Uint64(b[:]) != 0
		info.DRMAccel = &drm
	case errors.Is(err, ioctl.ErrClosed):
		return DriverInfo{}, fmt.Errorf("driver of %s: %w", d.path, err)
	case errors.Is(err, unix.EINVAL):
		info.Driver = DriverUpstream
	}
	if v, ok := d.file.(interface{ DriverVersion() string }); ok {
		info.Version = v.DriverVersion()
		return info, nil
	}
	if d.Simulated() {
		return info, nil
	}
	fromSysfs, version := SysFS{}.Driver()
	if info.Driver == DriverUnknown {
		info.Driver = fromSysfs
	}
	if info.Driver == fromSysfs {
		info.Version = version
	}
	return info, nil
}

// Driver tells from sysfs which habanalabs driver is loaded and its
// version: the out-of-tree driver when the habanalabs module has a
// version (/sys/module/habanalabs/version), the kernel's driver when the
// module is present without one (its version is then the kernel release,
// /proc/sys/kernel/osrelease under the same root), DriverUnknown without
// the module.
func (s SysFS) Driver() (Driver, string) {
	mod := s.path("sys", "module", "habanalabs")
	if v, err := readAttr(s.path("sys", "module", "habanalabs", "version")); err == nil && v != "" {
		return DriverOutOfTree, v
	}
	if _, err := os.Stat(mod); errors.Is(err, fs.ErrNotExist) || err != nil {
		return DriverUnknown, ""
	}
	v, _ := readAttr(s.path("proc", "sys", "kernel", "osrelease"))
	return DriverUpstream, v
}

// notOnThisDriver turns the answer of a request only the out-of-tree
// driver knows into one matching ioctl.ErrNotSupported when the device
// runs the kernel's driver, which refuses it as an unknown op (EINVAL) or
// request (ENOTTY): the same errnos can mean bad arguments on the
// out-of-tree driver, so only the driver probe tells them apart.
func (d *Device) notOnThisDriver(what string, err error) error {
	if err == nil || errors.Is(err, ioctl.ErrNotSupported) {
		return err
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return err
	}
	info, perr := d.DriverInfo()
	if perr == nil && info.Driver == DriverUpstream {
		return fmt.Errorf("%s on the kernel's habanalabs driver: %w (%w)", what, ioctl.ErrNotSupported, err)
	}
	return err
}
