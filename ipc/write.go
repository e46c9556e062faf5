package ipc

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// writeWithin writes the message b on c, waiting at most d for room in
// the peer's queue. It first tries without waiting (MSG_DONTWAIT; a
// SEQPACKET message goes whole or not at all), and sets a deadline only
// when the queue is full: a deadline set first expired before the write
// whenever the goroutine was descheduled between the two, and Go then
// refuses to write at all, so a peer that reads would have been dropped
// as one that does not (the same fault refuse had; see there).
func writeWithin(c *net.UnixConn, b []byte, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		if h := testHookWriting.Load(); h != nil {
			(*h)()
		}
		serr = unix.Sendmsg(int(fd), b, nil, nil, unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		return err
	}
	if !errors.Is(serr, unix.EAGAIN) {
		return serr
	}
	c.SetWriteDeadline(time.Now().Add(d))
	defer c.SetWriteDeadline(time.Time{})
	_, err = c.Write(b)
	return err
}

// testHookWriting, when set, runs in writeWithin before its first try.
var testHookWriting atomic.Pointer[func()]
