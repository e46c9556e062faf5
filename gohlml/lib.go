package gohlml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

const (
	// HlmlCriticalError is the event type of a critical error of a device
	// (HLML_EVENT_CRITICAL_ERR, bit 1): see RegisterEventForDevice. It is
	// an untyped constant, as gohlml's is, so that it is both an int
	// (RegisterEventForDevice) and a uint64 (Event.Etype).
	HlmlCriticalError = 1 << 1
	// HLDriverPath is the sysfs class of the devices on current kernels.
	// FWVersion reads below it (under GAUDI_ROOT when that is set).
	HLDriverPath = "/sys/class/accel"
	// HLModulePath is the habanalabs module's sysfs directory;
	// SystemDriverVersion reads its version file.
	HLModulePath = "/sys/module/habanalabs"
	// BITSPerLong is the width of a mask word, 64.
	BITSPerLong = 64
)

// library is what Initialize found: one handle per device, in the order
// DeviceHandleByIndex numbers them (by N of accelN).
type library struct {
	root    string // the directory that holds sys/ ("/" or GAUDI_ROOT)
	handles []*handle
}

var (
	mu  sync.RWMutex
	lib *library // nil when not initialized
)

// current returns the library, or ErrNotIntialized.
func current() (*library, error) {
	mu.RLock()
	defer mu.RUnlock()
	if lib == nil {
		return nil, ErrNotIntialized
	}
	return lib, nil
}

// Initialize finds the devices (sysfs, or the tree GAUDI_ROOT names, as
// package device discovers them) and opens the control node of each:
// control nodes serve the driver's INFO queries while another process
// owns the device, so a monitor never takes a device from a workload.
// A device whose control node cannot be opened is still listed; its INFO
// values fail with the open's error. A second Initialize without a
// Shutdown returns ErrAlreadyInitialized; a machine without the
// habanalabs driver ErrDriverNotLoaded (with the driver and no device,
// DeviceCount is 0).
func Initialize() error {
	mu.Lock()
	defer mu.Unlock()
	if lib != nil {
		return ErrAlreadyInitialized
	}
	sys := device.SysFS{}
	nodes, err := sys.Nodes()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrDriverNotLoaded, err)
		}
		return &Error{Op: "list devices", Kind: ErrUnknownError, Err: err}
	}
	if len(nodes) == 0 && !driverLoaded() {
		return ErrDriverNotLoaded
	}
	slices.SortFunc(nodes, func(a, b device.Node) int { return a.Index - b.Index })
	l := &library{root: sysRoot()}
	for i, n := range nodes {
		ctl, err := device.OpenControl(strconv.Itoa(n.Index))
		h := newHandle(DeviceSource{Control: ctl, OpenErr: err, Node: &n, SysFS: sys})
		h.lib, h.index = l, i
		l.handles = append(l.handles, h)
	}
	lib = l
	return nil
}

// InitWithLogs is Initialize; this library logs nothing.
func InitWithLogs() error { return Initialize() }

// InitWithDevices is Initialize over devices the caller opened, such as
// the in-process simulator's control nodes (simdevice.OpenSimControl):
// DeviceHandleByIndex(i) is devs[i], its minor number the node's index
// when its path ends in one, else i. They have no sysfs, so the values
// sysfs gives (serial, UUID, PCIe link, temperatures, NUMA node) are
// ErrNotSupported. The library owns the devices and closes them at
// Shutdown, also when InitWithDevices fails.
func InitWithDevices(devs []*device.Device) error {
	mu.Lock()
	defer mu.Unlock()
	if lib != nil {
		var errs []error
		for _, d := range devs {
			errs = append(errs, d.Close())
		}
		if err := errors.Join(errs...); err != nil {
			return errors.Join(ErrAlreadyInitialized, err)
		}
		return ErrAlreadyInitialized
	}
	l := &library{root: sysRoot()}
	for i, d := range devs {
		h := newHandle(DeviceSource{Control: d})
		h.lib, h.index = l, i
		if _, ok := trailingNumber(d.Path()); !ok {
			h.minor = i
		}
		l.handles = append(l.handles, h)
	}
	lib = l
	return nil
}

