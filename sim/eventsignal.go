package sim

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// An eventSignal signals a file's registered eventfd (the driver's
// eventfd_signal on the notifier's context) without ever blocking the
// caller: notify runs in resets and under locks a release needs, and the
// eventfd is the client's (through hlsim, a duplicate of the client's own
// descriptor, whose blocking mode is the client's to choose). A goroutine
// of its own writes; it writes only when the counter has room (POLLOUT:
// a write of 1 cannot block), so a client that keeps its counter full
// loses its own notifications and nothing else. Safe for concurrent use.
type eventSignal struct {
	fd   int           // our duplicate of the eventfd; closed by close
	kick chan struct{} // a pending signal (capacity 1: signals merge)
	stop chan struct{}
	done chan struct{} // closed when the goroutine has returned
}

func newEventSignal(fd int) *eventSignal {
	s := &eventSignal{fd: fd, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// signal asks for one signal; it never blocks.
func (s *eventSignal) signal() {
	select {
	case s.kick <- struct{}{}:
	default: // one is pending already: the counter moves once for both
	}
}

func (s *eventSignal) run() {
	defer close(s.done)
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		// eventfd_poll: POLLOUT while the counter is below 2^64-2, when a
		// write of 1 does not block (eventfd_write).
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
		if n, err := unix.Poll(fds, 0); err != nil || n == 0 || fds[0].Revents&unix.POLLOUT == 0 {
			continue // full: the client loses this notification
		}
		// Blocks only if the client fills its counter between the poll
		// and the write; close then drains it.
		unix.Write(s.fd, one[:])
	}
}

// close ends the goroutine and closes the duplicate. A goroutine blocked
// in a write (the client filled its counter after the poll) is let go by
// reading the counter: the file is going, and with it the client's
// claim to the notifications.
func (s *eventSignal) close() {
	close(s.stop)
	for {
		select {
		case <-s.done:
			unix.Close(s.fd)
			return
		case <-time.After(10 * time.Millisecond):
			fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0 {
				var b [8]byte
				unix.Read(s.fd, b[:])
			}
		}
	}
}
