package devstat

import (
	"fmt"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// Options says what Collect reads.
type Options struct {
	// Selector chooses devices in GAUDI_DEVICE's grammar (see Select);
	// "" is every device.
	Selector string
	// Root is the directory that holds sys/ and proc/; "" is "/". Tests
	// point it at a fixture tree.
	Root string
	// Details adds every other INFO value (Device.Details).
	Details bool
	// Engines adds the driver's engine status text (Device.EngineStatus).
	Engines bool
	// UtilizationPeriod is the window INFO DEVICE_UTILIZATION averages
	// over (100 ms to 1 s); 0 is 100 ms.
	UtilizationPeriod time.Duration
	// Now returns the time of the snapshot; nil is time.Now.
	Now func() time.Time
	// OpenControl opens a hardware control node; nil is
	// device.OpenControl. Tests over a fixture tree set it, so that the
	// fixture's node paths never reach a device of the machine.
	OpenControl func(path string) (*device.Device, error)
}

func (o *Options) openControl(path string) (*device.Device, error) {
	if o.OpenControl != nil {
		return o.OpenControl(path)
	}
	return device.OpenControl(path)
}

func (o *Options) utilizationPeriod() time.Duration {
	if o.UtilizationPeriod == 0 {
		return 100 * time.Millisecond
	}
	return o.UtilizationPeriod
}

// Collect reads the devices o.Selector chooses. The selector is
// GAUDI_DEVICE's grammar (simdevice.ParseSelector) read as a filter:
//
//	""            every hardware device, or every simulated one when the
//	              machine has no Gaudi
//	"sim"         every simulated device
//	"sim:N"       simulated device N
//	"N"           hardware device N (accelN or hlN)
//	"DDDD:BB:DD.F", "BB:DD.F"  the hardware device at that PCI address
//	"module:N"    the hardware device with module id N
//	"/dev/..."    the hardware device with that compute or control node
//	"gaudi2", ... every hardware device of that chip
//
// A hardware selector never falls back to the simulator: on a machine
// without a Gaudi it matches nothing, and the error (matching
// device.ErrNoDevice) says to use sim:N, as opening a device with the same
// GAUDI_DEVICE fails. A selector that does not parse gives an error
// matching device.ErrBadSelector.
func Collect(o Options) (*Snapshot, error) {
	sel, err := simdevice.ParseSelector(o.Selector)
	if err != nil {
		return nil, err
	}
	nodes, err := device.SysFS{Root: rootOr(o.Root)}.Nodes()
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	s := &Snapshot{SchemaVersion: SchemaVersion, Timestamp: now(), Devices: []Device{}}
	files := map[string]holder{}
	if sel.Sim || (sel.Device.Kind == device.SelectFirst && len(nodes) == 0) {
		s.Source = "simulator"
		if err := collectSim(s, sel, &o, files); err != nil {
			return nil, err
		}
	} else {
		s.Source = "hardware"
		s.DriverVersion = driverVersion(o.Root)
		if err := collectHardware(s, sel.Device, nodes, &o, files); err != nil {
			return nil, err
		}
	}
	s.Driver = commonDriver(s.Devices)
	// After every control node of ours is closed, so only other
	// holders (and this process's compute opens) are seen.
	scanProcesses(o.Root, files, s.Devices)
	return s, nil
}

// commonDriver is the driver every device reports, or nil.
func commonDriver(devs []Device) *string {
	var drv *string
	for _, d := range devs {
		switch {
		case d.Driver == nil:
			return nil
		case drv == nil:
			drv = d.Driver
		case *drv != *d.Driver:
			return nil
		}
	}
	return drv
}

// matches reports whether hardware node n is one sel chooses.
// TODO: use the device package's matcher when it exports one.
func matches(sel device.Selector, n device.Node) bool {
	switch sel.Kind {
	case device.SelectFirst:
		return true
	case device.SelectIndex:
		return n.Index == sel.Index
	case device.SelectPCI:
		return n.PCIAddress != "" && n.PCIAddress == sel.PCIAddress
	case device.SelectModule:
		return n.ModuleID >= 0 && n.ModuleID == sel.Module
	case device.SelectPath:
		return n.Path == sel.Path || n.ControlPath != "" && n.ControlPath == sel.Path
	case device.SelectASIC:
		a := device.ASICFromPCI(uint32(n.DeviceID), n.Revision)
		switch sel.ASIC {
		case device.Gaudi:
			return a.IsGaudi()
		case device.Gaudi2:
			return a.IsGaudi2()
		}
		return a == sel.ASIC
	}
	return false
}

// noDevice is the error for a selector that matched nothing.
func noDevice(sel string, nodes int) error {
	if nodes == 0 {
		return fmt.Errorf("%w: %q selects hardware and this machine has none (sim:N selects a simulated device)", device.ErrNoDevice, sel)
	}
	return fmt.Errorf("%w: %q matches none of the %d devices", device.ErrNoDevice, sel, nodes)
}

func collectHardware(s *Snapshot, sel device.Selector, nodes []device.Node, o *Options, files map[string]holder) error {
	for _, n := range nodes {
		if !matches(sel, n) {
			continue
		}
		r := newDevice(n.Index)
		r.PCIAddress, r.Node, r.ControlNode = n.PCIAddress, n.Path, n.ControlPath
		fillSysfs(&r, o.Root, n)
		if n.ControlPath == "" {
			r.Errors = append(r.Errors, QueryError{Query: "open", Message: "sysfs shows no control node"})
		} else if d, err := o.openControl(n.ControlPath); err != nil {
			r.Errors = append(r.Errors, queryError("open", err))
		} else {
			fillInfo(&r, d, o)
			if err := d.Close(); err != nil {
				r.Errors = append(r.Errors, queryError("close", err))
			}
		}
		if r.Resets == nil {
			r.Resets = sysfsResets(n)
		}
		if r.Driver == nil {
			// The device could not tell (not operational, or not
			// opened): the loaded module can.
			if drv, _ := (device.SysFS{Root: rootOr(o.Root)}).Driver(); drv != device.DriverUnknown {
				r.Driver = ptr(drv.String())
			}
		}
		files[n.Path] = holder{len(s.Devices), "compute"}
		if n.ControlPath != "" {
			files[n.ControlPath] = holder{len(s.Devices), "control"}
		}
		s.Devices = append(s.Devices, r)
	}
	if len(s.Devices) == 0 {
		return noDevice(sel.String(), len(nodes))
	}
	return nil
}

func collectSim(s *Snapshot, sel simdevice.Selector, o *Options, files map[string]holder) error {
	sys, err := simdevice.System()
	if err != nil {
		return err
	}
	var devs []*sim.Device
	if sel.Sim && sel.SimIndex >= 0 {
		d := sys.Device(sel.SimIndex)
		if d == nil {
			return fmt.Errorf("%w: the simulator has %d devices, no sim:%d (GAUDI_SIM shapes it)", device.ErrNoDevice, len(sys.Devices()), sel.SimIndex)
		}
		devs = []*sim.Device{d}
	} else {
		devs = sys.Devices()
	}
	for _, sd := range devs {
		r := newDevice(sd.Index())
		r.Simulated = true
		r.PCIAddress = sd.Config().PCIAddress
		r.Node, r.ControlNode = sd.Name(), sd.Name()+"-control"
		r.Status = strings.ToLower(sd.State().String())
		r.ModuleID = ptr(int(sd.Config().ModuleID))
		d, err := simdevice.OpenSimControl(sd)
		if err != nil {
			r.Errors = append(r.Errors, queryError("open", err))
		} else {
			fillInfo(&r, d, o)
			if err := d.Close(); err != nil {
				r.Errors = append(r.Errors, queryError("close", err))
			}
		}
		// The simulator's control files live in this process and leave
		// no trace in /proc; its compute owner holds the lock file open.
		files[sd.LockPath()] = holder{len(s.Devices), "compute"}
		s.Devices = append(s.Devices, r)
	}
	return nil
}

// newDevice returns a Device with its lists empty rather than nil, so
// JSON shows [] and {}.
func newDevice(index int) Device {
	return Device{
		Index: index, Firmware: map[string]string{}, ClockThrottleReasons: []string{},
		Temperatures: []Temperature{}, BusyEngineMask: []uint64{}, Processes: []Process{}, Errors: []QueryError{},
	}
}
