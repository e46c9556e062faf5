package main

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// A pidWatch holds a process by a pidfd (pidfd_open(2), Linux 5.3), so
// that -p names the process it was given and not whatever reuses its
// number, and reports its exit: the pidfd polls readable when the
// process has exited.
type pidWatch struct {
	fd   int
	gone chan struct{} // closed when the process has exited
	stop [2]int        // a pipe: writing to it ends the poller
	done chan struct{} // closed when the poller has returned
}

// errNoProcess is what -p reports for a pid that names no process.
var errNoProcess = errors.New("no such process")

// watchPID opens a pidfd for pid and starts waiting for its exit. A pid
// that names no process is an error matching errNoProcess and ESRCH.
func watchPID(pid int) (*pidWatch, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("%w (%s)", errNoProcess, errnoName(unix.ESRCH))
	}
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			return nil, fmt.Errorf("pidfd_open: %w (%s)", err, errnoName(errno))
		}
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	w := &pidWatch{fd: fd, gone: make(chan struct{}), done: make(chan struct{})}
	if err := unix.Pipe2(w.stop[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	go w.wait()
	return w, nil
}

// wait polls the pidfd and the stop pipe until one is readable.
func (w *pidWatch) wait() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && fds[0].Revents != 0 {
			close(w.gone)
		}
		return
	}
}

// close ends the poller and releases the pidfd and the pipe. Call it once.
func (w *pidWatch) close() {
	unix.Write(w.stop[1], []byte{0})
	<-w.done
	unix.Close(w.fd)
	unix.Close(w.stop[0])
	unix.Close(w.stop[1])
}
