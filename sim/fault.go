package sim

import "golang.org/x/sys/unix"

// Fault makes a future call fail, for tests: the Nth call of a kind (1 is
// the next one) returns Errno instead of running.
type Fault struct {
	// Ioctl is the kind of call: "INFO", "CB", "CS", "WAIT_CS", "MEMORY",
	// "DEBUG", "NIC" (the out-of-tree flavour), or "OPEN" and
	// "OPEN_CONTROL" for opens.
	Ioctl string
	// MatchOp narrows an ioctl to the sub-operation Op (the op field of
	// its arguments); without it any call of the kind counts.
	MatchOp bool
	Op      uint32
	// Nth counts matching calls; the Nth one fails. Zero means 1.
	Nth int
	// Errno is what the failing call returns.
	Errno unix.Errno
	// BadPacket makes the call run instead of failing, with a bad packet
	// where its first packet is, as if the user had written one whose
	// opcode no ASIC defines (31): for "CS", the first packet of the CS's
	// first command buffer (Gaudi's parser refuses it, EINVAL, as
	// gaudi_validate_cb does; a Gaudi2 queue meets it when it runs the
	// job, an undefined opcode); for "PQM", the next packet a Gaudi3 PDMA
	// channel fetches (an undefined opcode: pqm.go says what follows).
	// Errno, MatchOp and Op are not used.
	BadPacket bool
}

// InjectFault arms f. Faults are consumed when they fire.
func (d *Device) InjectFault(f Fault) {
	if f.Nth <= 0 {
		f.Nth = 1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, &f)
	if f.BadPacket {
		d.badPackets.Add(1)
	}
}

// takeFault counts a call of kind/op against the armed faults and returns
// the errno of one that fires. d.mu must be held.
func (d *Device) takeFault(kind string, op int) error {
	for i, f := range d.faults {
		if f.Ioctl != kind || f.BadPacket || (f.MatchOp && int(f.Op) != op) {
			continue
		}
		f.Nth--
		if f.Nth == 0 {
			d.faults = append(d.faults[:i], d.faults[i+1:]...)
			return f.Errno
		}
	}
	return nil
}

// fault is takeFault with the lock taken.
func (d *Device) fault(kind string, op int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.takeFault(kind, op)
}

// badPacket counts a call of kind against the armed BadPacket faults and
// reports whether one fires. It costs one atomic load while none is armed.
func (d *Device) badPacket(kind string) bool {
	if d.badPackets.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, f := range d.faults {
		if f.Ioctl != kind || !f.BadPacket {
			continue
		}
		f.Nth--
		if f.Nth == 0 {
			d.faults = append(d.faults[:i], d.faults[i+1:]...)
			d.badPackets.Add(-1)
			return true
		}
	}
	return false
}

// DisarmFaults drops the armed faults that have not fired and returns how
// many there were: a test that armed a storm larger than the calls it
// provoked checks its results without the rest.
func (d *Device) DisarmFaults() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.faults)
	d.faults = nil
	d.badPackets.Store(0)
	return n
}

// Faults returns copies of the armed faults that have not fired, in the
// order they were armed; Nth is what is left of each one's count.
func (d *Device) Faults() []Fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Fault, len(d.faults))
	for i, f := range d.faults {
		out[i] = *f
	}
	return out
}
