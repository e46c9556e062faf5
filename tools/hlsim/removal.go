package main

import (
	"time"
)

// Stopping the server is the removal of its devices.
//
// When the habanalabs driver removes a device while processes hold its
// files, each later ioctl and mmap on them answers ENODEV ("Sending ioctl
// after device was removed! Please close FD": hl_ioctl_control and
// __hl_mmap in common/habanalabs_ioctl.c and common/device.c of Linux
// 6.12; drm_ioctl answers ENODEV for an unplugged device on the compute
// node), and the files stay valid until closed. hlsim serve does the
// same on SIGINT or SIGTERM: every request to a device file answers
// ENODEV from then on, opens too, and the server waits up to
// removalGrace for its clients to close their files before it unmounts
// and exits. A client still holding one after that sees its calls fail
// as the kernel fails them for a FUSE server that went away.

// removalGrace bounds how long a stopping server waits for its clients
// to close their files.
const removalGrace = 5 * time.Second

// remove marks the devices removed and waits until no client holds a
// file of them, or grace passed. It reports whether they all closed.
func (s *server) remove(grace time.Duration) bool {
	s.removed.Store(true)
	n := s.openCount()
	if n == 0 {
		return true
	}
	s.log.Printf("devices removed: %d open file(s) now answer ENODEV; waiting up to %v for them to close", n, grace)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if s.openCount() == 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.log.Printf("devices removed: %d file(s) still open after %v: stopping anyway", s.openCount(), grace)
	return false
}

// openCount is how many device files and served dma-bufs clients hold.
func (s *server) openCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files) + len(s.dmabufs)
}
