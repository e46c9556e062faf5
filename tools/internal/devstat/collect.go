package devstat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// Options says what Collect reads.
type Options struct {
	// Selection chooses the devices, as cli.Selection.Devices lists them
	// for the -device flag and GAUDI_DEVICE; its zero value is every
	// Gaudi of the machine, or every simulated device when it has none.
	Selection cli.Selection
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

// sysRoot is the directory that holds the sys/ the devices are listed
// from: Root, else GAUDI_ROOT (device.RootEnv), else "/".
func (o *Options) sysRoot() string { return device.SysFS{Root: o.Root}.RootDir() }

// reroot moves n's node paths below sysRoot when the tree there has
// them: a served tree (hlsim serve -dir DIR), named by GAUDI_ROOT=DIR or
// -root DIR, holds its nodes in DIR/dev, while a copy of another
// machine's sysfs has no dev/ and its nodes keep the kernel's names.
// The paths are those the devices are opened at and other processes
// hold them by.
func (o *Options) reroot(n device.Node) device.Node {
	root := o.sysRoot()
	if root == "/" {
		return n
	}
	if _, err := os.Stat(filepath.Join(root, n.Path)); err != nil {
		return n
	}
	n.Path = filepath.Join(root, n.Path)
	if n.ControlPath != "" {
		n.ControlPath = filepath.Join(root, n.ControlPath)
	}
	return n
}

func (o *Options) utilizationPeriod() time.Duration {
	if o.UtilizationPeriod == 0 {
		return 100 * time.Millisecond
	}
	return o.UtilizationPeriod
}

// Collect reads the devices o.Selection names in the machine below
// o.Root (cli.Selection.DevicesIn): with no selector every Gaudi, or
// every simulated device when there is none; sim or sim:N the
// simulator's; an index, a PCI address, module:N or a node path the
// Gaudi it matches; a chip name every Gaudi of that chip. A hardware
// selector never falls back to the simulator: on a machine without a
// Gaudi it is an error matching device.ErrNoDevice that names sim:N.
func Collect(o Options) (*Snapshot, error) {
	// The zero SysFS honours GAUDI_ROOT (the tree "hlsim serve -dir"
	// serves) and re-roots the nodes it finds there, as every other
	// command's discovery does (internal/cli).
	cands, err := o.Selection.DevicesIn(device.SysFS{Root: o.Root})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	s := &Snapshot{SchemaVersion: SchemaVersion, Timestamp: now(), Source: "hardware", Devices: []Device{}}
	files := map[string]holder{}
	for _, c := range cands {
		if c.Simulated() {
			collectSim(s, c.Sim, &o, files)
		} else {
			collectHardware(s, c.Node, &o, files)
		}
	}
	// The simulator's devices (in process or served) have no host driver
	// version, as cli.DriverOf says for them.
	if allSimulated(s.Devices) {
		s.Source = "simulator"
	} else if v, ok := cli.HostDriverVersion(o.sysRoot()); ok {
		s.DriverVersion = &v
	}
	s.Driver = commonDriver(s.Devices)
	// After every control node of ours is closed, so only other
	// holders (and this process's compute opens) are seen.
	scanProcesses(o.Root, files, s.Devices)
	for i := range s.Devices {
		if strings.HasPrefix(s.Devices[i].Node, "sim:") {
			absentWhenOwnedElsewhere(&s.Devices[i])
		}
	}
	return s, nil
}

// allSimulated reports whether every device is simulated.
func allSimulated(devs []Device) bool {
	for _, d := range devs {
		if !d.Simulated {
			return false
		}
	}
	return len(devs) > 0
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

// collectHardware adds Gaudi n to s.
func collectHardware(s *Snapshot, n device.Node, o *Options, files map[string]holder) {
	n = o.reroot(n)
	r := newDevice(n.Index)
	r.PCIAddress, r.Node, r.ControlNode = n.PCIAddress, n.Path, n.ControlPath
	sys := device.SysFS{Root: o.Root}
	src := gohlml.DeviceSource{Node: &n, SysFS: sys}
	switch {
	case n.ControlPath == "":
		src.OpenErr = errors.New("sysfs shows no control node")
	default:
		src.Control, src.OpenErr = o.openControl(n.ControlPath)
	}
	hd := gohlml.NewDevice(src)
	fillSysfs(&r, sys, n, hd)
	if src.Control == nil {
		r.Errors = append(r.Errors, queryError("open", src.OpenErr))
	} else {
		fillInfo(&r, src.Control, hd, o)
		if err := src.Control.Close(); err != nil {
			r.Errors = append(r.Errors, queryError("close", err))
		}
	}
	if r.Resets == nil {
		r.Resets = sysfsResets(n)
	}
	if r.Driver == nil {
		// The device could not tell (not operational, or not opened):
		// the loaded module can.
		if drv, _ := (device.SysFS{Root: o.Root}).Driver(); drv != device.DriverUnknown {
			r.Driver = ptr(drv.String())
		}
	}
	files[n.Path] = holder{len(s.Devices), "compute"}
	if n.ControlPath != "" {
		files[n.ControlPath] = holder{len(s.Devices), "control"}
	}
	s.Devices = append(s.Devices, r)
}

// collectSim adds simulated device sd to s.
func collectSim(s *Snapshot, sd *sim.Device, o *Options, files map[string]holder) {
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
		fillInfo(&r, d, gohlml.NewDevice(gohlml.DeviceSource{Control: d}), o)
		if err := d.Close(); err != nil {
			r.Errors = append(r.Errors, queryError("close", err))
		}
	}
	// The simulator's control files live in this process and leave
	// no trace in /proc; its compute owner holds the lock file open.
	files[sd.LockPath()] = holder{len(s.Devices), "compute"}
	s.Devices = append(s.Devices, r)
}

// newDevice returns a Device with its lists empty rather than nil, so
// JSON shows [] and {}.
func newDevice(index int) Device {
	return Device{
		Index: index, Firmware: map[string]string{}, ClockThrottleReasons: []string{},
		Temperatures: []Temperature{}, BusyEngineMask: []Hex{}, Processes: []Process{}, Errors: []QueryError{},
	}
}
