package device

import "strconv"

// Where a device's files are in sysfs (linux 6.12 unless said otherwise):
//   - drivers/accel/habanalabs/common/sysfs.c, hl_sysfs_init: the driver
//     attributes sit on the device the driver registers, which on the accel
//     layout is the PCI function (accelN/device), on the legacy layout the
//     class device hlN;
//   - drivers/accel/habanalabs/common/hwmon.c, hl_hwmon_init: the hwmon
//     device hangs off the PCI function, as do pci-sysfs.c's link files;
//   - the out-of-tree driver's own accel class (Node.OwnAccelClass) keeps
//     its attributes in accelN/device, a directory, not the PCI function.

// AttrDir returns the directory of node n's driver attributes (status,
// module_id, the firmware versions, ...), or "" when sysfs does not show
// it.
func (s SysFS) AttrDir(n Node) string {
	switch n.Layout {
	case LayoutAccel:
		return s.path("sys", "class", "accel", "accel"+strconv.Itoa(n.Index), "device")
	case LayoutLegacy:
		return s.path("sys", "class", "habanalabs", "hl"+strconv.Itoa(n.Index))
	}
	return ""
}

// PCIDir returns the directory of node n's PCI function (its link files,
// numa_node and hwmon), or "" when sysfs does not show it.
func (s SysFS) PCIDir(n Node) string {
	if n.Layout == LayoutAccel && !n.OwnAccelClass {
		return s.path("sys", "class", "accel", "accel"+strconv.Itoa(n.Index), "device")
	}
	if n.PCIAddress == "" {
		return ""
	}
	return s.path("sys", "bus", "pci", "devices", n.PCIAddress)
}
