package gohlml

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/device"
)

// Critical events
//
// The driver's notifier (an eventfd registered with INFO REGISTER_EVENTFD,
// and INFO GET_EVENTS) is served on compute nodes only: both drivers refuse
// the three ops on a control node with EOPNOTSUPP (linux 6.12 and the
// out-of-tree driver, common/habanalabs_ioctl.c, hl_info_ioctl_control),
// and a compute node is the device's single compute context, which a
// monitor must never take from a workload. So an event set watches what
// the driver serves on control nodes in every state (_hl_info_ioctl's
// first switch), and WaitForEvent polls it every PollInterval:
//
//   - INFO RESET_COUNT: a hard or compute reset since the last look (the
//     driver resets after every fatal error, and on a reset requested
//     through sysfs hard_reset or hlsim ctl);
//   - INFO DEVICE_STATUS: the device turned disabled, needs a reset or
//     went into reset;
//   - the errors the driver captures (captured_err_info): INFO
//     RAZWI_EVENT, PAGE_FAULT_EVENT, UNDEFINED_OPCODE_EVENT, HW_ERR_EVENT
//     and FW_ERR_EVENT, each seen when its timestamp changes;
//   - a device whose control node stops answering (gone, or its queries
//     fail with an error other than "in reset").
//
// Each is a critical error (HlmlCriticalError), as HLML maps a device
// reset, RAZWI, page fault and undefined opcode. A look compares with the
// last one, not with an edge the driver signals, so what happened between
// two calls of WaitForEvent (the device plugin waits 1 s every 10 s) is
// seen by the next call's first look; a device that left a working state
// and came back between two looks without a reset is not seen.

// PollInterval is how often WaitForEvent looks at the registered devices
// while it waits.
const PollInterval = 100 * time.Millisecond

// EventSet is a set of devices whose critical events WaitForEvent
// reports. It is a small value, safe to copy and to use from many
// goroutines at once; NewEventSet makes one, DeleteEventSet ends it.
type EventSet struct{ s *eventSet }

// Event is a critical event of a device. Serial is the serial number of
// the device it happened on (as gohlml fills it, so that callers can call
// DeviceHandleBySerial with it); Etype is HlmlCriticalError, or 0 when
// WaitForEvent's timeout passed without an event.
type Event struct {
	Serial string
	Etype  uint64
}

type eventSet struct {
	mu      sync.Mutex
	watches []*watch
	pending []Event
	deleted bool
	done    chan struct{} // closed by DeleteEventSet
}

// watch is one registered device and what was last seen of it.
type watch struct {
	dev    Device
	serial string
	last   snapshot
	lost   bool // reported as lost; not reported again
}

// snapshot is what a device's control node tells about its health.
type snapshot struct {
	resets   uint64                       // hard + compute resets
	status   device.Status                // DEVICE_STATUS
	captured [capturedKinds]time.Duration // the driver's stamps of the captured errors
}

const capturedKinds = 5

// take reads a snapshot of d.
func take(d Device) (snapshot, error) {
	var s snapshot
	dev, err := d.ctl("events")
	if err != nil {
		return s, err
	}
	rc, err := dev.ResetCount()
	if err != nil {
		return s, driverError("reset count", err)
	}
	s.resets = uint64(rc.Hard) + uint64(rc.Soft)
	if s.status, err = dev.Status(); err != nil {
		return s, driverError("status", err)
	}
	stamps := [capturedKinds]func() (time.Duration, error){
		func() (time.Duration, error) { e, _, err := dev.RazwiEvent(); return e.Time, err },
		func() (time.Duration, error) { e, _, err := dev.PageFaultEvent(); return e.Time, err },
		func() (time.Duration, error) { e, _, err := dev.UndefinedOpcodeEvent(); return e.Time, err },
		func() (time.Duration, error) { e, _, err := dev.HWErrEvent(); return e.Time, err },
		func() (time.Duration, error) { e, _, err := dev.FWErrEvent(); return e.Time, err },
	}
	for i, f := range stamps {
		t, err := f()
		if err != nil && !errors.Is(driverError("", err), ErrNotSupported) {
			return s, driverError("captured errors", err)
		}
		s.captured[i] = t
	}
	return s, nil
}

