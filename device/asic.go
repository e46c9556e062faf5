package device

import "fmt"

// ASIC is the kind of Gaudi chip a device is.
type ASIC int

// The chips the habanalabs driver knows, told apart by PCI device id and,
// for Gaudi2, PCI revision (the driver's get_asic_type).
const (
	ASICUnknown ASIC = iota
	Goya
	Gaudi
	GaudiSec
	Gaudi2
	Gaudi2B
	Gaudi2C
	Gaudi2D
	Gaudi3
)

// PCI identity of Habana Labs devices.
const (
	PCIVendorHabana = 0x1da3

	PCIDeviceGoya     = 0x0001
	PCIDeviceGaudi    = 0x1000
	PCIDeviceGaudiSec = 0x1010
	PCIDeviceGaudi2   = 0x1020
	// PCIDeviceGaudi3 is served by the out-of-tree driver only.
	PCIDeviceGaudi3 = 0x1060
)

// ASICFromPCI identifies the chip from its PCI device id and revision.
func ASICFromPCI(deviceID uint32, revision uint8) ASIC {
	switch deviceID {
	case PCIDeviceGoya:
		return Goya
	case PCIDeviceGaudi:
		return Gaudi
	case PCIDeviceGaudiSec:
		return GaudiSec
	case PCIDeviceGaudi2:
		switch revision {
		case 1:
			return Gaudi2
		case 2:
			return Gaudi2B
		case 3:
			return Gaudi2C
		case 4:
			return Gaudi2D
		}
	case PCIDeviceGaudi3:
		return Gaudi3
	}
	return ASICUnknown
}

// String returns the name the driver's device_type attribute uses, such as
// "GAUDI2B".
func (a ASIC) String() string {
	switch a {
	case Goya:
		return "GOYA"
	case Gaudi:
		return "GAUDI"
	case GaudiSec:
		return "GAUDI SEC"
	case Gaudi2:
		return "GAUDI2"
	case Gaudi2B:
		return "GAUDI2B"
	case Gaudi2C:
		return "GAUDI2C"
	case Gaudi2D:
		return "GAUDI2D"
	case Gaudi3:
		return "GAUDI3"
	case ASICUnknown:
		return "unknown"
	}
	return fmt.Sprintf("ASIC(%d)", int(a))
}

// IsGaudi2 reports whether the chip is any Gaudi2 revision.
func (a ASIC) IsGaudi2() bool { return a >= Gaudi2 && a <= Gaudi2D }

// IsGaudi reports whether the chip is a first-generation Gaudi.
func (a ASIC) IsGaudi() bool { return a == Gaudi || a == GaudiSec }
