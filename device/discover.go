package device

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// How the kernel shows habanalabs devices, and where each fact comes from.
// Paths are relative to the driver directory drivers/accel/habanalabs/
// unless they say otherwise.
//
// Accel layout, checked against the linux 6.12 sources:
//   - drivers/gpu/drm/drm_sysfs.c, drm_sysfs_minor_alloc: the compute device
//     is named "accel<minor>", belongs to class "accel" and has the PCI
//     device as parent, so /sys/class/accel/accelN links to
//     .../<pci address>/accel/accelN and accelN/device links to the PCI
//     function.
//   - drivers/accel/drm_accel.c, accel_devnode: class "accel" nodes are
//     created as /dev/accel/<name>.
//   - common/device.c, cdev_sysfs_debugfs_add: the driver adds a control
//     device "accel_controlD<minor>" (the same number as accelN) to the
//     accel class with no parent: /sys/class/accel/accel_controlDN links to
//     devices/virtual/accel/accel_controlDN, the node is
//     /dev/accel/accel_controlDN, and its dev_t uses the driver's own
//     "habanalabs" char major (habanalabs_drv.c, hl_init).
//   - common/habanalabs_drv.c, create_hdev: the driver's struct device is the
//     PCI device, and common/sysfs.c, hl_sysfs_init, adds the attribute
//     groups to it, so the attributes are /sys/class/accel/accelN/device/*.
//   - common/habanalabs.h: PCI_VENDOR_ID_HABANALABS is 0x1da3 and HL_NAME,
//     the PCI driver name (the PCI function's driver link), is "habanalabs".
//
// The out-of-tree driver's own accel class (Intel's driver, built for a
// kernel without CONFIG_DRM_ACCEL; HabanaAI/drivers.accel.habanalabs.kernel
// @e20162dd26ce2d0de9f0d5674fb11c7780ee1a49 unless said otherwise):
//   - common/habanalabs_compat_accel.c, hl_accel_init: the driver takes a
//     char region named "accel" with a dynamic major (alloc_chrdev_region)
//     and creates class "accel" itself, whose devnode callback names the
//     nodes "accel/<name>": the nodes are /dev/accel/accelN and
//     /dev/accel/accel_controlDN, as with DRM.
//   - hl_accel_device_add_groups (called by common/sysfs.c's hl_sysfs_init
//     in that build, @4058b6e1280374fab990403cd98d0a4e8358b6b1) adds the
//     driver's attributes as one group named "device" on the class device:
//     /sys/class/accel/accelN/device/ is a directory holding the
//     attributes, where DRM has a link to the PCI function. (So the class
//     device has no parent: a parent would have given it a "device" link.)
//     The PCI function is found through the pci_addr attribute, as on the
//     legacy layout. The device number of a node is found, as on the other
//     layouts, through /sys/dev/char/major:minor or the dev attribute, so
//     the major's value does not matter.
//   - common/sysfs.c: the out-of-tree driver adds the driver_ver attribute
//     (its version) to the ones 6.12 has.
//
// Legacy layout (kernels before the move to the accel framework, the
// driver then living in drivers/misc/habanalabs). These facts come from
// the older driver, not from 6.12:
//   - habanalabs_drv.c, hl_init, created class "habanalabs"; device.c,
//     hl_device_init, named the compute device "hl%d" and the control device
//     "hl_controlD%d" with the same number (id/2; minors id and id+1), so
//     nodes are /dev/hlN and /dev/hl_controlDN.
//   - device.c, device_init_cdev, set no parent, so the class devices live
//     in /sys/devices/virtual/habanalabs/ with no device link, and the
//     driver's struct device was the hlN class device itself: attributes
//     are /sys/class/habanalabs/hlN/*, and the PCI function is found from
//     the pci_addr attribute through /sys/bus/pci/devices/<address>.
//     A device link, when present, is used instead.
//   - sysfs.c, status_show, first printed "Operational", "In reset",
//     "Malfunction" and later "Needs Reset"; newer drivers (6.12 included:
//     habanalabs_drv.c, create_hdev, and sysfs.c, status_show) print the
//     driver's status table with a capital first letter: "Operational",
//     "In reset", "Disabled", "Needs reset", "In device creation",
//     "In reset after device release".

