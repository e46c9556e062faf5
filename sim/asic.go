package sim

import (
	"fmt"
	"strings"
)

// ASIC is the kind of chip a simulated device is.
type ASIC int

const (
	// Gaudi2 is the second-generation Gaudi (PCI device id 0x1020), the
	// default.
	Gaudi2 ASIC = iota
	// Gaudi is the first-generation Gaudi (PCI device id 0x1000).
	Gaudi
	// Gaudi3 is the third-generation Gaudi (PCI device id 0x1060), which
	// only Intel's out-of-tree driver supports: a Gaudi3 device always
	// behaves as that driver (DriverOutOfTree).
	Gaudi3
)

// String returns the name the driver's device_type attribute uses.
func (a ASIC) String() string {
	switch a {
	case Gaudi2:
		return "GAUDI2"
	case Gaudi:
		return "GAUDI"
	case Gaudi3:
		return "GAUDI3"
	}
	return fmt.Sprintf("ASIC(%d)", int(a))
}

// ParseASIC parses "gaudi2", "gaudi" or "gaudi3" (any case).
func ParseASIC(s string) (ASIC, error) {
	switch strings.ToLower(s) {
	case "gaudi2":
		return Gaudi2, nil
	case "gaudi":
		return Gaudi, nil
	case "gaudi3":
		return Gaudi3, nil
	}
	return 0, fmt.Errorf("unknown ASIC %q (want gaudi2, gaudi or gaudi3)", s)
}
