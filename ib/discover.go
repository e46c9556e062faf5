package ib

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Where the kernel shows RDMA devices (linux 6.12,
// drivers/infiniband/core/sysfs.c, device.c and uverbs_main.c):
//   - /sys/class/infiniband/<name>: one entry per RDMA device, linked to
//     .../<pci address>/infiniband/<name> for a PCI NIC or to
//     devices/virtual/infiniband/<name> for software devices (rxe, siw).
//     It holds node_type ("%d: %s", 1 = CA, 4 = RNIC), node_guid and
//     sys_image_guid ("%04x:%04x:%04x:%04x"), fw_ver, a device link to the
//     parent (PCI function) and ports/<n>/ with state ("4: ACTIVE"),
//     phys_state ("5: LinkUp"), link_layer ("InfiniBand", "Ethernet"),
//     gids/<i> (eight groups of four hex digits; an empty slot reads as
//     zeros) and gid_attrs/types/<i> ("IB/RoCE v1", "RoCE v2"; reading an
//     empty slot fails).
//   - /sys/class/infiniband_verbs/uverbs<N>: one entry per device with a
//     user verbs node, /dev/infiniband/uverbs<N>; its ibdev attribute names
//     the RDMA device and abi_version is the driver's uverbs ABI.

// Device is one RDMA device as sysfs (and netlink, where available)
// shows it at the time of listing. It is plain data.
type Device struct {
	// Name is the RDMA device name, such as "mlx5_0" or "rxe0".
	Name string
	// Uverbs is the user verbs node's name, such as "uverbs0", and
	// UverbsPath its path, /dev/infiniband/uverbs0 (not joined under
	// SysFS.Root); both are empty for a device without one.
	Uverbs, UverbsPath string
	// ABIVersion is the driver's uverbs ABI version, -1 when unknown.
	ABIVersion int
	// DriverID is the id every uverbs request must carry, and
	// DriverIDSource says where it came from: "netlink" (the kernel's
	// own answer), "driver" (the PCI driver's name), "name" (the device
	// name's prefix), "probe" (asked from the uverbs file by Open) or ""
	// when unknown (Open then probes).
	DriverID       DriverID
	DriverIDSource string
	// Driver is the parent's kernel driver, such as "mlx5_core", or ""
	// for a software device.
	Driver string
	// NodeType is the node type's number (1 CA, 4 RNIC...) and
	// NodeTypeName its name, as node_type shows them.
	NodeType     int
	NodeTypeName string
	// NodeGUID and SysImageGUID are as sysfs prints them,
	// "xxxx:xxxx:xxxx:xxxx".
	NodeGUID, SysImageGUID string
	// FWVersion is fw_ver, "" when absent.
	FWVersion string
	// PCIAddress is the parent PCI function, such as "0000:1a:00.0", or
	// "" for a software device.
	PCIAddress string
	// NUMANode is the PCI function's NUMA node, -1 when unknown.
	NUMANode int
	// Ports lists the ports in order.
	Ports []Port
}

// Port is one port of a Device.
type Port struct {
	// Number counts from 1.
	Number int
	// State is the logical state, PhysState the physical one's name (such
	// as "LinkUp").
	State     PortState
	PhysState string
	// LinkLayer is "InfiniBand", "Ethernet" or "Unknown".
	LinkLayer string
	// GIDs are the non-empty GID table entries.
	GIDs []GID
}

// GID is one non-empty entry of a port's GID table.
type GID struct {
	Index int        // slot in the port's table
	GID   netip.Addr // the 16 GID bytes as an IPv6 address
	// Type is "IB/RoCE v1", "RoCE v2" or "" when sysfs did not say.
	Type string
}

// Devices lists the RDMA devices of the live system: sysfs, with driver
// ids from RDMA netlink where it answers (see SysFS.Devices for the
// fallback).
func Devices() ([]Device, error) {
	devs, err := SysFS{}.Devices()
	if err != nil {
		return nil, err
	}
	if nl, err := NetlinkDevices(); err == nil {
		devs = mergeNetlink(devs, nl)
	}
	return devs, nil
}

// DeviceByName returns the live device called name, or an error matching
// ErrNoDevice.
func DeviceByName(name string) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("rdma device %q: %w", name, ErrNoDevice)
}

