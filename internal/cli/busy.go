package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/holders"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

// namesHolder adds to err, an open that failed because another process
// owns the device (EBUSY), who owns it: "open sim:accel0: device or
// resource busy: held by pid 1234 (hlperf)". The holder is found as
// hlinfo finds a device's processes (package holders, by the file's
// identity): for a device node the processes that hold the node open,
// for a device of the process's simulator those that hold its lock file
// (sim.Device.LockPath). Other errors are returned as they are.
func namesHolder(err error) error {
	var e *ioctl.Error
	if !errors.As(err, &e) || e.Op != "OPEN" || e.Errno != unix.EBUSY {
		return err
	}
	path := e.Sub
	if rest, ok := strings.CutPrefix(e.Sub, "sim:accel"); ok {
		n, perr := strconv.Atoi(rest)
		sys, serr := simdevice.System()
		if perr != nil || serr != nil || n < 0 || n >= len(sys.Devices()) {
			return err
		}
		path = sys.Device(n).LockPath()
	}
	ps := holders.Find("/", []string{path})[path]
	if len(ps) == 0 {
		return fmt.Errorf("%w: held by a process this one cannot inspect (another user's, or none any more)", err)
	}
	return fmt.Errorf("%w: %s", err, holders.Text(ps))
}

// namesHolders adds to err, an Open of s that found no device free, who
// holds each device s names, when any process this one can inspect does.
func (s Selection) namesHolders(err error) error {
	cands, cerr := s.Devices()
	if cerr != nil {
		return err
	}
	paths := make([]string, len(cands))
	for i, c := range cands {
		paths[i] = c.file()
	}
	held := holders.Find("/", paths)
	var parts []string
	for i, c := range cands {
		if ps := held[paths[i]]; len(ps) > 0 {
			parts = append(parts, c.Name+" "+holders.Text(ps))
		}
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(parts, "; "))
}

// file is the file whose holders own c: its compute node, or for a
// simulated device its lock file (sim.Device.LockPath).
func (c Candidate) file() string {
	if c.Sim != nil {
		return c.Sim.LockPath()
	}
	return onThisMachine(c.Node.Path)
}
