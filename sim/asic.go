package sim

import "fmt"

// ASIC is the kind of chip a simulated device is.
type ASIC int

const (
	// Gaudi2 is the second-generation Gaudi (PCI device id 0x1020), the
	// default.
	Gaudi2 ASIC = iota
	// Gaudi is the first-generation Gaudi (PCI device id 0x1000).
	Gaudi
)

// String returns the name the driver's device_type attribute uses.
func (a ASIC) String() string {
	switch a {
	case Gaudi2:
		return "GAUDI2"
	case Gaudi:
		return "GAUDI"
	}
	return fmt.Sprintf("ASIC(%d)", int(a))
}

// ParseASIC parses "gaudi2" or "gaudi" (any case).
func ParseASIC(s string) (ASIC, error) {
	switch s {
	case "gaudi2", "GAUDI2", "Gaudi2":
		return Gaudi2, nil
	case "gaudi", "GAUDI", "Gaudi":
		return Gaudi, nil
	}
	return 0, fmt.Errorf("unknown ASIC %q (want gaudi2 or gaudi)", s)
}