const (
	// hlVendorID is PCI_VENDOR_ID_HABANALABS (common/habanalabs.h).
	hlVendorID = 0x1da3
	// hlDriverName is HL_NAME, the PCI driver name (common/habanalabs.h).
	hlDriverName = "habanalabs"
)

// hlAttrs are the driver's readable text attributes, read into Node.Attrs
// when present. Write-only attributes (hard_reset, soft_reset) are left
// out, and so is the binary eeprom attribute, whose read asks the device
// firmware for a page of data.
var hlAttrs = []string{
	// 6.12 common/sysfs.c, hl_dev_attrs: every ASIC.
	"armcp_kernel_ver", "armcp_ver", "cpld_ver", "cpucp_kernel_ver",
	"cpucp_ver", "device_type", "fuse_ver", "fw_os_ver", "hard_reset_cnt",
	"max_power", "module_id", "parent_device", "pci_addr",
	"preboot_btl_ver", "security_enabled", "status", "thermal_ver",
	"uboot_ver",
	// 6.12 common/sysfs.c, hl_dev_inference_attrs: only ASICs that allow
	// inference soft reset (Goya); every ASIC in older drivers.
	"soft_reset_cnt",
	// 6.12 common/sysfs.c, hl_dev_clk_attrs: Gaudi and Gaudi2.
	"clk_cur_freq_mhz", "clk_max_freq_mhz",
	// 6.12 common/sysfs.c, hl_dev_vrm_attrs (Gaudi2); gaudi/gaudi.c and
	// goya/goya_hwmgr.c (infineon_ver, Gaudi and Goya).
	"vrm_ver", "infineon_ver",
	// 6.12 goya/goya_hwmgr.c: Goya only.
	"high_pll", "ic_clk", "ic_clk_curr", "mme_clk", "mme_clk_curr",
	"pm_mng_profile", "tpc_clk", "tpc_clk_curr",
	// Early legacy drivers only (drivers/misc/habanalabs/sysfs.c; later
	// removed).
	"write_open_cnt",
	// The out-of-tree driver's common/sysfs.c: its version.
	"driver_ver",
}

// ErrNotFound reports that no habanalabs device matches a lookup.
var ErrNotFound = errors.New("device not found")

// Layout is the way a kernel exposes habanalabs devices.
type Layout int

const (
	// LayoutAccel is the accel framework of current kernels: compute node
	// /dev/accel/accelN, control node /dev/accel/accel_controlDN, sysfs
	// entry /sys/class/accel/accelN, driver attributes on the PCI function
	// (accelN/device/).
	LayoutAccel Layout = iota + 1
	// LayoutLegacy is the driver's own "habanalabs" class of older kernels:
	// compute node /dev/hlN, control node /dev/hl_controlDN, driver
	// attributes in /sys/class/habanalabs/hlN/.
	LayoutLegacy
)

// String returns "accel" or "legacy".
func (l Layout) String() string {
	switch l {
	case LayoutAccel:
		return "accel"
	case LayoutLegacy:
		return "legacy"
	}
	return "Layout(" + strconv.Itoa(int(l)) + ")"
}

