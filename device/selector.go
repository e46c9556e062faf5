package device

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrBadSelector reports a device selector that does not parse. Every
// error of ParseSelector, and of Open and OpenControl for a bad selector,
// matches it (they are *SelectorError values).
var ErrBadSelector = errors.New("bad device selector")

// SelectorError describes a device selector that does not parse.
type SelectorError struct {
	// Input is the selector as given.
	Input string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *SelectorError) Error() string {
	return "bad device selector " + strconv.Quote(e.Input) + ": " + e.Reason
}

// Is reports whether target is ErrBadSelector.
func (e *SelectorError) Is(target error) bool { return target == ErrBadSelector }

// SelectorKind says what a Selector names.
type SelectorKind int

const (
	// SelectFirst is the empty selector: the first free compute device
	// (for OpenControl, the first device with a control node).
	SelectFirst SelectorKind = iota
	// SelectIndex is a device number: N of accelN or hlN.
	SelectIndex
	// SelectPCI is a PCI address.
	SelectPCI
	// SelectModule is a module id, as the driver's module_id attribute
	// reports it (the OAM slot on HLS servers).
	SelectModule
	// SelectPath is a device node.
	SelectPath
	// SelectASIC is a chip: the first free device of that chip.
	SelectASIC
)

// String returns the kind's name, such as "index".
func (k SelectorKind) String() string {
	switch k {
	case SelectFirst:
		return "first"
	case SelectIndex:
		return "index"
	case SelectPCI:
		return "pci"
	case SelectModule:
		return "module"
	case SelectPath:
		return "path"
	case SelectASIC:
		return "asic"
	}
	return "SelectorKind(" + strconv.Itoa(int(k)) + ")"
}

// Selector names the device Open or OpenControl opens; ParseSelector reads
// one from text. Only the fields of its Kind are set.
type Selector struct {
	Kind SelectorKind
	// Index is N of accelN or hlN (SelectIndex).
	Index int
	// PCIAddress is the PCI function in the kernel's form, lowercase with
	// the domain: "0000:19:00.0" (SelectPCI).
	PCIAddress string
	// Module is the module id (SelectModule).
	Module int
	// Path is the device node, cleaned (SelectPath).
	Path string
	// ASIC is the chip (SelectASIC). Gaudi matches every first-generation
	// Gaudi (GaudiSec too), Gaudi2 every Gaudi2 revision, Gaudi3 the
	// HL-338 too, and Gaudi2B, Gaudi2C, Gaudi2D and Gaudi3HL338 that chip
	// only.
	ASIC ASIC
}

// String returns s in the form ParseSelector reads, such as "3",
// "0000:19:00.0", "module:2", "/dev/accel/accel0" or "gaudi2"; the empty
// string for SelectFirst.
func (s Selector) String() string {
	switch s.Kind {
	case SelectFirst:
		return ""
	case SelectIndex:
		return strconv.Itoa(s.Index)
	case SelectPCI:
		return s.PCIAddress
	case SelectModule:
		return "module:" + strconv.Itoa(s.Module)
	case SelectPath:
		return s.Path
	case SelectASIC:
		for name, a := range asicNames {
			if a == s.ASIC {
				return name
			}
		}
		return strings.ToLower(s.ASIC.String())
	}
	return "Selector(" + s.Kind.String() + ")"
}

// describe names what s selects, for error messages.
func (s Selector) describe() string {
	switch s.Kind {
	case SelectFirst:
		return "first free device"
	case SelectIndex:
		return "device " + s.String()
	case SelectASIC:
		return "first free " + s.ASIC.String()
	}
	return s.String()
}

// asicNames are the chip names a selector accepts, in lowercase.
var asicNames = map[string]ASIC{
	"gaudi":       Gaudi,
	"gaudi2":      Gaudi2,
	"gaudi2b":     Gaudi2B,
	"gaudi2c":     Gaudi2C,
	"gaudi2d":     Gaudi2D,
	"gaudi3":      Gaudi3,
	"gaudi3hl338": Gaudi3HL338,
}