// healthy reports whether a status is one a working device passes through.
func healthy(s device.Status) bool {
	return s == device.StatusOperational || s == device.StatusInDeviceCreation
}

// critical reports whether next shows a critical event since prev. A
// device's trouble is one event: leaving a healthy state is reported, and
// the reset count that grows while (or after) the device is out of it
// belongs to the same incident, whichever of the two a look saw first.
func critical(prev, next snapshot) bool {
	if healthy(prev.status) && (!healthy(next.status) || next.resets != prev.resets) {
		return true
	}
	for i := range next.captured {
		if next.captured[i] != 0 && next.captured[i] != prev.captured[i] {
			return true
		}
	}
	return false
}

// NewEventSet returns an empty event set.
func NewEventSet() EventSet {
	return EventSet{&eventSet{done: make(chan struct{})}}
}

// RegisterEventForDevice adds the device whose serial number is serial
// to es (gohlml looks devices up by serial here, whatever its parameter's
// name). event must be HlmlCriticalError: no driver reports the ECC,
// clock and DRAM events HLML also defines, and asking for them gives
// ErrNotSupported. The device's state is taken now; WaitForEvent reports
// what changes after.
func RegisterEventForDevice(es EventSet, event int, serial string) error {
	if es.s == nil {
		return ErrInvalidArgument
	}
	if event != HlmlCriticalError {
		return ErrNotSupported
	}
	d, err := DeviceHandleBySerial(serial)
	if err != nil {
		return fmt.Errorf("hlml: device not found: %w", err)
	}
	snap, err := take(*d)
	if err != nil {
		return err
	}
	es.s.mu.Lock()
	defer es.s.mu.Unlock()
	if es.s.deleted {
		return ErrInvalidArgument
	}
	es.s.watches = append(es.s.watches, &watch{dev: *d, serial: serial, last: snap})
	return nil
}

// DeleteEventSet ends es: waits in progress return, and later calls with
// es fail with ErrInvalidArgument. Deleting twice is harmless.
func DeleteEventSet(es EventSet) {
	if es.s == nil {
		return
	}
	es.s.mu.Lock()
	defer es.s.mu.Unlock()
	if !es.s.deleted {
		es.s.deleted = true
		close(es.s.done)
	}
}

// WaitForEvent waits up to timeout milliseconds for a critical event of
// a device of es and returns it. As gohlml's, it reports a timeout with
// a nil error and an Event whose Etype is 0 (callers skip events that are
// not HlmlCriticalError). It looks at the devices at once and then every
// PollInterval, so it returns within timeout plus the time of one look.
// Events of several devices seen at one look are returned by successive
// calls. After Shutdown it fails with ErrNotIntialized.
func WaitForEvent(es EventSet, timeout uint) (Event, error) {
	if es.s == nil {
		return Event{}, ErrInvalidArgument
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Millisecond)
	for {
		e, ok, err := es.s.poll()
		if ok || err != nil {
			return e, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Event{}, nil
		}
		t := time.NewTimer(min(left, PollInterval))
		select {
		case <-t.C:
		case <-es.s.done:
			t.Stop()
			return Event{}, ErrInvalidArgument
		}
	}
}

// poll returns a pending event, looking at every device when none is.
func (s *eventSet) poll() (Event, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return Event{}, false, ErrInvalidArgument
	}
	if len(s.pending) == 0 {
		for _, w := range s.watches {
			next, err := take(w.dev)
			switch {
			case errors.Is(err, ErrNotIntialized):
				return Event{}, false, err
			case err != nil:
				// A device that stops answering is lost: one event.
				if !w.lost {
					w.lost = true
					s.pending = append(s.pending, Event{Serial: w.serial, Etype: HlmlCriticalError})
				}
				continue
			}
			if critical(w.last, next) {
				s.pending = append(s.pending, Event{Serial: w.serial, Etype: HlmlCriticalError})
			}
			w.last, w.lost = next, false
		}
	}
	if len(s.pending) == 0 {
		return Event{}, false, nil
	}
	e := s.pending[0]
	s.pending = s.pending[1:]
	return e, true, nil
}