// Shutdown closes every control node Initialize opened; the Device
// handles and event sets of before fail with ErrNotIntialized from then
// on. Calls in flight finish first. Shutdown without Initialize returns
// ErrNotIntialized.
func Shutdown() error {
	mu.Lock()
	l := lib
	lib = nil
	mu.Unlock()
	if l == nil {
		return ErrNotIntialized
	}
	var errs []error
	for _, h := range l.handles {
		if h.dev != nil {
			if err := h.dev.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", h.dev.Path(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// DeviceCount returns how many devices Initialize found.
func DeviceCount() (uint, error) {
	l, err := current()
	if err != nil {
		return 0, err
	}
	return uint(len(l.handles)), nil
}

// DeviceHandleByIndex returns device idx, counting from 0 in the order of
// the nodes' numbers (accel0 first). An idx out of range gives
// ErrInvalidArgument.
func DeviceHandleByIndex(idx uint) (Device, error) {
	l, err := current()
	if err != nil {
		return Device{}, err
	}
	if idx >= uint(len(l.handles)) {
		return Device{}, ErrInvalidArgument
	}
	return Device{l.handles[idx]}, nil
}

// DeviceHandleByUUID returns the device whose UUID is uuid, or
// ErrNotFound.
func DeviceHandleByUUID(uuid string) (Device, error) {
	l, err := current()
	if err != nil {
		return Device{}, err
	}
	for _, h := range l.handles {
		if uuid != "" && h.uuid == uuid {
			return Device{h}, nil
		}
	}
	return Device{}, ErrNotFound
}

// DeviceHandleBySerial returns the device whose serial number is serial.
// As gohlml's, it returns a pointer, and an error that is not one of the
// sentinels when no device has that serial (here one that matches
// ErrNotFound).
func DeviceHandleBySerial(serial string) (*Device, error) {
	l, err := current()
	if err != nil {
		return nil, err
	}
	for _, h := range l.handles {
		if serial != "" && h.serial == serial {
			return &Device{h}, nil
		}
	}
	return nil, fmt.Errorf("could not find device with serial number %q: %w", serial, ErrNotFound)
}

// GetDeviceTypeName returns the family of the machine's Habana devices
// as the device plugin names its resource ("habana.ai/gaudi"): it looks
// at every PCI function (sys/bus/pci/devices, under GAUDI_ROOT when set)
// whose vendor is 0x1da3, bound to the driver or not, and names the
// family of the first it knows by device id (deviceFamilies). It needs no
// Initialize. A Habana function of an unknown id is an error; so is a
// machine without one, where gohlml returns "" and a nil error (which
// would make the device plugin offer "habana.ai/").
func GetDeviceTypeName() (string, error) {
	dir := filepath.Join(sysRoot(), "sys", "bus", "pci", "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("list pci devices: %w", err)
	}
	for _, e := range ents {
		fn := filepath.Join(dir, e.Name())
		if v, err := readPCIID(fn, "vendor"); err != nil || v != device.PCIVendorHabana {
			continue
		}
		id, err := readPCIID(fn, "device")
		if err != nil {
			return "", fmt.Errorf("pci device %s: %w", e.Name(), err)
		}
		fam, ok := deviceFamilies[id]
		if !ok {
			return "", fmt.Errorf("pci device %s: unknown habana device id %#04x", e.Name(), id)
		}
		return fam, nil
	}
	return "", errors.New("no habana devices on the system")
}

// deviceFamilies names the family of each Habana PCI device id as gohlml
// does (hlml.go, getDeviceName, at e31eedd): Goya; Gaudi, Gaudi2 (with
// Gaudi2E, 0x1021) and Gaudi3 (with its PCIe cards, 0x1061 to 0x1063);
// Greco.
var deviceFamilies = map[uint16]string{
	0x0001: "goya",
	0x1000: "gaudi", 0x1001: "gaudi", 0x1010: "gaudi", 0x1011: "gaudi", 0x1020: "gaudi", 0x1021: "gaudi",
	0x1030: "gaudi", 0x1060: "gaudi", 0x1061: "gaudi", 0x1062: "gaudi", 0x1063: "gaudi",
	0x0020: "greco", 0x0030: "greco",
}

// readPCIID reads a PCI id attribute of a function ("0x1da3",
// drivers/pci/pci-sysfs.c).
func readPCIID(fn, name string) (uint16, error) {
	v, err := sysfsattr.Read(filepath.Join(fn, name))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return uint16(n), nil
}

// FWVersion returns the firmware's kernel and U-Boot versions of device
// idx: the driver attributes armcp_kernel_ver and uboot_ver of accelIDX
// (common/sysfs.c), as they read, under GAUDI_ROOT when set. It needs no
// Initialize; a missing attribute is an error.
func FWVersion(idx uint) (kernel string, uboot string, err error) {
	dir := filepath.Join(sysRoot(), HLDriverPath, "accel"+strconv.FormatUint(uint64(idx), 10), "device")
	b, err := os.ReadFile(filepath.Join(dir, "armcp_kernel_ver"))
	if err != nil {
		return "", "", fmt.Errorf("file reading error %w", err)
	}
	u, err := os.ReadFile(filepath.Join(dir, "uboot_ver"))
	if err != nil {
		return "", "", fmt.Errorf("file reading error %w", err)
	}
	return string(b), string(u), nil
}

// SystemDriverVersion returns /sys/module/habanalabs/version as it reads
// (under GAUDI_ROOT when set): the version of Intel's out-of-tree driver.
// The kernel's own driver has no version file, and the call fails there.
func SystemDriverVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(sysRoot(), HLModulePath, "version"))
	if err != nil {
		return "", fmt.Errorf("file reading error %w", err)
	}
	return string(b), nil
}

// driverLoaded reports whether the habanalabs module is loaded (its
// /sys/module directory) or registered as a PCI driver (built in, or a
// served tree's /sys/bus/pci/drivers/habanalabs).
func driverLoaded() bool {
	for _, p := range []string{HLModulePath, "/sys/bus/pci/drivers/habanalabs"} {
		if _, err := os.Stat(filepath.Join(sysRoot(), p)); err == nil {
			return true
		}
	}
	return false
}

// sysRoot is the directory that holds sys/: GAUDI_ROOT, else "/".
func sysRoot() string { return device.SysFS{}.RootDir() }

// readAttr returns a sysfs attribute of dir trimmed, or "" when dir is ""
// or the attribute is missing or empty.
func readAttr(dir, name string) string {
	if dir == "" {
		return ""
	}
	v, err := sysfsattr.Read(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return v
}

// trailingNumber returns N of a node path that ends in one (accelN,
// accel_controlDN, hlN).
func trailingNumber(path string) (int, bool) {
	base := filepath.Base(path)
	i := len(base)
	for i > 0 && base[i-1] >= '0' && base[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(base[i:])
	return n, err == nil
}