// ParseSelector reads a device selector, the text Open and OpenControl
// take and GAUDI_DEVICE holds (package simdevice):
//
//	""                   the first free compute device
//	"N"                  device N: /dev/accel/accelN, or /dev/hlN on old kernels
//	"DDDD:BB:DD.F"       the device at a PCI address (hex, any case);
//	"BB:DD.F"            the same in domain 0000
//	"module:N"           the device whose module id is N (its OAM slot)
//	"/dev/accel/accelN"  a device node by absolute path; also /dev/hlN,
//	                     and control nodes (accel_controlDN, hl_controlDN)
//	                     for OpenControl
//	"gaudi", "gaudi2",   the first free device of that chip; "gaudi2b",
//	"gaudi3"             "gaudi2c" and "gaudi2d" name one Gaudi2 revision,
//	                     "gaudi3hl338" the HL-338 Gaudi3
//
// Numbers are decimal without a sign. The simulator's "sim" and "sim:N"
// are not part of this grammar: package simdevice reads them. Errors are
// *SelectorError values that match ErrBadSelector.
func ParseSelector(s string) (Selector, error) {
	bad := func(reason string) (Selector, error) {
		return Selector{}, &SelectorError{Input: s, Reason: reason}
	}
	switch {
	case s == "":
		return Selector{}, nil
	case isDigits(s):
		n, err := strconv.Atoi(s)
		if err != nil {
			return bad("device index out of range")
		}
		return Selector{Kind: SelectIndex, Index: n}, nil
	case strings.HasPrefix(s, "/"):
		return Selector{Kind: SelectPath, Path: filepath.Clean(s)}, nil
	case s == "sim" || strings.HasPrefix(s, "sim:"):
		return bad("simulated devices are opened through package simdevice")
	}
	if rest, ok := strings.CutPrefix(s, "module:"); ok {
		if !isDigits(rest) {
			return bad("want module:N with a decimal module id")
		}
		n, err := strconv.Atoi(rest)
		if err != nil {
			return bad("module id out of range")
		}
		return Selector{Kind: SelectModule, Module: n}, nil
	}
	if strings.Contains(s, ":") {
		addr := strings.ToLower(s)
		if strings.Count(addr, ":") == 1 {
			addr = "0000:" + addr
		}
		if !isPCIAddress(addr) {
			return bad("not a PCI address (want DDDD:BB:DD.F or BB:DD.F)")
		}
		return Selector{Kind: SelectPCI, PCIAddress: addr}, nil
	}
	if a, ok := asicNames[strings.ToLower(s)]; ok {
		return Selector{Kind: SelectASIC, ASIC: a}, nil
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return bad("want a device index without a sign")
	}
	return bad(`want "", an index, a PCI address, module:N, an absolute device path or a chip name (gaudi, gaudi2, gaudi3)`)
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Matches reports whether node n is one s selects, as Open and
// OpenControl choose: any node for SelectFirst, the node of that index,
// PCI address, module id or chip, and for SelectPath the node whose
// compute or control node is that path. A node whose PCI address is
// unknown matches no PCI selector, and one without a module id
// (ModuleID -1) no module selector.
func (s Selector) Matches(n Node) bool {
	switch s.Kind {
	case SelectFirst:
		return true
	case SelectIndex:
		return n.Index == s.Index
	case SelectPCI:
		return n.PCIAddress != "" && n.PCIAddress == s.PCIAddress
	case SelectModule:
		return n.ModuleID >= 0 && n.ModuleID == s.Module
	case SelectPath:
		return n.Path == s.Path || n.ControlPath != "" && n.ControlPath == s.Path
	case SelectASIC:
		a := ASICFromPCI(uint32(n.DeviceID), n.Revision)
		switch s.ASIC {
		case Gaudi:
			return a.IsGaudi()
		case Gaudi2:
			return a.IsGaudi2()
		case Gaudi3:
			return a.IsGaudi3()
		}
		return a == s.ASIC
	}
	return false
}

// controlPath returns the control node that belongs to the compute node
// path, by the kernel's naming (/dev/accel/accelN has
// /dev/accel/accel_controlDN, /dev/hlN has /dev/hl_controlDN), and
// whether path is a control node itself.
func controlPath(path string) (ctl string, isControl bool) {
	dir, base := filepath.Split(path)
	for _, p := range [][2]string{{"accel", "accel_controlD"}, {"hl", "hl_controlD"}} {
		if _, ok := parseIndex(base, p[1]); ok {
			return path, true
		}
		if n, ok := parseIndex(base, p[0]); ok {
			return dir + p[1] + strconv.Itoa(n), false
		}
	}
	return "", false
}
