package device

import (
	"fmt"

	"github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// ASIC is the kind of Gaudi chip a device is.
type ASIC int

// The chips the habanalabs driver knows, told apart by PCI device id and,
// for Gaudi2, PCI revision (the driver's get_asic_type). Gaudi3 and
// Gaudi3HL338 are served by the out-of-tree driver only; its get_asic_type
// (common/habanalabs_drv.c at 4058b6e1) ignores the revision on Gaudi3.
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
	Gaudi3HL338
)

// PCI identity of Habana Labs devices.
const (
	PCIVendorHabana = 0x1da3

	PCIDeviceGoya     = 0x0001
	PCIDeviceGaudi    = 0x1000
	PCIDeviceGaudiSec = 0x1010
	PCIDeviceGaudi2   = 0x1020
	// PCIDeviceGaudi3 is served by the out-of-tree driver only, as are the
	// other Gaudi3 ids (include/common/pci_ids.h at 08bf146e). That
	// driver binds PCIDeviceGaudi3 and PCIDeviceGaudi3HL338; it lists the
	// die-1 and single-die ids but binds neither, so ASICFromPCI does not
	// know them either.
	PCIDeviceGaudi3          = gaudi3.PCI_IDS_GAUDI3
	PCIDeviceGaudi3Die1      = gaudi3.PCI_IDS_GAUDI3_DIE1
	PCIDeviceGaudi3SingleDie = gaudi3.PCI_IDS_GAUDI3_SINGLE_DIE
	PCIDeviceGaudi3HL338     = gaudi3.PCI_IDS_GAUDI3_HL_338
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
	case PCIDeviceGaudi3HL338:
		return Gaudi3HL338
	}
	return ASICUnknown
}

// String returns the name the driver's device_type attribute uses, such as
// "GAUDI2B" or "GAUDI3 HL-338" (common/sysfs.c, device_type_show).
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
	case Gaudi3HL338:
		return "GAUDI3 HL-338"
	case ASICUnknown:
		return "unknown"
	}
	return fmt.Sprintf("ASIC(%d)", int(a))
}

// IsGaudi2 reports whether the chip is any Gaudi2 revision.
func (a ASIC) IsGaudi2() bool { return a >= Gaudi2 && a <= Gaudi2D }

// IsGaudi reports whether the chip is a first-generation Gaudi.
func (a ASIC) IsGaudi() bool { return a == Gaudi || a == GaudiSec }

// IsGaudi3 reports whether the chip is a Gaudi3, the HL-338 included.
func (a ASIC) IsGaudi3() bool { return a == Gaudi3 || a == Gaudi3HL338 }
