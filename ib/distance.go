package ib

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gaudi-go/gaudi/device"
)

// Distance classifies the PCIe path between a NIC and a Gaudi, best
// first. Traffic between devices under the same switch need not cross the
// root complex; under the same root port it crosses one port; within a
// NUMA node it crosses the root complex but not the socket interconnect.
type Distance int

// Distances, best first.
const (
	// SameSwitch: both sit below one PCIe switch.
	SameSwitch Distance = iota + 1
	// SameRootPort: both sit below one root port, not below a common
	// switch.
	SameRootPort
	// SameNUMA: different root ports on the same NUMA node.
	SameNUMA
	// Other: different NUMA nodes, or a topology sysfs does not show
	// (software NICs, unknown NUMA nodes).
	Other
)

// String returns "same-switch", "same-root-port", "same-numa" or
// "other".
func (d Distance) String() string {
	switch d {
	case SameSwitch:
		return "same-switch"
	case SameRootPort:
		return "same-root-port"
	case SameNUMA:
		return "same-numa"
	case Other:
		return "other"
	}
	return fmt.Sprintf("Distance(%d)", int(d))
}

// pciChain returns the path of PCI function addr from its host bridge:
// ["pci0000:17", "0000:17:02.0", ..., addr], read from the
// /sys/bus/pci/devices/<addr> link.
func (s SysFS) pciChain(addr string) ([]string, error) {
	if !isPCIAddress(addr) {
		return nil, fmt.Errorf("pci address %q: %w", addr, ErrNoDevice)
	}
	t, err := os.Readlink(s.path("sys/bus/pci/devices", addr))
	if err != nil {
		return nil, fmt.Errorf("pci device %s: %w", addr, err)
	}
	parts := strings.Split(t, "/")
	i := slices.IndexFunc(parts, func(p string) bool { return strings.HasPrefix(p, "pci") && !isPCIAddress(p) })
	if i < 0 || parts[len(parts)-1] != addr {
		return nil, fmt.Errorf("pci device %s: unexpected sysfs path %q", addr, t)
	}
	return parts[i:], nil
}

// Distance classifies the PCIe path between the NIC at PCI address nic
// and the Gaudi at gaudi.
func (s SysFS) Distance(nic, gaudi string) (Distance, error) {
	a, err := s.pciChain(nic)
	if err != nil {
		return Other, err
	}
	b, err := s.pciChain(gaudi)
	if err != nil {
		return Other, err
	}
	// Common ancestors, not counting the devices themselves.
	pa, pb := a[:len(a)-1], b[:len(b)-1]
	common := 0
	for common < len(pa) && common < len(pb) && pa[common] == pb[common] {
		common++
	}
	switch {
	case common >= 3: // host bridge, root port and a switch port
		return SameSwitch, nil
	case common == 2: // host bridge and root port
		return SameRootPort, nil
	}
	na := readInt(s.path("sys/bus/pci/devices", nic, "numa_node"), -1)
	nb := readInt(s.path("sys/bus/pci/devices", gaudi, "numa_node"), -1)
	if na >= 0 && na == nb {
		return SameNUMA, nil
	}
	return Other, nil
}

// NICDistance is a NIC with its distance to one Gaudi.
type NICDistance struct {
	NIC      Device   // the NIC
	Distance Distance // its distance to the Gaudi
}

// NICsFor orders nics by their distance to the Gaudi at PCI address
// gaudi, closest first (ties by name). NICs without a PCI function, and
// NICs whose path cannot be read, are Other.
func (s SysFS) NICsFor(gaudi string, nics []Device) []NICDistance {
	out := make([]NICDistance, 0, len(nics))
	for _, n := range nics {
		d := Other
		if n.PCIAddress != "" {
			if v, err := s.Distance(n.PCIAddress, gaudi); err == nil {
				d = v
			}
		}
		out = append(out, NICDistance{NIC: n, Distance: d})
	}
	slices.SortStableFunc(out, func(x, y NICDistance) int {
		return cmp.Or(cmp.Compare(x.Distance, y.Distance), cmp.Compare(x.NIC.Name, y.NIC.Name))
	})
	return out
}

// NICsForNode orders nics by their distance to the Gaudi n on the live
// system; see SysFS.NICsFor.
func NICsForNode(n device.Node, nics []Device) []NICDistance {
	return SysFS{}.NICsFor(n.PCIAddress, nics)
}
