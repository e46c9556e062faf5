package main

// The work of a file whose opener's address space went away.
//
// A served file reaches the address space its opener had at the open
// (sim.OpenFor). When the opener runs another program (exec) or exits
// while another process still holds the descriptor (a child that
// inherited it, one it was passed to), the file's device work must not go
// on: the simulator aborts it as soon as it learns the address space is
// gone (sim/orphan.go: an access that finds it gone, a queue or channel
// resuming after a FENCE, a doorbell). What the server adds is the
// learning when nothing of the file moves: every reap tick (100 ms) it
// asks each open file (sim.File.AddressSpaceGone, one 1-byte pread of the
// /proc/PID/mem the file holds: EIO while the address space lives, 0
// bytes once it is gone, by exec or exit alike; a pidfd would tell an
// exit but not an exec), which aborts a CS stalled on a fence and stops
// the file's PDMA channels; then it logs what was aborted. Ioctls on the
// file are refused from then on (inAddressSpace), and a hard reset kills
// no process for it (kill): the pidfd's process, if it lives, runs
// another program that never opened the device.

// abortOrphans aborts the work of the open files whose opener's address
// space went away since the last look, and logs it.
func (s *server) abortOrphans() {
	s.mu.Lock()
	var look []*openFile
	for _, of := range s.files {
		if !of.orphaned {
			look = append(look, of)
		}
	}
	s.mu.Unlock()
	for _, of := range look {
		if !of.f.AddressSpaceGone() {
			continue
		}
		s.mu.Lock()
		first := !of.orphaned && s.open(of)
		of.orphaned = true
		s.mu.Unlock()
		if !first || of.ctl {
			continue // released meanwhile, or a control file: no work
		}
		css, chans := of.f.AbortedWork()
		s.log.Printf("the address space of process %d, which opened %s, went away (exec or exit) while the file is still held: its work was aborted, not run (%d CSs, %d PDMA channels)",
			of.pid, s.sys.Device(of.dev).Name(), css, chans)
	}
}

// open reports whether of is still an open file of the server. s.mu must
// be held.
func (s *server) open(of *openFile) bool {
	for _, o := range s.files {
		if o == of {
			return true
		}
	}
	return false
}