// Node is one habanalabs device as sysfs shows it at the time of listing.
// It is plain data: safe to read from several goroutines, but Attrs must
// not be modified while others read it.
type Node struct {
	// Index is N in accelN or hlN.
	Index int
	// Layout is the way the kernel exposes the device.
	Layout Layout
	// Path is the compute node as the kernel names it, such as
	// /dev/accel/accel0 or /dev/hl0. It is not joined under SysFS.Root.
	Path string
	// ControlPath is the control node, such as /dev/accel/accel_controlD0
	// or /dev/hl_controlD0, or "" when sysfs shows none (the driver adds it
	// shortly after the compute node).
	ControlPath string
	// PCIAddress is the PCI function, such as "0000:19:00.0", or "" when a
	// legacy device does not show its pci_addr attribute yet.
	PCIAddress string
	// VendorID and DeviceID are the PCI ids (0x1da3, and 0x1020 for
	// Gaudi2).
	VendorID, DeviceID uint16
	// Revision is the PCI revision; it tells Gaudi2 steppings apart.
	Revision uint8
	// NUMANode is the PCI function's NUMA node, -1 when unknown.
	NUMANode int
	// LocalCPUList is the PCI function's local_cpulist, such as "0-31",
	// or "" when unknown.
	LocalCPUList string
	// Status is the driver's status attribute, such as "Operational" or
	// "In reset", or "" when absent.
	Status string
	// ModuleID is the driver's module_id attribute (the card location the
	// firmware reports, the OAM slot on HLS servers), -1 when absent: older
	// drivers do not have it.
	ModuleID int
	// OwnAccelClass reports an accel device of the class the out-of-tree
	// driver makes itself on kernels without CONFIG_DRM_ACCEL: same node
	// names, a dynamic char major, the driver attributes in
	// /sys/class/accel/accelN/device/ (a directory, not a link to the PCI
	// function). Only Intel's out-of-tree driver does this.
	OwnAccelClass bool
	// Attrs holds every readable driver attribute by file name, trimmed of
	// white space. Some (max_power, clk_*) ask the device firmware and are
	// missing while the device is not operational. Never nil.
	Attrs map[string]string
}

// Nodes lists the habanalabs devices of the live system (or of the tree
// GAUDI_ROOT names, see RootEnv); see SysFS.Nodes.
func Nodes() ([]Node, error) {
	return SysFS{}.Nodes()
}

// Nodes lists the habanalabs devices in both layouts, sorted by Index
// (then Layout). A device shown by both layouts is listed once, as accel.
// A missing class directory is not an error, and driver attributes that
// cannot be read are left out of Node.Attrs; a required file that is
// missing or malformed (a habanalabs device's PCI vendor or device id, a
// legacy pci_addr) gives an *AttrError naming the file.
//
// On the accel layout a device counts when its PCI function's driver link
// names "habanalabs", or, without a driver link, when its PCI vendor is
// 0x1da3; devices of other accel drivers are skipped.
func (s SysFS) Nodes() ([]Node, error) {
	accel, err := s.accelNodes()
	if err != nil {
		return nil, err
	}
	legacy, err := s.legacyNodes()
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(accel)+len(legacy))
	seen := make(map[string]bool)
	for _, n := range accel {
		seen[n.PCIAddress] = n.PCIAddress != ""
		nodes = append(nodes, n)
	}
	for _, n := range legacy {
		if !seen[n.PCIAddress] {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Layout, b.Layout))
	})
	return nodes, nil
}

// NodeByPCIAddress returns the device at a PCI address such as
// "0000:19:00.0"; the address is case-insensitive and may omit the 0000
// domain ("19:00.0"). It returns an error wrapping ErrNotFound when no
// habanalabs device has that address.
func (s SysFS) NodeByPCIAddress(addr string) (Node, error) {
	want := strings.ToLower(strings.TrimSpace(addr))
	if len(want) == len("00:00.0") {
		want = "0000:" + want
	}
	nodes, err := s.Nodes()
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.PCIAddress != "" && n.PCIAddress == want {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("pci address %q: %w", addr, ErrNotFound)
}

// classEntries lists a class directory: the numbers of the compute entries
// (compute+N) and of the control entries (control+N). A missing directory
// has no entries.
func (s SysFS) classEntries(class, compute, control string) ([]int, map[int]bool, error) {
	ents, err := os.ReadDir(s.path("sys", "class", class))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read sysfs class: %w", err)
	}
	var idx []int
	ctl := make(map[int]bool)
	for _, e := range ents {
		if i, ok := parseIndex(e.Name(), compute); ok {
			idx = append(idx, i)
		} else if i, ok := parseIndex(e.Name(), control); ok {
			ctl[i] = true
		}
	}
	return idx, ctl, nil
}

