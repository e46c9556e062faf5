package device

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PCIAddress returns the PCI address of the open device, such as
// "0000:19:00.0", for a compute or a control node. On hardware it finds
// the node's sysfs entry from the device number of the open descriptor
// (see SysFS.NodeByDevNumber), so it names the device the descriptor is
// open on even if nodes were renumbered since. A File with a method
// PCIAddress() string that returns an address answers for itself: a
// simulated device, in this process or served by tools/hlsim, reports its
// configured address. It replaces hlthunk_get_pci_bus_id_from_fd.
func (d *Device) PCIAddress() (string, error) {
	if a, ok := d.file.(interface{ PCIAddress() string }); ok {
		if addr := a.PCIAddress(); addr != "" {
			return addr, nil
		}
	}
	major, minor, err := d.io.DevNumber()
	if err != nil {
		return "", fmt.Errorf("pci address of %s: %w", d.path, err)
	}
	n, err := SysFS{}.NodeByDevNumber(major, minor)
	if err != nil {
		return "", fmt.Errorf("pci address of %s: %w", d.path, err)
	}
	if n.PCIAddress == "" {
		return "", fmt.Errorf("pci address of %s: %w", d.path, ErrNotFound)
	}
	return n.PCIAddress, nil
}

// NodeByDevNumber returns the device whose compute or control node has
// device number major:minor, as fstat(2) reports it for an open node. The
// class device comes from the /sys/dev/char/major:minor link, or, without
// it, from the dev attribute of the class entries. hl-thunk instead assumes
// the legacy numbering (a control node's minor is its compute node's plus
// one) and reads pci_addr next to the node, which the accel layout does
// not have. It returns an error wrapping ErrNotFound when no habanalabs
// node has that number.
func (s SysFS) NodeByDevNumber(major, minor uint32) (Node, error) {
	dev := fmt.Sprintf("%d:%d", major, minor)
	name, err := linkBase(s.path("sys", "dev", "char", dev))
	if errors.Is(err, fs.ErrNotExist) {
		name, err = s.classDeviceByDev(dev)
	}
	if err != nil {
		return Node{}, fmt.Errorf("device %s: %w", dev, err)
	}
	index, layout, ok := nodeName(name)
	if !ok {
		return Node{}, fmt.Errorf("device %s (%s): %w", dev, name, ErrNotFound)
	}
	nodes, err := s.Nodes()
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.Index == index && n.Layout == layout {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("device %s (%s): %w", dev, name, ErrNotFound)
}

// classDeviceByDev finds the accel or habanalabs class entry whose dev
// attribute is dev.
func (s SysFS) classDeviceByDev(dev string) (string, error) {
	for _, class := range []string{"accel", "habanalabs"} {
		dir := s.path("sys", "class", class)
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read sysfs class: %w", err)
		}
		for _, e := range ents {
			if v, err := readAttr(filepath.Join(dir, e.Name(), "dev")); err == nil && v == dev {
				return e.Name(), nil
			}
		}
	}
	return "", ErrNotFound
}

// nodeName parses a class device name: accelN, accel_controlDN, hlN or
// hl_controlDN.
func nodeName(name string) (index int, layout Layout, ok bool) {
	for _, p := range []struct {
		prefix string
		layout Layout
	}{
		{"accel_controlD", LayoutAccel}, {"accel", LayoutAccel},
		{"hl_controlD", LayoutLegacy}, {"hl", LayoutLegacy},
	} {
		if i, ok := parseIndex(name, p.prefix); ok {
			return i, p.layout, true
		}
	}
	return 0, 0, false
}

// NodeByModuleID returns the device whose module_id attribute is id (its
// slot in the server). It returns an error wrapping ErrNotFound when no
// device has that module id. It replaces the newer hl-thunk's
// hlthunk_get_device_index_from_module_id (the Index field).
func (s SysFS) NodeByModuleID(id int) (Node, error) {
	nodes, err := s.Nodes()
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.ModuleID >= 0 && n.ModuleID == id {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("module id %d: %w", id, ErrNotFound)
}

// AnyASIC matches every chip in Count, as hl-thunk's
// HLTHUNK_DEVICE_DONT_CARE does.
const AnyASIC ASIC = -1

// Count returns how many habanalabs devices of chip a the live system has;
// see SysFS.Count. It replaces hlthunk_get_device_count.
func Count(a ASIC) (int, error) { return SysFS{}.Count(a) }

// Count returns how many devices of chip a (AnyASIC for all) sysfs lists.
// The chip comes from the PCI device id and revision, so no device is
// opened: hl-thunk opens each control node and asks HW_IP_INFO, which
// gives the same answer for devices the driver has probed.
func (s SysFS) Count(a ASIC) (int, error) {
	nodes, err := s.Nodes()
	if err != nil {
		return 0, err
	}
	return len(matchASIC(nodes, a)), nil
}

// matchASIC keeps the nodes of chip a, or all of them for AnyASIC.
func matchASIC(nodes []Node, a ASIC) []Node {
	var out []Node
	for _, n := range nodes {
		if a == AnyASIC || ASICFromPCI(uint32(n.DeviceID), n.Revision) == a {
			out = append(out, n)
		}
	}
	return out
}
