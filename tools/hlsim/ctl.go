package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// Driving the served devices while clients use them.
//
// A running server takes commands written to DIR/hlsim/ctl, one per
// write; "hlsim ctl -dir DIR COMMAND..." writes one. The server answers
// each write on the same open file: a read gives "ok", then what the
// command reports (a state, the armed faults), or "error: " and why the
// command was refused, whose write failed with EINVAL. The server's log
// says the same. The driver's own write-only attribute hard_reset of each
// PCI function resets the device too.

// ctlUsage lists the commands, for hlsim -h.
const ctlUsage = "Commands of hlsim ctl (N is the device index):\n" + ctlCommands

// ctlCommands lists the commands, for hlsim ctl -h.
const ctlCommands = `  reset N                      hard reset: CSs in flight abort, clients get DEVICE_RESET
  state N                      print the device's state
  state N STATE                set it: operational, in-reset, disabled, needs-reset
  fault N KIND[:OP] [NTH] ERRNO  the NTH (default 1) next call of KIND (INFO, CB, CS,
                               WAIT_CS, MEMORY, DEBUG, NIC, OPEN, OPEN_CONTROL), of sub-op OP
                               when given, fails with ERRNO (a number or a name: EIO); OP is
                               a number or a name: MEMORY:ALLOC, CB:CREATE, INFO:DRAM_USAGE
  faults N                     list the armed faults that have not fired
  clear N                      disarm them
  notify N BITS                raise notifier event bits (HL_NOTIFIER_EVENT_*) on the compute file
  razwi N ADDR                 record a RAZWI at ADDR, as the driver captures one
`

// errCtl reports a command the server does not understand.
var errCtl = errors.New("bad command")

// ctlStates are the states "state N STATE" sets.
var ctlStates = map[string]sim.State{
	"operational": sim.Operational, "in-reset": sim.InReset,
	"disabled": sim.Malfunction, "needs-reset": sim.NeedsReset,
}

// command runs one command line on the devices of s and returns what it
// reports, "" for most commands.
func (s *server) command(line string) (string, error) {
	out, err := s.runCommand(line)
	if err != nil {
		s.log.Printf("ctl: %q: %v", line, err)
		return "", err
	}
	s.log.Printf("ctl: %s", line)
	return out, nil
}

// runCommand is command without the log.
func (s *server) runCommand(line string) (string, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", fmt.Errorf("want COMMAND N ...: %w", errCtl)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || s.sys.Device(n) == nil {
		return "", fmt.Errorf("no device %q (the server has %s): %w", f[1], devices(len(s.sys.Devices())), errCtl)
	}
	d := s.sys.Device(n)
	switch {
	case f[0] == "reset" && len(f) == 2:
		d.Reset()
	case f[0] == "state" && len(f) == 2:
		return d.State().String(), nil
	case f[0] == "state" && len(f) == 3:
		st, ok := ctlStates[f[2]]
		if !ok {
			return "", fmt.Errorf("unknown state %q (want operational, in-reset, disabled or needs-reset): %w", f[2], errCtl)
		}
		d.SetState(st)
	case f[0] == "fault" && (len(f) == 4 || len(f) == 5):
		flt, err := parseFault(f[2:])
		if err != nil {
			return "", fmt.Errorf("%w: %w", err, errCtl)
		}
		d.InjectFault(flt)
	case f[0] == "faults" && len(f) == 2:
		var b strings.Builder
		for _, flt := range d.Faults() {
			kind := flt.Ioctl
			if flt.MatchOp {
				kind += ":" + opName(flt.Ioctl, flt.Op)
			}
			fmt.Fprintf(&b, "%s %d %s\n", kind, flt.Nth, unix.ErrnoName(flt.Errno))
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	case f[0] == "clear" && len(f) == 2:
		return fmt.Sprintf("disarmed %d", d.DisarmFaults()), nil
	case f[0] == "notify" && len(f) == 3:
		bits, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			return "", fmt.Errorf("bad bits %q: %w", f[2], errCtl)
		}
		d.Notify(bits)
	case f[0] == "razwi" && len(f) == 3:
		addr, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			return "", fmt.Errorf("bad address %q: %w", f[2], errCtl)
		}
		d.RecordRazwi(addr, nil, 0)
	default:
		return "", fmt.Errorf("unknown command or wrong number of arguments %q: %w", line, errCtl)
	}
	return "", nil
}

// devices is "1 device" or "N devices".
func devices(n int) string {
	if n == 1 {
		return "1 device"
	}
	return strconv.Itoa(n) + " devices"
}

// parseFault reads KIND[:OP] [NTH] ERRNO.
func parseFault(f []string) (sim.Fault, error) {
	flt := sim.Fault{Nth: 1}
	kind, op, hasOp := strings.Cut(f[0], ":")
	var err error
	if flt.Ioctl, err = parseKind(kind); err != nil {
		return flt, err
	}
	if hasOp {
		if flt.Op, err = parseOp(flt.Ioctl, op); err != nil {
			return flt, err
		}
		flt.MatchOp = true
	}
	if len(f) == 3 {
		if flt.Nth, err = strconv.Atoi(f[1]); err != nil || flt.Nth < 1 {
			return flt, fmt.Errorf("bad count %q (want 1 or more)", f[1])
		}
	}
	errno, ok := parseErrno(f[len(f)-1])
	if !ok {
		return flt, fmt.Errorf("unknown errno %q (want a name such as EIO, or a number)", f[len(f)-1])
	}
	flt.Errno = errno
	return flt, nil
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
// server's control file and prints the server's reply. A command the
// server refuses is a usage error (status 2) that says why.
func ctlCmd(args []string, stdout, stderr io.Writer) (int, error) {
	c := subcommand("ctl", "hlsim ctl -dir DIR COMMAND...",
		"Sends a running server (hlsim serve -dir DIR) a command for its devices and prints its reply.",
		stdout, stderr)
	c.Sections = []cli.Section{{Title: "Commands (N is the device index)", Text: ctlCommands}}
	dir := c.Flags.String("dir", "", "the directory the server serves (required)")
	if err := c.Parse(args); err != nil {
		return cli.ExitCode(err), err
	}
	if *dir == "" {
		return 2, c.UsageError("-dir DIR is required")
	}
	if c.Flags.NArg() == 0 {
		return 2, c.UsageError("no command")
	}
	cmd := strings.Join(c.Flags.Args(), " ")
	f, err := os.OpenFile(filepath.Join(*dir, "hlsim", "ctl"), os.O_RDWR, 0)
	if err != nil {
		return 1, fmt.Errorf("ctl: is hlsim serving %s? %w", *dir, err)
	}
	defer f.Close()
	_, werr := f.WriteString(cmd)
	b := make([]byte, 64<<10)
	n, rerr := f.ReadAt(b, 0)
	reply := strings.TrimSuffix(string(b[:n]), "\n")
	if werr != nil {
		if reason, ok := strings.CutPrefix(reply, "error: "); ok && errors.Is(werr, unix.EINVAL) {
			return 2, c.UsageError("the server refused %q: %s", cmd, reason)
		}
		return 1, fmt.Errorf("ctl %q: %w", cmd, werr)
	}
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		return 1, fmt.Errorf("ctl %q: read the reply: %w", cmd, rerr)
	}
	if out, ok := strings.CutPrefix(reply, "ok\n"); ok {
		fmt.Fprintln(stdout, out)
	}
	return 0, nil
}
