package device

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// ErrNoDevice reports that no device matched: none present, or none free.
var ErrNoDevice = errors.New("no gaudi device")

// Open opens the compute node at path (/dev/accel/accelN, or /dev/hlN on
// old kernels), which makes this process the device's single user. A device
// owned by another process gives an error matching ioctl.ErrDeviceBusy and
// unix.EBUSY; one in reset, ioctl.ErrInReset and unix.EAGAIN; one that is
// disabled or needs a reset, ioctl.ErrNotOperational and unix.EPERM.
//
// The path "sim:N" opens simulated device N of the default simulated system
// (see SimSystem).
func Open(path string) (*Device, error) {
	if n, ok := simIndex(path); ok {
		return openSimIndex(n, false)
	}
	f, err := ioctl.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return newDevice(f, path, false, nil)
}

// OpenControl opens a control node (/dev/accel/accel_controlDN, or
// /dev/hl_controlDN on old kernels; "sim:N" for a simulated one). Control
// nodes serve INFO only and never conflict with the device's owner.
func OpenControl(path string) (*Device, error) {
	if n, ok := simIndex(path); ok {
		return openSimIndex(n, true)
	}
	f, err := ioctl.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return newDevice(f, path, true, nil)
}

// OpenSim opens the compute node of a simulated device.
func OpenSim(sd *sim.Device) (*Device, error) {
	f, err := sd.Open()
	if err != nil {
		return nil, openError(sd.Name(), err)
	}
	return newDevice(f, sd.Name(), false, sd)
}

// OpenSimControl opens the control node of a simulated device.
func OpenSimControl(sd *sim.Device) (*Device, error) {
	f, err := sd.OpenControl()
	if err != nil {
		return nil, openError(sd.Name()+"-control", err)
	}
	return newDevice(f, sd.Name(), true, sd)
}

var (
	simOnce sync.Once
	simSys  *sim.System
	simErr  error
)

// SimSystem returns the process's default simulated system, built once from
// GAUDI_SIM (see sim.FromEnv: eight Gaudi2 devices unless it says
// otherwise). Processes share its devices through lock files, so each
// device still has one owner at a time across processes.
func SimSystem() (*sim.System, error) {
	simOnce.Do(func() {
		cfg, err := sim.FromEnv()
		if err != nil {
			simErr = err
			return
		}
		simSys, simErr = sim.New(cfg)
	})
	return simSys, simErr
}

func openSimIndex(n int, control bool) (*Device, error) {
	s, err := SimSystem()
	if err != nil {
		return nil, err
	}
	sd := s.Device(n)
	if sd == nil {
		return nil, fmt.Errorf("open sim:%d: %w", n, ErrNoDevice)
	}
	if control {
		return OpenSimControl(sd)
	}
	return OpenSim(sd)
}

// OpenFirstFreeSim opens the first simulated device no process owns,
// skipping the ones OpenFirstFree skips.
func OpenFirstFreeSim() (*Device, error) {
	s, err := SimSystem()
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
	return nil, fmt.Errorf("every simulated device is in use: %w", ErrNoDevice)
}

// simIndex parses "sim:N".
func simIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "sim:")
	if !ok {
		return 0, false
	}
	rest = strings.TrimPrefix(rest, "accel")
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
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
