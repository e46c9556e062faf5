package gohlml

import (
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/device"
)

// pciAddr returns the device's PCI address (sysfs, or the node's file for
// devices without sysfs), split in its parts.
func (d Device) pciAddr() (domain, bus uint64, addr string, err error) {
	h, err := d.handle()
	if err != nil {
		return 0, 0, "", err
	}
	// "DDDD:BB:SS.F" (drivers/pci/probe.c, pci_setup_device's dev_set_name).
	f := strings.Split(h.pciAddress, ":")
	if len(f) != 3 {
		return 0, 0, "", ErrNotSupported
	}
	domain, err1 := strconv.ParseUint(f[0], 16, 32)
	bus, err2 := strconv.ParseUint(f[1], 16, 8)
	if err1 != nil || err2 != nil {
		return 0, 0, "", ErrNotSupported
	}
	return domain, bus, h.pciAddress, nil
}

// PCIDomain returns the PCI domain of the device's function.
func (d Device) PCIDomain() (uint, error) {
	dom, _, _, err := d.pciAddr()
	return uint(dom), err
}

// PCIBus returns the PCI bus of the device's function.
func (d Device) PCIBus() (uint, error) {
	_, bus, _, err := d.pciAddr()
	return uint(bus), err
}

// PCIBusID returns the PCI address of the device's function, such as
// "0000:19:00.0" (the sysfs device link, or pci_addr).
func (d Device) PCIBusID() (string, error) {
	_, _, addr, err := d.pciAddr()
	return addr, err
}

// PCIID returns the PCI identity as HLML's hlml_pci_info_t.pci_device_id
// holds it, "the combined 16b deviceId and 16b vendor id" (gohlml's
// hlml.h): the device id in the high half, the vendor id 0x1da3 in the
// low half, such as 0x10201da3 for Gaudi2 (the device plugin logs it with
// %x). The device id is sysfs "device" of the function, else INFO
// HW_IP_INFO device_id.
func (d Device) PCIID() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	id := uint(h.node.DeviceID)
	if !h.hasNode || id == 0 {
		dev, err := d.ctl("pci id")
		if err != nil {
			return 0, err
		}
		id = uint(dev.HWIPInfo().DeviceID)
	}
	return id<<16 | device.PCIVendorHabana, nil
}

// linkSpeed reads the function's current_link_speed (drivers/pci/
// pci-sysfs.c, printed by pci_speed_string as "16.0 GT/s PCIe") in GT/s.
func (d Device) linkSpeed() (float64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	s := readAttr(h.pciDir, "current_link_speed")
	num, _, found := strings.Cut(s, " GT/s")
	v, perr := strconv.ParseFloat(num, 64)
	if !found || perr != nil || v <= 0 {
		return 0, ErrNotSupported
	}
	return v, nil
}

// PCILinkSpeed returns the PCIe link's current speed in whole GT/s (2 for
// 2.5 GT/s), from sysfs current_link_speed; ErrNotSupported when sysfs
// does not show it or says "Unknown".
func (d Device) PCILinkSpeed() (uint, error) {
	v, err := d.linkSpeed()
	return uint(v), err
}

// PCILinkWidth returns the PCIe link's current lane count (sysfs
// current_link_width); ErrNotSupported when sysfs does not show it or the
// link is down.
func (d Device) PCILinkWidth() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseUint(readAttr(h.pciDir, "current_link_width"), 10, 32)
	if perr != nil || v == 0 {
		return 0, ErrNotSupported
	}
	return uint(v), nil
}

// PCIeLinkWidth is PCILinkWidth.
func (d Device) PCIeLinkWidth() (uint, error) { return d.PCILinkWidth() }

// PCIeLinkGeneration returns the PCIe generation of the link's current
// speed (sysfs current_link_speed: 2.5 GT/s is generation 1, 5 is 2, 8 is
// 3, 16 is 4, 32 is 5, 64 is 6; the PCIe base specifications' rates).
func (d Device) PCIeLinkGeneration() (uint, error) {
	v, err := d.linkSpeed()
	if err != nil {
		return 0, err
	}
	for gen, rate := range []float64{2.5, 5, 8, 16, 32, 64} {
		if v == rate {
			return uint(gen + 1), nil
		}
	}
	return 0, ErrNotSupported
}

// pciCounters returns INFO PCI_COUNTERS.
func (d Device) pciCounters() (device.PCICounters, error) {
	dev, err := d.ctl("pci counters")
	if err != nil {
		return device.PCICounters{}, err
	}
	c, err := dev.PCICounters()
	return c, driverError("pci counters", err)
}

// PCIeTX returns the PCIe transmit throughput the firmware measured (INFO
// PCI_COUNTERS tx_throughput).
func (d Device) PCIeTX() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.TX), err
}

// PCIeRX returns the PCIe receive throughput the firmware measured (INFO
// PCI_COUNTERS rx_throughput).
func (d Device) PCIeRX() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.RX), err
}

// PCIReplayCounter returns the link's replay count (INFO PCI_COUNTERS
// replay_cnt).
func (d Device) PCIReplayCounter() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.Replays), err
}

// NumaNode returns the NUMA node of the device's PCI function (sysfs
// numa_node), or nil, nil when the kernel knows none (-1) or sysfs does
// not show it, as gohlml does.
func (d Device) NumaNode() (*uint, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	n := -1
	if h.hasNode {
		n = h.node.NUMANode
	}
	if n < 0 {
		return nil, nil
	}
	v := uint(n)
	return &v, nil
}
