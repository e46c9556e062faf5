package sim

import (
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The work of a served file whose address space went away.
//
// A file opened with OpenFor reaches the address space its opener had at
// the open (remoteMem, served.go). That address space goes away when the
// opener runs another program (exec: same pid, a new image that never
// opened the device, a setuid program say) or exits, while a process that
// inherited the descriptor or was passed it may still hold the file. The
// file's device work would then go on for nobody: a CS stalled on a
// FENCE, a Gaudi3 PDMA channel waiting on a FENCE that any holder can
// release through its own mapping of the channel block, with no ioctl. It
// must not run: its host memory is gone, its results would reach nobody,
// and reported done they would be a lie (issue 23).
//
// So the simulator aborts it as soon as it learns the address space is
// gone, by any of these:
//
//   - an access to the process's memory answers 0 bytes (remoteMem.access):
//     an engine's copy, a channel's ring fetch, a completion write;
//   - File.AddressSpaceGone, which a server asks of each open file at each
//     request and periodically (tools/hlsim's reaper, every 100 ms);
//   - a queue or channel about to go on after a FENCE, and a channel about
//     to run packets a doorbell added, asks (one 1-byte pread of the held
//     /proc/PID/mem: EIO at address 0 while the address space lives, 0
//     bytes once it is gone).
//
// The abort (File.orphan): no CS is scheduled and no channel starts for
// the file from then on; its CSs in flight are rolled back and complete
// as aborted (EIO, as hl_cs_rollback_all marks them), the engines halting
// and starting again around it as in the compute reset of a release; its
// PDMA channels stop where they are, halted: MSQ_CI stays before the
// packet they had not done, so a holder reading the registers sees the
// work never done, and they take no register write (a FENCE_INC store
// stays unread) until the file is released, which clears them as any
// release does. What was aborted is counted (File.AbortedWork).

// errAddressSpaceGone ends the work of a served file whose process's
// address space went away: an engine or channel that meets it stops the
// work (nothing is completed) and the file's orphan aborts the rest.
var errAddressSpaceGone = errors.New("the served process's address space is gone (exec or exit)")

// orphanState is a served file's abort once its address space is gone.
type orphanState struct {
	flag     atomic.Bool // the address space is gone: no new work
	once     sync.Once
	css      atomic.Int64 // CSs rolled back by the abort
	channels atomic.Int64 // PDMA channels the abort stopped
}

// isOrphan reports whether f's address space is known gone.
func (f *File) isOrphan() bool { return f.orphan.flag.Load() }

// addressSpaceLost is what an engine or a channel calls when it finds the
// address space gone: the abort runs on a goroutine of its own, since it
// waits for the engines and channels, the caller among them.
func (f *File) addressSpaceLost() {
	if f.orphan.flag.CompareAndSwap(false, true) {
		go f.abortOrphan()
	}
}

// abortOrphan aborts the device work of f, once (see above). Callers that
// come while it runs wait for it.
func (f *File) abortOrphan() {
	f.orphan.flag.Store(true)
	f.orphan.once.Do(func() {
		if f.control || f.ctx == nil {
			return
		}
		d := f.dev
		d.mu.Lock()
		mine := d.compute == f
		d.mu.Unlock()
		if !mine {
			return // released: the release stopped everything
		}
		if st := d.hardware().pqm(); st != nil {
			f.orphan.channels.Store(int64(st.orphanFile(f)))
		}
		if f.cs.p.Load() == nil {
			return
		}
		// The flag is set before the halt takes hw.mu, and schedule
		// checks it under hw.mu: a CS scheduled before is aborted here,
		// none is after.
		hw := d.hardware()
		hw.resetMu.Lock()
		hw.halt()
		f.orphan.css.Store(int64(hw.abortCS(f)))
		hw.restart()
		hw.resetMu.Unlock()
	})
}

// gone checks, for a served file, whether its address space went away,
// and starts the abort if it did.
func (f *File) gone() bool {
	if f.rem == nil {
		return false
	}
	if f.isOrphan() || f.rem.Gone() {
		f.addressSpaceLost()
		return true
	}
	return false
}

// AbortedWork reports what the simulator aborted when the address space a
// file opened with OpenFor reaches went away (see AddressSpaceGone): CSs
// in flight rolled back as aborted, and Gaudi3 PDMA channels stopped
// before the packet they had not done. Both are 0 before.
func (f *File) AbortedWork() (css, channels int) {
	return int(f.orphan.css.Load()), int(f.orphan.channels.Load())
}

// scheduleOrphan refuses a CS of a file whose address space is gone.
// hw.mu must be held (see abortOrphan).
func (s *cs) scheduleOrphan() error {
	if s.c.f.isOrphan() {
		s.c.drop(dropDeviceInReset)
		return unix.EFAULT
	}
	return nil
}

// remoteErr is the error of an access to a served process's memory that
// failed: host memory that is gone (hostfault.go), or the whole address
// space gone, which ends the work (errAddressSpaceGone).
func remoteErr(r *remoteMem, src bool) error {
	if r.gone.Load() {
		return errAddressSpaceGone
	}
	return &hostGone{src: src}
}

// orphanFile stops the PDMA channels file f runs where they are: their
// goroutines end at their next look (a FENCE wait looks every
// pqmMaxSleep at most), leaving the channel halted and its registers as
// they were (the release clears them, stopFile). It returns how many
// channels are stopped so, those that stopped themselves on finding the
// address space gone included.
func (st *pqmState) orphanFile(f *File) int {
	st.mu.Lock()
	var done []chan struct{}
	for _, c := range st.chans {
		if c.running && c.f == f {
			done = append(done, c.done)
		}
		if c.resume == f {
			// A reset ended its goroutine: it does not start again.
			c.resume, c.abandoned = nil, f
		}
	}
	st.mu.Unlock()
	st.kickAll()
	for _, ch := range done {
		<-ch
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, c := range st.chans {
		if c.abandoned == f {
			n++
		}
	}
	return n
}
