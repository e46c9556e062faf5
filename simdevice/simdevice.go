// Package simdevice opens devices for programs that accept the software
// Gaudi of package sim as well as hardware: the tools, the examples and
// the tests. Package device opens hardware only and does not link the
// simulator; a program that imports simdevice links both.
//
// # Selectors
//
// Open and OpenControl read device.ParseSelector's grammar plus two forms:
//
//	"sim"    the first free simulated device (OpenControl: simulated device 0)
//	"sim:N"  simulated device N ("sim:accelN", as Device.Path reports it, too)
//
// Simulated devices belong to the process's simulated server (System),
// shaped by GAUDI_SIM as sim.FromEnv reads it (eight Gaudi2 unless it
// says otherwise). Other processes that open "sim:N" get a server of
// their own; lock files keep one compute owner per device across them.
//
// OpenDefault is what tools and examples call: GAUDI_DEVICE, in the same
// grammar, when it is set; else the first free hardware device when the
// machine has any, else the first free simulated one. It says on stderr
// which it chose.
//
// # Tests
//
// OpenSim and OpenSimControl open a device of any sim.System, such as a
// fresh one per test; Sim returns the simulated device behind an open
// Device, to inject faults, resets and events.
package simdevice

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// Selector is a device selector in this package's grammar: a simulated
// device, or a hardware one.
type Selector struct {
	// Sim is set for "sim" and "sim:N".
	Sim bool
	// SimIndex is N of "sim:N", or -1 for "sim" (the first free).
	SimIndex int
	// Device is the hardware selector when Sim is not set.
	Device device.Selector
}

// String returns s in the form ParseSelector reads.
func (s Selector) String() string {
	switch {
	case !s.Sim:
		return s.Device.String()
	case s.SimIndex < 0:
		return "sim"
	}
	return "sim:" + strconv.Itoa(s.SimIndex)
}

// ParseSelector reads a selector: "sim", "sim:N" or "sim:accelN", or
// anything device.ParseSelector reads. Errors match device.ErrBadSelector.
func ParseSelector(s string) (Selector, error) {
	if s == "sim" {
		return Selector{Sim: true, SimIndex: -1}, nil
	}
	if rest, ok := strings.CutPrefix(s, "sim:"); ok {
		rest = strings.TrimPrefix(rest, "accel")
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || rest[0] < '0' || rest[0] > '9' {
			return Selector{}, &device.SelectorError{Input: s, Reason: "want sim:N with a decimal device number"}
		}
		return Selector{Sim: true, SimIndex: n}, nil
	}
	d, err := device.ParseSelector(s)
	var serr *device.SelectorError
	if errors.As(err, &serr) {
		// The hardware grammar's list of forms, with the simulator's.
		return Selector{}, &device.SelectorError{Input: serr.Input, Reason: serr.Reason + ", or sim or sim:N (simulated devices)"}
	}
	if err != nil {
		return Selector{}, err
	}
	return Selector{Device: d}, nil
}

// Open opens the compute node sel selects: a simulated device for "sim"
// and "sim:N", else what device.Open opens (so "" is the first free
// hardware device; OpenDefault is the one that falls back to the
// simulator). "sim" skips simulated devices that are owned, in reset or
// not operational, as device.Open skips hardware ones.
func Open(sel string) (*device.Device, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	return open(s, sel)
}

func open(s Selector, sel string) (*device.Device, error) {
	switch {
	case !s.Sim:
		return device.Open(sel)
	case s.SimIndex < 0:
		return openFirstFree()
	}
	sd, err := simDevice(s.SimIndex)
	if err != nil {
		return nil, err
	}
	return OpenSim(sd)
}

// OpenControl opens the control node sel selects: of a simulated device
// for "sim" (device 0) and "sim:N", else what device.OpenControl opens.
func OpenControl(sel string) (*device.Device, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	if !s.Sim {
		return device.OpenControl(sel)
	}
	sd, err := simDevice(max(s.SimIndex, 0))
	if err != nil {
		return nil, err
	}
	return OpenSimControl(sd)
}

// stderr is where OpenDefault says which device it chose.
var stderr io.Writer = os.Stderr

// nodes lists the hardware; tests replace it.
var nodes = device.Nodes