// accelNodes lists the habanalabs devices of /sys/class/accel.
func (s SysFS) accelNodes() ([]Node, error) {
	idx, ctl, err := s.classEntries("accel", "accel", "accel_controlD")
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for _, i := range idx {
		n, ok, err := s.accelNode(i, ctl[i])
		if err != nil {
			return nil, err
		}
		if ok {
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// accelNode reads /sys/class/accel/accelN; ok is false when the device is
// not a habanalabs device or went away while being read.
func (s SysFS) accelNode(i int, control bool) (n Node, ok bool, err error) {
	num := strconv.Itoa(i)
	entry := s.path("sys", "class", "accel", "accel"+num)
	pci := filepath.Join(entry, "device")
	if fi, err := os.Lstat(pci); err == nil && fi.IsDir() {
		return s.ownClassNode(i, control, entry, pci)
	}

	ours, err := isHabana(pci)
	if err == nil && !ours {
		return Node{}, false, nil
	}
	n = Node{
		Index:    i,
		Layout:   LayoutAccel,
		Path:     "/dev/accel/accel" + num,
		NUMANode: -1,
		ModuleID: -1,
	}
	if control {
		n.ControlPath = "/dev/accel/accel_controlD" + num
	}
	if err == nil {
		n.PCIAddress, err = linkBase(pci)
	}
	if err == nil {
		err = readPCI(&n, pci)
	}
	if err != nil {
		if gone(entry) {
			return Node{}, false, nil
		}
		return Node{}, false, err
	}
	setAttrs(&n, readAttrs(pci))
	return n, true, nil
}

// ownClassNode reads an accel device of the out-of-tree driver's own
// class, whose attributes are in the directory attrDir; ok is false when
// its PCI function is not a habanalabs device or it went away while
// being read.
func (s SysFS) ownClassNode(i int, control bool, entry, attrDir string) (n Node, ok bool, err error) {
	num := strconv.Itoa(i)
	n = Node{
		Index:         i,
		Layout:        LayoutAccel,
		Path:          "/dev/accel/accel" + num,
		NUMANode:      -1,
		ModuleID:      -1,
		OwnAccelClass: true,
	}
	if control {
		n.ControlPath = "/dev/accel/accel_controlD" + num
	}
	attrs := readAttrs(attrDir)
	addr, found := attrs["pci_addr"]
	if !found || !isPCIAddress(addr) {
		if gone(entry) {
			return Node{}, false, nil
		}
		return Node{}, false, &AttrError{
			Path: filepath.Join(attrDir, "pci_addr"),
			Err:  fmt.Errorf("missing or malformed pci address %q", addr),
		}
	}
	n.PCIAddress = addr
	pci := s.path("sys", "bus", "pci", "devices", addr)
	ours, err := isHabana(pci)
	if err == nil && !ours {
		return Node{}, false, nil
	}
	if err == nil {
		err = readPCI(&n, pci)
	}
	if err != nil {
		if gone(entry) {
			return Node{}, false, nil
		}
		return Node{}, false, err
	}
	setAttrs(&n, attrs)
	return n, true, nil
}

// isHabana reports whether the PCI function at dir is driven by
// habanalabs: its driver link names the driver or, without a driver link,
// its vendor id is Habana Labs'. A function without a vendor file is not
// a PCI function and so is not ours.
func isHabana(dir string) (bool, error) {
	if drv, err := linkBase(filepath.Join(dir, "driver")); err == nil {
		return drv == hlDriverName, nil
	}
	v, err := readHex(filepath.Join(dir, "vendor"), 16)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return v == hlVendorID, nil
}

// legacyNodes lists the devices of /sys/class/habanalabs, a class only the
// habanalabs driver creates.
func (s SysFS) legacyNodes() ([]Node, error) {
	idx, ctl, err := s.classEntries("habanalabs", "hl", "hl_controlD")
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for _, i := range idx {
		n, ok, err := s.legacyNode(i, ctl[i])
		if err != nil {
			return nil, err
		}
		if ok {
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// legacyNode reads /sys/class/habanalabs/hlN; ok is false when the device
// went away while being read.
func (s SysFS) legacyNode(i int, control bool) (n Node, ok bool, err error) {
	num := strconv.Itoa(i)
	entry := s.path("sys", "class", "habanalabs", "hl"+num)
	n = Node{
		Index:    i,
		Layout:   LayoutLegacy,
		Path:     "/dev/hl" + num,
		NUMANode: -1,
		ModuleID: -1,
	}
	if control {
		n.ControlPath = "/dev/hl_controlD" + num
	}
	attrs := readAttrs(entry)
	pci := filepath.Join(entry, "device")
	if addr, lerr := linkBase(pci); lerr == nil {
		n.PCIAddress = addr
		if len(attrs) == 0 {
			attrs = readAttrs(pci)
		}
	} else if addr, found := attrs["pci_addr"]; found {
		if !isPCIAddress(addr) {
			return Node{}, false, &AttrError{
				Path: filepath.Join(entry, "pci_addr"),
				Err:  fmt.Errorf("malformed pci address %q", addr),
			}
		}
		n.PCIAddress = addr
		pci = s.path("sys", "bus", "pci", "devices", addr)
	} else {
		pci = ""
	}
	if pci != "" {
		if err := readPCI(&n, pci); err != nil {
			if gone(entry) {
				return Node{}, false, nil
			}
			return Node{}, false, err
		}
	}
	setAttrs(&n, attrs)
	return n, true, nil
}

// readPCI fills the PCI identity from the PCI function directory dir.
// Vendor and device ids are required; revision, NUMA node and local CPUs
// keep their defaults when unreadable.
func readPCI(n *Node, dir string) error {
	vendor, err := readHex(filepath.Join(dir, "vendor"), 16)
	if err != nil {
		return err
	}
	device, err := readHex(filepath.Join(dir, "device"), 16)
	if err != nil {
		return err
	}
	n.VendorID, n.DeviceID = uint16(vendor), uint16(device)
	if rev, err := readHex(filepath.Join(dir, "revision"), 8); err == nil {
		n.Revision = uint8(rev)
	}
	if s, err := readAttr(filepath.Join(dir, "numa_node")); err == nil {
		if v, err := strconv.Atoi(s); err == nil && v >= -1 {
			n.NUMANode = v
		}
	}
	if s, err := readAttr(filepath.Join(dir, "local_cpulist")); err == nil {
		n.LocalCPUList = s
	}
	return nil
}

// readAttrs reads the driver attributes present in dir.
func readAttrs(dir string) map[string]string {
	attrs := make(map[string]string)
	for _, name := range hlAttrs {
		if v, err := readAttr(filepath.Join(dir, name)); err == nil {
			attrs[name] = v
		}
	}
	return attrs
}

// setAttrs stores attrs and the fields derived from them in n.
func setAttrs(n *Node, attrs map[string]string) {
	n.Attrs = attrs
	n.Status = attrs["status"]
	if s, found := attrs["module_id"]; found {
		if v, err := strconv.Atoi(s); err == nil && v >= 0 {
			n.ModuleID = v
		}
	}
}

// gone reports whether a class entry no longer exists, as when a device
// is removed while it is being listed.
func gone(entry string) bool {
	_, err := os.Lstat(entry)
	return errors.Is(err, fs.ErrNotExist)
}
