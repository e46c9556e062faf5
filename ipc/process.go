package ipc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A pid names a process only until it exits: the kernel then gives the
// number to the next process that asks. A handle therefore also carries
// the exporter's start time (field 22 of /proc/PID/stat, in clock ticks
// after boot), and an importer checks both on the process that listens on
// the exporter's socket, which it holds by a pidfd meanwhile so that the
// number cannot change hands under the check. An importer that cannot
// read the exporter's /proc/PID/stat (a /proc mounted with hidepid, an
// exporter of another uid) refuses it (ErrUnexpectedPeer).

// startTime returns the start time of process pid: field 22 of
// /proc/PID/stat (proc(5)), in clock ticks after boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStartTime(b)
}

// parseStartTime reads field 22 of a /proc/PID/stat line. The command name
// (field 2) is in parentheses and may hold spaces and parentheses itself,
// so the fields are counted from the last ')'.
func parseStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc/PID/stat")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/PID/stat has %d fields after the command name, want at least 20", len(f))
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

var (
	selfStartOnce sync.Once
	selfStart     uint64
	selfStartErr  error
)

// selfStartTime returns this process's start time.
func selfStartTime() (uint64, error) {
	selfStartOnce.Do(func() {
		selfStart, selfStartErr = startTime(os.Getpid())
		if selfStartErr != nil {
			selfStartErr = fmt.Errorf("ipc: start time: %w", selfStartErr)
		}
	})
	return selfStart, selfStartErr
}

// peerPidfd returns a pidfd of the process listening on c's socket:
// SO_PEERPIDFD (Linux 6.5) names the very process that listened; before
// it, pidfd_open of pid, the number SO_PEERCRED gave, names the process
// that has that number now (a check of its start time then fails for any
// other process than the exporter).
func peerPidfd(c *net.UnixConn, pid int) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var serr error
	if err := rc.Control(func(s uintptr) {
		fd, serr = unix.GetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return -1, err
	}
	if serr == nil {
		return fd, nil
	}
	if !errors.Is(serr, unix.ENOPROTOOPT) {
		return -1, serr
	}
	return unix.PidfdOpen(pid, 0)
}

// checkExporterProcess checks that the process listening on c, whose pid
// SO_PEERCRED gave, is the exporter of want (ErrUnexpectedPeer if not).
func checkExporterProcess(c *net.UnixConn, pid int, want *Handle) error {
	pidfd, err := peerPidfd(c, pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%w: the process that listens on the socket (pid %d) exited", ErrUnexpectedPeer, pid)
		}
		return fmt.Errorf("ipc: pidfd of the exporter: %w", err)
	}
	defer unix.Close(pidfd)
	if err := startedAt(pidfd, pid, want.StartTime); err != nil {
		return fmt.Errorf("%w: %w", ErrUnexpectedPeer, err)
	}
	return nil
}

// startedAt checks that the process pidfd holds, whose pid is pid,
// started at tick start. The start time is read while the pidfd holds the
// process, and the process must still be there after the read, so the
// number named it throughout.
func startedAt(pidfd, pid int, start uint64) error {
	got, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("start time of pid %d: %w", pid, err)
	}
	// Signal 0 only asks whether the process is there; EPERM (a process
	// this one may not signal) says it is.
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("pid %d exited while checked: %w", pid, err)
	}
	if got != start {
		return fmt.Errorf("pid %d started at tick %d, the handle's exporter at tick %d: another process has its pid", pid, got, start)
	}
	return nil
}
