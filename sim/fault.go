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
}

// InjectFault arms f. Faults are consumed when they fire.
func (d *Device) InjectFault(f Fault) {
	if f.Nth <= 0 {
		f.Nth = 1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, &f)
}

// takeFault counts a call of kind/op against the armed faults and returns
// the errno of one that fires. d.mu must be held.
func (d *Device) takeFault(kind string, op int) error {
	for i, f := range d.faults {
		if f.Ioctl != kind || (f.MatchOp && int(f.Op) != op) {
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

// DisarmFaults drops the armed faults that have not fired and returns how
// many there were: a test that armed a storm larger than the calls it
// provoked checks its results without the rest.
func (d *Device) DisarmFaults() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.faults)
	d.faults = nil
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
