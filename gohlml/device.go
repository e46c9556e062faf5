package gohlml

import (
	"errors"

	"github.com/gaudi-go/gaudi/device"
)

// Device is a handle to one device, valid from Initialize to Shutdown. It
// is a small value, safe to copy and to use from many goroutines at once.
// Its zero value (what the lookups return with an error) answers
// ErrInvalidArgument.
type Device struct{ h *handle }

// PCIInfo is the PCI identity of a device, as gohlml declares it.
type PCIInfo struct {
	BusID    string
	DeviceID uint
}

// DeviceSource is what NewDevice reads a device's values from.
type DeviceSource struct {
	// Control is the device's control node (device.OpenControl, or
	// simdevice.OpenSimControl); nil makes the INFO values fail with
	// OpenErr.
	Control *device.Device
	// OpenErr is why Control is nil.
	OpenErr error
	// Node is the device as sysfs lists it, found in SysFS; nil makes the
	// values only sysfs gives (serial, UUID, PCIe link, temperatures,
	// NUMA node) ErrNotSupported.
	Node  *device.Node
	SysFS device.SysFS
}

// NewDevice returns a Device that reads src, for programs that open the
// devices themselves (hlinfo and hlexporter read each value through it).
// It needs no Initialize and Shutdown does not end it; the caller keeps
// src.Control open while it uses the Device, and closes it. Its
// MinorNumber is N of the node's name.
func NewDevice(src DeviceSource) Device { return Device{newHandle(src)} }

// newHandle reads the identity src gives.
func newHandle(src DeviceSource) *handle {
	h := &handle{dev: src.Control, openErr: src.OpenErr}
	if h.dev == nil && h.openErr == nil {
		h.openErr = errors.New("no control node")
	}
	if n := src.Node; n != nil {
		h.node, h.hasNode, h.minor, h.pciAddress = *n, true, n.Index, n.PCIAddress
		h.attrDir, h.pciDir = src.SysFS.AttrDir(*n), src.SysFS.PCIDir(*n)
		h.serial = readAttr(h.attrDir, "serial_number")
		h.uuid = readAttr(h.attrDir, "uuid")
	} else if h.dev != nil {
		h.minor, _ = trailingNumber(h.dev.Path())
	}
	if h.pciAddress == "" && h.dev != nil {
		h.pciAddress, _ = h.dev.PCIAddress()
	}
	return h
}

// handle is one device. Its fields are set when it is made and only read
// afterwards.
type handle struct {
	lib        *library // nil for NewDevice's
	index      int      // DeviceHandleByIndex's number
	minor      int      // N of accelN
	node       device.Node
	hasNode    bool
	attrDir    string // the driver attributes ("" without sysfs)
	pciDir     string // the PCI function ("" without sysfs)
	serial     string // sysfs serial_number, "" when absent
	uuid       string // sysfs uuid, "" when absent
	pciAddress string
	dev        *device.Device // the control node; nil when openErr
	openErr    error
}

// ctl returns d's control node, after checking that d is a handle of the
// library in force.
func (d Device) ctl(op string) (*device.Device, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	if h.dev == nil {
		return nil, driverError(op, h.openErr)
	}
	return h.dev, nil
}

// handle returns d's handle, ErrInvalidArgument for the zero Device and
// ErrNotIntialized after Shutdown.
func (d Device) handle() (*handle, error) {
	if d.h == nil {
		return nil, ErrInvalidArgument
	}
	if d.h.lib == nil {
		return d.h, nil
	}
	l, err := current()
	if err != nil {
		return nil, err
	}
	if l != d.h.lib {
		return nil, ErrNotIntialized
	}
	return d.h, nil
}

// MinorNumber returns N of the device's nodes (/dev/accel/accelN), which
// the device plugin turns back into the node path.
func (d Device) MinorNumber() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	return uint(h.minor), nil
}

// Name returns the card's name as the firmware reports it (INFO HW_IP_INFO
// card_name, CPU-CP's cpucp_info.card_name), such as "HL225".
func (d Device) Name() (string, error) {
	dev, err := d.ctl("name")
	if err != nil {
		return "", err
	}
	if n := dev.HWIPInfo().CardName; n != "" {
		return n, nil
	}
	return "", ErrNotSupported
}

// UUID returns the sysfs attribute uuid of the device's driver attributes,
// where the driver provides one. The kernel's driver (6.12) has none, and
// neither does the out-of-tree one's common/sysfs.c: the card's identity
// is in its EEPROM, whose layout no driver documents. Without the
// attribute it is ErrNotSupported.
func (d Device) UUID() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	if h.uuid == "" {
		return "", ErrNotSupported
	}
	return h.uuid, nil
}

// SerialNumber returns the sysfs attribute serial_number of the device's
// driver attributes, where the driver provides one (see UUID), else
// ErrNotSupported.
func (d Device) SerialNumber() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	if h.serial == "" {
		return "", ErrNotSupported
	}
	return h.serial, nil
}

// HLRevision returns the chip's PCI revision (sysfs "revision" of the
// function, else INFO HW_IP_INFO revision_id).
func (d Device) HLRevision() (int, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.hasNode {
		return int(h.node.Revision), nil
	}
	dev, err := d.ctl("revision")
	if err != nil {
		return 0, err
	}
	return int(dev.HWIPInfo().Revision), nil
}

// PCBVersion is ErrNotSupported: the PCB version is in the card's EEPROM,
// whose layout no driver documents.
func (d Device) PCBVersion() (string, error) {
	_, err := d.unsupported()
	return "", err
}

// PCBAssemblyVersion is ErrNotSupported, as PCBVersion.
func (d Device) PCBAssemblyVersion() (string, error) {
	_, err := d.unsupported()
	return "", err
}

// ModuleID returns the card's location, the OAM slot on HLS servers
// (sysfs module_id, else INFO HW_IP_INFO module_id; both are the
// firmware's cpucp_info.card_location).
func (d Device) ModuleID() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.hasNode && h.node.ModuleID >= 0 {
		return uint(h.node.ModuleID), nil
	}
	dev, err := d.ctl("module id")
	if err != nil {
		return 0, err
	}
	return uint(dev.HWIPInfo().ModuleID), nil
}

// BoardID is ErrNotSupported: no driver interface reports a board id.
func (d Device) BoardID() (uint, error) { return d.unsupported() }