// OpenDefault opens the device tools and examples use, and says on
// stderr which one ("gaudi: using GAUDI2 module 0 (sim:accel0), the
// simulator (no Gaudi found; set GAUDI_DEVICE to choose)"). GAUDI_DEVICE
// chooses when it is set, in the grammar of Open; without it, the first
// free hardware device is used when the machine has any, else the first
// free simulated device. A bad GAUDI_DEVICE gives an error matching
// device.ErrBadSelector.
func OpenDefault() (*device.Device, error) {
	d, why, err := openDefault(os.Getenv("GAUDI_DEVICE"))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "gaudi: using %s, %s\n", d, why)
	return d, nil
}

// openDefault is OpenDefault with the choice injected; it returns why the
// device was chosen.
func openDefault(choice string) (*device.Device, string, error) {
	if choice != "" {
		s, err := ParseSelector(choice)
		if err != nil {
			return nil, "", fmt.Errorf("GAUDI_DEVICE: %w", err)
		}
		why := "hardware (GAUDI_DEVICE=" + choice + ")"
		if s.Sim {
			why = "the simulator (GAUDI_DEVICE=" + choice + ")"
		}
		d, err := open(s, choice)
		return d, why, err
	}
	ns, err := nodes()
	if err != nil {
		return nil, "", fmt.Errorf("list devices: %w", err)
	}
	if len(ns) > 0 {
		d, err := device.Open("")
		if err == nil && d.Simulated() {
			return d, "a simulated node (tools/hlsim)", nil
		}
		return d, "hardware", err
	}
	d, err := openFirstFree()
	return d, "the simulator (no Gaudi found; set GAUDI_DEVICE to choose)", err
}

var (
	sysOnce sync.Once
	sys     *sim.System
	sysErr  error
)

// System returns the process's simulated server, built once from GAUDI_SIM
// (see sim.FromEnv: eight Gaudi2 devices unless it says otherwise). "sim"
// and "sim:N" open its devices. Processes share its devices through lock
// files, so each device still has one owner at a time across processes.
func System() (*sim.System, error) {
	sysOnce.Do(func() {
		cfg, err := sim.FromEnv()
		if err != nil {
			sysErr = err
			return
		}
		sys, sysErr = sim.New(cfg)
	})
	return sys, sysErr
}

// simDevice returns device n of System.
func simDevice(n int) (*sim.Device, error) {
	s, err := System()
	if err != nil {
		return nil, err
	}
	sd := s.Device(n)
	if sd == nil {
		return nil, fmt.Errorf("open sim:%d: %w", n, device.ErrNoDevice)
	}
	return sd, nil
}

// openFirstFree opens the first simulated device of System that no
// process owns, skipping ones in reset and ones that are not operational.
func openFirstFree() (*device.Device, error) {
	s, err := System()
	if err != nil {
		return nil, err
	}
	for _, sd := range s.Devices() {
		d, err := OpenSim(sd)
		if err == nil {
			return d, nil
		}
		if !unavailable(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("open sim: every simulated device is in use: %w", device.ErrNoDevice)
}

// unavailable reports whether an open failed only because the device
// cannot be had now, as for device.Open.
func unavailable(err error) bool {
	return errors.Is(err, ioctl.ErrDeviceBusy) || errors.Is(err, ioctl.ErrInReset) || errors.Is(err, ioctl.ErrNotOperational)
}

// OpenSim opens the compute node of a simulated device of any System.
// Open errors are reported as the kernel's are: an *ioctl.Error with Op
// "OPEN" (so ioctl.ErrDeviceBusy and unix.EBUSY match a device another
// owner holds).
func OpenSim(sd *sim.Device) (*device.Device, error) {
	f, err := sd.Open()
	if err != nil {
		return nil, openError(sd.Name(), err)
	}
	return device.FromFile(f, device.FileOptions{Path: sd.Name()})
}

// OpenSimControl opens the control node of a simulated device of any
// System. Its Path is the device's, as for OpenSim.
func OpenSimControl(sd *sim.Device) (*device.Device, error) {
	f, err := sd.OpenControl()
	if err != nil {
		return nil, openError(sd.Name()+"-control", err)
	}
	return device.FromFile(f, device.FileOptions{Control: true, Path: sd.Name()})
}

// Sim returns the simulated device behind d, or nil when d is not
// simulated: when the File d was opened over has no method
// Device() *sim.Device (sim.File has; a wrapper may forward it).
func Sim(d *device.Device) *sim.Device {
	if f, ok := devio.File(d).(interface{ Device() *sim.Device }); ok {
		return f.Device()
	}
	return nil
}

// openError reports a failed simulated open the way ioctl.OpenFile
// reports a kernel one.
func openError(name string, err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return &ioctl.Error{Op: "OPEN", Sub: name, Errno: errno}
	}
	return fmt.Errorf("open %s: %w", name, err)
}
