package gohlml

import (
	"errors"

	"github.com/gaudi-go/gaudi/device"
)

// MacAddressInfo returns the device's NIC ports by number, "external" for
// those used for scale-out and "internal" for the others: INFO HW_IP_INFO
// nic_ports_mask and nic_ports_external_mask of the out-of-tree driver.
// The kernel's driver reserves those bytes: ErrNotSupported.
func (d Device) MacAddressInfo() (map[int]string, error) {
	dev, err := d.ctl("nic ports")
	if err != nil {
		return nil, err
	}
	info, err := dev.DriverInfo()
	if err != nil {
		return nil, driverError("driver", err)
	}
	if info.Driver != device.DriverOutOfTree {
		return nil, ErrNotSupported
	}
	hw := dev.HWIPInfo()
	ports := make(map[int]string)
	for p := range BITSPerLong {
		switch bit := uint64(1) << p; {
		case hw.NICPortsMask&bit == 0:
		case hw.NICPortsExternalMask&bit != 0:
			ports[p] = "external"
		default:
			ports[p] = "internal"
		}
	}
	return ports, nil
}

// NicLinkStatus returns 1 when NIC port port's link is up, 0 when down
// (INFO HABANA_LINK_STATE of the out-of-tree driver). It is
// ErrNotSupported on the kernel's driver, and where the driver's NIC is
// not initialized (the op's EFAULT, device.ErrNoNIC).
func (d Device) NicLinkStatus(port uint) (uint, error) {
	dev, err := d.ctl("nic link")
	if err != nil {
		return 0, err
	}
	s, err := dev.LinkState(uint32(port))
	if errors.Is(err, device.ErrNoNIC) {
		// The driver's NIC is not initialized: it gives no link state.
		return 0, ErrNotSupported
	}
	if err != nil {
		return 0, driverError("nic link", err)
	}
	if s.Up {
		return 1, nil
	}
	return 0, nil
}
