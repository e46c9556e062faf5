package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// DeviceFlag is the -device flag: a selector in simdevice.ParseSelector's
// grammar, checked when it is set. Without the flag, Selection reads
// GAUDI_DEVICE.
type DeviceFlag struct {
	text string
	set  bool
}

// Set implements flag.Value.
func (f *DeviceFlag) Set(v string) error {
	if _, err := simdevice.ParseSelector(v); err != nil {
		return err
	}
	f.text, f.set = v, true
	return nil
}

// String implements flag.Value.
func (f *DeviceFlag) String() string {
	if f == nil {
		return ""
	}
	return f.text
}

// getenv reads the environment; tests replace it.
var getenv = os.Getenv

// Selection returns what the flag selects: its value when it was given,
// else GAUDI_DEVICE's when that is set, else the default (every Gaudi of
// the machine, else the simulator's devices). A bad GAUDI_DEVICE is an
// error naming the variable and matching device.ErrBadSelector.
func (f *DeviceFlag) Selection() (Selection, error) {
	if f != nil && f.set {
		return ParseSelection("-device", f.text)
	}
	if v := getenv("GAUDI_DEVICE"); v != "" {
		return ParseSelection("GAUDI_DEVICE", v)
	}
	return Selection{}, nil
}

// ParseSelection reads text, a selector in simdevice.ParseSelector's
// grammar, that came from from: "-device" for the flag, else the name of
// the variable that held it, such as "GAUDI_DEVICE". Messages about the
// selection name it ("-device 3", "GAUDI_DEVICE=3"). An error names from
// and matches device.ErrBadSelector.
func ParseSelection(from, text string) (Selection, error) {
	s, err := simdevice.ParseSelector(text)
	if err != nil {
		return Selection{}, fmt.Errorf("%s: %w", from, err)
	}
	return Selection{Selector: s, Text: text, From: from}, nil
}

// Selection is a device selector and where it came from.
type Selection struct {
	// Selector is the parsed selector.
	Selector simdevice.Selector
	// Text is the selector as given, "" for the default.
	Text string
	// From is "-device", "GAUDI_DEVICE", or "" for the default.
	From string
}

// Default reports whether nothing chose a device: every Gaudi of the
// machine (Open takes the first free one), else the simulator's devices.
func (s Selection) Default() bool { return s.Text == "" }

// origin names where the selection came from, for messages:
// "-device 3", "GAUDI_DEVICE=3" or "default".
func (s Selection) origin() string {
	switch s.From {
	case "-device":
		return "-device " + s.Text
	case "":
		return "default"
	}
	return s.From + "=" + s.Text
}

// Why says why d, opened from s, was chosen: "the simulator (-device
// sim)", "hardware (GAUDI_DEVICE=3)", "the simulator (no Gaudi found;
// -device or GAUDI_DEVICE chooses)".
func (s Selection) Why(d *device.Device) string {
	kind := "hardware"
	if d.Simulated() {
		kind = "the simulator"
	}
	if s.Default() {
		if d.Simulated() {
			return kind + " (no Gaudi found; -device or GAUDI_DEVICE chooses)"
		}
		return kind + " (the first free Gaudi; -device or GAUDI_DEVICE chooses)"
	}
	return kind + " (" + s.origin() + ")"
}

// thisMachine is the sysfs of this machine: /sys, or the tree of served
// devices GAUDI_ROOT names (device.RootEnv).
var thisMachine = device.SysFS{}

// hardwareNodes lists the Gaudi devices sys shows; tests replace it.
var hardwareNodes = func(sys device.SysFS) ([]device.Node, error) { return sys.Nodes() }

// noHardware is the error for a hardware selector on a machine without
// a Gaudi.
func (s Selection) noHardware() error {
	return fmt.Errorf("%s: no Gaudi on this machine to match %q (the simulator's devices are sim and sim:N): %w",
		s.origin(), s.Text, device.ErrNoDevice)
}

// Open opens the compute node s selects. The default is the first free
// Gaudi, else the first free simulated device; "sim" and "sim:N" open
// simulated devices; every other selector opens hardware only, and on a
// machine without a Gaudi is an error matching device.ErrNoDevice that
// names the simulator's selectors. A device another process owns gives an
// error matching unix.EBUSY that names the owner, and when none of the
// devices a selector names is free, the error names their owners ("open
// sim: every simulated device is in use: no gaudi device (sim:accel0
// held by pid 1234 (hlperf))").
func (s Selection) Open() (*device.Device, error) {
	d, err := s.open()
	if errors.Is(err, device.ErrNoDevice) {
		err = s.namesHolders(err)
	}
	return d, err
}

// open is Open without naming the owners of busy devices.
func (s Selection) open() (*device.Device, error) {
	if s.Selector.Sim {
		// A device the simulator does not have is refused as Devices
		// refuses it, in the same words.
		if _, err := simCandidates(s); err != nil {
			return nil, err
		}
		d, err := simdevice.Open(s.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.origin(), namesHolder(err))
		}
		return d, nil
	}
	nodes, err := hardwareNodes(thisMachine)
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	if len(nodes) == 0 {
		if s.Default() {
			return simdevice.Open("sim")
		}
		return nil, s.noHardware()
	}
	d, err := device.Open(s.Text)
	if err != nil && !s.Default() {
		return nil, fmt.Errorf("%s: %w", s.origin(), namesHolder(err))
	}
	return d, namesHolder(err)
}

