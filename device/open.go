package device

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gaudi-go/gaudi/ioctl"
)

// ErrNoDevice reports that no device matched a selector: none present,
// none of that index, address, module or chip, or none free.
var ErrNoDevice = errors.New("no gaudi device")

// Open opens the compute node of the hardware device sel selects (see
// ParseSelector; "" is the first free device), which makes this process
// the device's single user.
//
// A device owned by another process gives an error matching
// ioctl.ErrDeviceBusy and unix.EBUSY; one in reset, ioctl.ErrInReset and
// unix.EAGAIN; one that is disabled or needs a reset,
// ioctl.ErrNotOperational and unix.EPERM. The selectors that may match
// several devices ("" and a chip name) skip those three and take the
// first that opens. No matching device, or none free, gives an error
// matching ErrNoDevice; a selector that does not parse, ErrBadSelector.
// A control node's path is refused: use OpenControl.
func Open(sel string) (*Device, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	return live.open(s)
}

// OpenControl opens the control node of the hardware device sel selects
// (see ParseSelector): INFO only, any number of them, and never in
// conflict with the device's owner, so busy devices are not skipped. ""
// and a chip name take the first device (of that chip) that has a
// control node. The path of a compute node opens its control node
// (/dev/accel/accelN: /dev/accel/accel_controlDN). Errors are as for
// Open.
func OpenControl(sel string) (*Device, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	return live.openControl(s)
}

// opener opens the nodes a sysfs tree lists. Tests replace both.
type opener struct {
	sys  SysFS
	file func(path string) (ioctl.File, error)
}

// live opens the nodes of this machine.
var live = opener{file: ioctl.OpenFile}

func (o opener) open(s Selector) (*Device, error) {
	if s.Kind == SelectPath {
		if _, isControl := controlPath(s.Path); isControl {
			return nil, &SelectorError{Input: s.Path, Reason: "a control node; use OpenControl"}
		}
		return o.node(s.Path, false)
	}
	nodes, err := o.sys.Nodes()
	if err != nil {
		return nil, fmt.Errorf("open %s: list devices: %w", s.describe(), err)
	}
	var match []Node
	for _, n := range nodes {
		if s.Matches(n) {
			match = append(match, n)
		}
	}
	switch {
	case len(match) == 0:
		return nil, fmt.Errorf("open %s: %w", s.describe(), ErrNoDevice)
	case s.Kind == SelectFirst || s.Kind == SelectASIC:
		return o.firstFree(s, match)
	}
	return o.node(o.sys.nodePath(match[0].Path), false)
}

// firstFree opens the first of nodes that no process owns, skipping busy
// ones, ones in reset and ones that are not operational.
func (o opener) firstFree(s Selector, nodes []Node) (*Device, error) {
	var why []string
	for _, n := range nodes {
		d, err := o.node(o.sys.nodePath(n.Path), false)
		if err == nil {
			return d, nil
		}
		if !unavailable(err) {
			return nil, err
		}
		why = append(why, err.Error())
	}
	return nil, fmt.Errorf("open %s: none is free (%s): %w", s.describe(), strings.Join(why, "; "), ErrNoDevice)
}

func (o opener) openControl(s Selector) (*Device, error) {
	if s.Kind == SelectPath {
		ctl, isControl := controlPath(s.Path)
		if !isControl && ctl == "" {
			ctl = s.Path // a name the kernel does not give: taken as it is
		}
		return o.node(ctl, true)
	}
	nodes, err := o.sys.Nodes()
	if err != nil {
		return nil, fmt.Errorf("open control node of %s: list devices: %w", s.describe(), err)
	}
	var found bool
	for _, n := range nodes {
		if !s.Matches(n) {
			continue
		}
		found = true
		if n.ControlPath != "" {
			return o.node(o.sys.nodePath(n.ControlPath), true)
		}
		if s.Kind != SelectFirst && s.Kind != SelectASIC {
			break
		}
	}
	if found {
		// The driver adds the control node shortly after the compute node.
		return nil, fmt.Errorf("open control node of %s: none in sysfs yet: %w", s.describe(), ErrNoDevice)
	}
	return nil, fmt.Errorf("open control node of %s: %w", s.describe(), ErrNoDevice)
}

// node opens the node at path.
func (o opener) node(path string, control bool) (*Device, error) {
	f, err := o.file(path)
	if err != nil {
		return nil, err
	}
	return newDevice(f, path, control)
}

// unavailable reports whether an open failed only because the device
// cannot be had now: another process owns it (ioctl.ErrDeviceBusy), it is
// resetting (ioctl.ErrInReset), or it is not operational
// (ioctl.ErrNotOperational).
func unavailable(err error) bool {
	return errors.Is(err, ioctl.ErrDeviceBusy) || errors.Is(err, ioctl.ErrInReset) || errors.Is(err, ioctl.ErrNotOperational)
}
