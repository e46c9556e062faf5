package main

import (
	"errors"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// A client's close of a served dma-buf's last descriptor reaches the
// server as a RELEASE that the kernel sends in the background
// (fs/fuse/file.c: fuse_file_put is synchronous only for fuseblk), while
// the driver's dma-buf is gone when close returns. So an UNMAP or FREE
// that the open export refuses (EINVAL) right after such a close, with a
// descriptor of the export closed (FLUSH came) but its RELEASE not yet
// here, is run again once the release came, for up to releaseGrace, as
// openCompute does for EBUSY. A failed UNMAP or FREE changed nothing, so
// running it again is safe.

// releasePending reports whether arg is an UNMAP or FREE, the MEMORY ops
// an open export refuses.
func releasePending(of *openFile, arg unsafe.Pointer) bool {
	if of.ctl {
		return false
	}
	op := (*hl.MemArgs)(arg).In().Op
	return op == hl.HL_MEM_OP_UNMAP || op == hl.HL_MEM_OP_FREE
}

// afterRelease runs again an op that failed with err while a dma-buf of
// of's device had a closed descriptor, once a RELEASE came after gen (the
// count of releases when the op was first tried), until it no longer
// fails with EINVAL, no such dma-buf is left, or releaseGrace passed; it
// returns the last answer.
func (s *server) afterRelease(of *openFile, err error, gen uint64, again func() error) error {
	deadline := time.Now().Add(releaseGrace)
	for errors.Is(err, unix.EINVAL) && time.Now().Before(deadline) {
		if s.releaseGen() == gen {
			if !s.exportClosing(of.dev) {
				return err // no release on the way: the export is open
			}
			for s.releaseGen() == gen {
				if time.Now().After(deadline) {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		}
		gen = s.releaseGen()
		err = again()
	}
	return err
}

// releaseGen returns how many files and dma-bufs were released so far.
func (s *server) releaseGen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases
}

// exportClosing reports whether a dma-buf exported from device dev has a
// closed descriptor and no RELEASE yet.
func (s *server) exportClosing(dev int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dmabufs {
		if d.dev == dev && d.flushed {
			return true
		}
	}
	return false
}