// Candidate is one device a Selection names: a Gaudi of this machine or
// a device of the process's simulator.
type Candidate struct {
	// Name is the compute node: "/dev/accel/accel0", or "sim:accel0".
	Name string
	// Node describes a Gaudi; its zero value for a simulated device.
	Node device.Node
	// Sim is the simulated device, nil for a Gaudi.
	Sim *sim.Device
}

// Simulated reports whether c is a simulated device.
func (c Candidate) Simulated() bool { return c.Sim != nil }

// Open opens c's compute node: under GAUDI_ROOT when it is set, as
// Selection.Open finds it (the node hlsim serve serves there). A device
// another process owns gives an error matching unix.EBUSY that names the
// owner ("held by pid 1234 (hlperf)"), as Selection.Open's does.
func (c Candidate) Open() (*device.Device, error) {
	var d *device.Device
	var err error
	if c.Sim != nil {
		d, err = simdevice.OpenSim(c.Sim)
	} else {
		d, err = device.Open(onThisMachine(c.Node.Path))
	}
	return d, namesHolder(err)
}

// onThisMachine is where this machine has the node the kernel names path
// (/dev/accel/accel0): under GAUDI_ROOT when it is set, as device.Open
// finds the nodes it discovers.
func onThisMachine(path string) string {
	return filepath.Join(thisMachine.RootDir(), path)
}

// OpenControl opens c's control node, which works while another process
// owns the device.
func (c Candidate) OpenControl() (*device.Device, error) {
	if c.Sim != nil {
		return simdevice.OpenSimControl(c.Sim)
	}
	if c.Node.ControlPath == "" {
		return nil, fmt.Errorf("%s has no control node yet: %w", c.Name, device.ErrNoDevice)
	}
	return device.OpenControl(onThisMachine(c.Node.ControlPath))
}

// Devices lists every device s names, for commands that work on several
// (hlperf -all, hlinfo, hlexporter): the default names every Gaudi of the
// machine, or every simulated device when it has none; "sim" every
// simulated device; "sim:N" that one; "gaudi2" every Gaudi2; an index, a
// PCI address, a module id or a path the one device it matches. Whether
// a device is free is not checked. A selector that names no device is an
// error matching device.ErrNoDevice, and a hardware selector on a machine
// without a Gaudi is the same error as for Open.
func (s Selection) Devices() ([]Candidate, error) { return s.DevicesIn(thisMachine) }

// DevicesIn is Devices over the Gaudi devices sys shows rather than this
// machine's: a copy of another machine's sysfs, or a test's fixture tree.
// The candidates name the device nodes that sysfs gives, which are paths
// of this machine: a caller that must not reach this machine's devices
// opens them itself rather than with Candidate.Open and OpenControl.
func (s Selection) DevicesIn(sys device.SysFS) ([]Candidate, error) {
	if s.Selector.Sim {
		return simCandidates(s)
	}
	nodes, err := hardwareNodes(sys)
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	if len(nodes) == 0 {
		if s.Default() {
			return simCandidates(Selection{Selector: simdevice.Selector{Sim: true, SimIndex: -1}})
		}
		return nil, s.noHardware()
	}
	var out []Candidate
	for _, n := range nodes {
		if s.Selector.Device.Matches(n) {
			out = append(out, Candidate{Name: n.Path, Node: n})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no Gaudi matches: %w", s.origin(), device.ErrNoDevice)
	}
	return out, nil
}

// simCandidates lists the simulated devices s names.
func simCandidates(s Selection) ([]Candidate, error) {
	sys, err := simdevice.System()
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, sd := range sys.Devices() {
		if s.Selector.SimIndex < 0 || sd.Index() == s.Selector.SimIndex {
			out = append(out, Candidate{Name: sd.Name(), Sim: sd})
		}
	}
	if len(out) == 0 {
		return nil, NoSimDevice(s.origin(), len(sys.Devices()))
	}
	return out, nil
}

// NoSimDevice is the error for a simulated device the simulator does not
// have, in the words every command uses: "-device sim:7: no such device:
// the simulator has 2 devices, sim:0 to sim:1 (GAUDI_SIM sets how many)".
// from names where the selector came from; n is how many devices the
// simulator has. It matches device.ErrNoDevice.
func NoSimDevice(from string, n int) error {
	has := "no devices"
	switch n {
	case 0:
	case 1:
		has = "1 device, sim:0"
	default:
		has = fmt.Sprintf("%d devices, sim:0 to sim:%d", n, n-1)
	}
	return fmt.Errorf("%s: %w: the simulator has %s (GAUDI_SIM sets how many)", from, device.ErrNoDevice, has)
}