// Devices lists the RDMA devices sysfs shows, ordered by name. Without
// netlink the driver id is guessed from the parent's driver name, else
// from the device name's prefix (see DriverIDForName). A machine without
// RDMA support (no /sys/class/infiniband) has no devices and no error.
func (s SysFS) Devices() ([]Device, error) {
	entries, err := os.ReadDir(s.path("sys/class/infiniband"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list rdma devices: %w", err)
	}
	uverbs := s.uverbsNodes()
	var devs []Device
	for _, e := range entries {
		d := s.device(e.Name())
		if u, ok := uverbs[d.Name]; ok {
			d.Uverbs = u
			d.UverbsPath = "/dev/infiniband/" + u
			d.ABIVersion = readInt(s.path("sys/class/infiniband_verbs", u, "abi_version"), -1)
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(a, b Device) int { return cmp.Compare(a.Name, b.Name) })
	return devs, nil
}

// uverbsNodes maps RDMA device names to their uverbsN entries.
func (s SysFS) uverbsNodes() map[string]string {
	m := map[string]string{}
	entries, err := os.ReadDir(s.path("sys/class/infiniband_verbs"))
	if err != nil {
		return m
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue // the class attribute abi_version
		}
		ib, err := readAttr(s.path("sys/class/infiniband_verbs", e.Name(), "ibdev"))
		if err == nil && ib != "" {
			m[ib] = e.Name()
		}
	}
	return m
}

// device reads one /sys/class/infiniband entry.
func (s SysFS) device(name string) Device {
	dir := s.path("sys/class/infiniband", name)
	d := Device{Name: name, ABIVersion: -1, NUMANode: -1}
	d.NodeType, d.NodeTypeName = -1, ""
	if v, err := readAttr(filepath.Join(dir, "node_type")); err == nil {
		d.NodeType, d.NodeTypeName = splitNumbered(v)
	}
	d.NodeGUID, _ = readAttr(filepath.Join(dir, "node_guid"))
	d.SysImageGUID, _ = readAttr(filepath.Join(dir, "sys_image_guid"))
	d.FWVersion, _ = readAttr(filepath.Join(dir, "fw_ver"))
	if p := linkBase(filepath.Join(dir, "device")); isPCIAddress(p) {
		d.PCIAddress = p
		d.NUMANode = readInt(filepath.Join(dir, "device", "numa_node"), -1)
		d.Driver = linkBase(filepath.Join(dir, "device", "driver"))
	}
	switch {
	case d.Driver != "" && DriverIDForName(d.Driver) != DriverUnknown:
		d.DriverID, d.DriverIDSource = DriverIDForName(d.Driver), "driver"
	case DriverIDForName(name) != DriverUnknown:
		d.DriverID, d.DriverIDSource = DriverIDForName(name), "name"
	}
	d.Ports = s.ports(dir)
	return d
}

// ports reads dir/ports/<n>.
func (s SysFS) ports(dir string) []Port {
	entries, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return nil
	}
	var ports []Port
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n <= 0 {
			continue
		}
		pdir := filepath.Join(dir, "ports", e.Name())
		p := Port{Number: n}
		if v, err := readAttr(filepath.Join(pdir, "state")); err == nil {
			st, _ := splitNumbered(v)
			if st >= 0 && st <= 255 {
				p.State = PortState(st)
			}
		}
		if v, err := readAttr(filepath.Join(pdir, "phys_state")); err == nil {
			_, p.PhysState = splitNumbered(v)
		}
		p.LinkLayer, _ = readAttr(filepath.Join(pdir, "link_layer"))
		p.GIDs = readGIDs(pdir)
		ports = append(ports, p)
	}
	slices.SortFunc(ports, func(a, b Port) int { return cmp.Compare(a.Number, b.Number) })
	return ports
}

// readGIDs reads the non-empty entries of pdir/gids.
func readGIDs(pdir string) []GID {
	entries, err := os.ReadDir(filepath.Join(pdir, "gids"))
	if err != nil {
		return nil
	}
	var gids []GID
	for _, e := range entries {
		i, err := strconv.Atoi(e.Name())
		if err != nil || i < 0 {
			continue
		}
		v, err := readAttr(filepath.Join(pdir, "gids", e.Name()))
		if err != nil {
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is6() || a.IsUnspecified() {
			continue
		}
		g := GID{Index: i, GID: a}
		g.Type, _ = readAttr(filepath.Join(pdir, "gid_attrs", "types", e.Name()))
		gids = append(gids, g)
	}
	slices.SortFunc(gids, func(a, b GID) int { return cmp.Compare(a.Index, b.Index) })
	return gids
}

// mergeNetlink fills in what RDMA netlink knows better than sysfs: the
// driver id (and the uverbs node, when sysfs did not show one).
func mergeNetlink(devs []Device, nl []NetlinkDevice) []Device {
	byName := map[string]NetlinkDevice{}
	for _, n := range nl {
		byName[n.Name] = n
	}
	for i := range devs {
		n, ok := byName[devs[i].Name]
		if !ok {
			continue
		}
		if n.HasDriverID {
			devs[i].DriverID, devs[i].DriverIDSource = n.DriverID, "netlink"
		}
		if devs[i].Uverbs == "" && n.Chardev != "" {
			devs[i].Uverbs = n.Chardev
			devs[i].UverbsPath = "/dev/infiniband/" + n.Chardev
		}
		if devs[i].ABIVersion < 0 && n.HasChardev {
			devs[i].ABIVersion = int(n.ChardevABI)
		}
	}
	return devs
}
