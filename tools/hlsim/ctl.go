package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// Driving the served devices while clients use them.
//
// A running server takes commands written to DIR/hlsim/ctl, one per
// write; "hlsim ctl -dir DIR COMMAND..." writes one. A command the server
// does not understand fails the write with EINVAL and is explained on its
// standard error. The driver's own write-only attribute hard_reset of
// each PCI function resets the device too.

// ctlUsage lists the commands.
const ctlUsage = `commands (N is the device index):
  reset N                      hard reset: CSs in flight abort, clients get DEVICE_RESET
  state N STATE                operational, in-reset, disabled, needs-reset
  fault N KIND[:OP] [NTH] ERRNO  the NTH (default 1) next call of KIND (INFO, CB, CS,
                               WAIT_CS, MEMORY, DEBUG, OPEN, OPEN_CONTROL), of sub-op OP
                               when given, fails with ERRNO (a number or a name: EIO)
  notify N BITS                raise notifier event bits (HL_NOTIFIER_EVENT_*) on the compute file
  razwi N ADDR                 record a RAZWI at ADDR, as the driver captures one
`

// errCtl reports a command the server does not understand.
var errCtl = errors.New("bad command")

// command runs one command line on the devices of s.
func (s *server) command(line string) error {
	f := strings.Fields(line)
	if len(f) < 2 {
		return fmt.Errorf("%q: %w", line, errCtl)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || s.sys.Device(n) == nil {
		return fmt.Errorf("%q: no device %q: %w", line, f[1], errCtl)
	}
	d := s.sys.Device(n)
	switch {
	case f[0] == "reset" && len(f) == 2:
		d.Reset()
	case f[0] == "state" && len(f) == 3:
		st, ok := map[string]sim.State{
			"operational": sim.Operational, "in-reset": sim.InReset,
			"disabled": sim.Malfunction, "needs-reset": sim.NeedsReset,
		}[f[2]]
		if !ok {
			return fmt.Errorf("%q: unknown state %q: %w", line, f[2], errCtl)
		}
		d.SetState(st)
	case f[0] == "fault" && (len(f) == 4 || len(f) == 5):
		flt := sim.Fault{Nth: 1}
		kind, op, hasOp := strings.Cut(f[2], ":")
		flt.Ioctl = strings.ToUpper(kind)
		if hasOp {
			v, err := strconv.ParseUint(op, 0, 32)
			if err != nil {
				return fmt.Errorf("%q: bad op %q: %w", line, op, errCtl)
			}
			flt.MatchOp, flt.Op = true, uint32(v)
		}
		if len(f) == 5 {
			if flt.Nth, err = strconv.Atoi(f[3]); err != nil || flt.Nth < 1 {
				return fmt.Errorf("%q: bad count %q: %w", line, f[3], errCtl)
			}
		}
		errno, ok := parseErrno(f[len(f)-1])
		if !ok {
			return fmt.Errorf("%q: unknown errno %q: %w", line, f[len(f)-1], errCtl)
		}
		flt.Errno = errno
		d.InjectFault(flt)
	case f[0] == "notify" && len(f) == 3:
		bits, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			return fmt.Errorf("%q: bad bits %q: %w", line, f[2], errCtl)
		}
		d.Notify(bits)
	case f[0] == "razwi" && len(f) == 3:
		addr, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			return fmt.Errorf("%q: bad address %q: %w", line, f[2], errCtl)
		}
		d.RecordRazwi(addr, nil, 0)
	default:
		return fmt.Errorf("%q: %w", line, errCtl)
	}
	s.log.Printf("ctl: %s", line)
	return nil
}

// parseErrno reads "EIO", "eio" or "5".
func parseErrno(s string) (unix.Errno, bool) {
	if v, err := strconv.Atoi(s); err == nil && v > 0 && v < 4096 {
		return unix.Errno(v), true
	}
	name := strings.ToUpper(s)
	for e := unix.Errno(1); e < 134; e++ {
		if unix.ErrnoName(e) == name {
			return e, true
		}
	}
	return 0, false
}

// ctlCmd is "hlsim ctl -dir DIR COMMAND...": it writes the command to the
// server's control file. The commands are listed on stderr when the
// command line or the command is wrong.
func ctlCmd(args []string, stderr io.Writer) error {
	if len(args) < 3 || args[0] != "-dir" {
		fmt.Fprint(stderr, "usage: hlsim ctl -dir DIR COMMAND...\n"+ctlUsage)
		return errors.New("ctl: no directory or no command")
	}
	dir, cmd := args[1], strings.Join(args[2:], " ")
	f, err := os.OpenFile(filepath.Join(dir, "hlsim", "ctl"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("ctl: is hlsim serving %s? %w", dir, err)
	}
	defer f.Close()
	if _, err := f.WriteString(cmd); err != nil {
		if errors.Is(err, unix.EINVAL) {
			fmt.Fprint(stderr, ctlUsage)
			return fmt.Errorf("ctl: the server refused %q (its log says why)", cmd)
		}
		return fmt.Errorf("ctl: %w", err)
	}
	return nil
}
