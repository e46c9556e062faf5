package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeOnExec marks every descriptor of this process above standard error
// close-on-exec, so that a command this process starts inherits only what
// it is given (exec.Cmd's standard streams and ExtraFiles).
func closeOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor is closed by now: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
