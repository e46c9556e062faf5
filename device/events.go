package device

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Events is a set of notifier events, the hl.HL_NOTIFIER_EVENT_* bits.
type Events uint64

// String lists the events by name, e.g. "DEVICE_RESET|RAZWI".
func (e Events) String() string {
	if e == 0 {
		return "none"
	}
	var names []string
	for v := uint64(e); v != 0; v &= v - 1 {
		bit := uint64(1) << bits.TrailingZeros64(v)
		if n, ok := hl.NotifierEventNames[bit]; ok {
			names = append(names, n)
		} else {
			names = append(names, fmt.Sprintf("%#x", bit))
		}
	}
	sort.Strings(names)
	return strings.Join(names, "|")
}

// Has reports whether every event of mask is in e.
func (e Events) Has(mask Events) bool { return e&mask == mask }

// Events reads and clears the notifier events recorded for this compute
// node (INFO GET_EVENTS). Control nodes do not receive events.
func (d *Device) Events() (Events, error) {
	r, err := infoStruct[uint64](d, hl.HL_INFO_GET_EVENTS, nil)
	return Events(r), err
}

// Notifier delivers the device's notifier events as they happen: it
// registers an eventfd with the driver, which signals it whenever it records
// an event. A Notifier is safe for concurrent use; Close is idempotent.
type Notifier struct {
	d  *Device
	mu sync.Mutex
	f  *os.File // the eventfd, nil once closed
}

// Notifier registers an eventfd with the driver (INFO REGISTER_EVENTFD).
// Only one may be registered per compute node: a second gets an error
// matching unix.EINVAL.
func (d *Device) Notifier() (*Notifier, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("create eventfd: %w", err)
	}
	var a hl.InfoArgs
	a.SetEventfd(uint32(fd))
	if err := d.io.Info(hl.HL_INFO_REGISTER_EVENTFD, &a, nil); err != nil {
		if cerr := unix.Close(fd); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close eventfd: %w", cerr))
		}
		return nil, err
	}
	return &Notifier{d: d, f: os.NewFile(uintptr(fd), "hl-eventfd")}, nil
}

// ErrNotifierClosed reports a Wait on a closed Notifier. It is
// os.ErrClosed, the sentinel every package of the module uses for closed
// objects.
var ErrNotifierClosed = os.ErrClosed

// Wait blocks until the driver signals at least one event, then returns the
// events it recorded (read and cleared with GET_EVENTS). It returns
// ctx.Err() when ctx ends first.
func (n *Notifier) Wait(ctx context.Context) (Events, error) {
	n.mu.Lock()
	f := n.f
	n.mu.Unlock()
	if f == nil {
		return 0, errclosed.New("notifier")
	}
	// A deadline left by an earlier, cancelled Wait must not end this one.
	f.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var buf [8]byte
	if _, err := f.Read(buf[:]); err != nil {
		if ctx.Err() != nil {
			f.SetReadDeadline(time.Time{})
			return 0, ctx.Err()
		}
		if errors.Is(err, os.ErrClosed) {
			return 0, errclosed.New("notifier")
		}
		return 0, fmt.Errorf("read eventfd: %w", err)
	}
	return n.d.Events()
}

// Close unregisters the eventfd (INFO UNREGISTER_EVENTFD) and closes it,
// and returns the errors of both; a Wait in progress returns an error
// matching ErrNotifierClosed.
func (n *Notifier) Close() error {
	n.mu.Lock()
	f := n.f
	n.f = nil
	n.mu.Unlock()
	if f == nil {
		return nil
	}
	var a hl.InfoArgs
	err := n.d.io.Info(hl.HL_INFO_UNREGISTER_EVENTFD, &a, nil)
	return errors.Join(err, f.Close())
}

// Event records. The driver keeps the first event of each kind until the
// device is reset or reopened; the ok result is false when none was
// recorded.

// CSTimeout is the first command submission that timed out.
type CSTimeout struct {
	Time time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Seq  uint64
}

// CSTimeoutEvent returns the recorded CS timeout, if any.
func (d *Device) CSTimeoutEvent() (CSTimeout, bool, error) {
	r, err := infoStruct[hl.InfoCSTimeoutEvent](d, hl.HL_INFO_CS_TIMEOUT_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return CSTimeout{}, false, err
	}
	return CSTimeout{Time: time.Duration(r.Timestamp), Seq: r.Seq}, true, nil
}

// Razwi is an illegal access (read or write) the device recorded.
type Razwi struct {
	Time    time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Addr    uint64
	Engines []uint16 // engines that may have caused it
	Flags   uint8    // hl.HL_RAZWI_* bits
}

// RazwiEvent returns the recorded RAZWI, if any.
func (d *Device) RazwiEvent() (Razwi, bool, error) {
	r, err := infoStruct[hl.InfoRazwiEvent](d, hl.HL_INFO_RAZWI_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return Razwi{}, false, err
	}
	n := min(int(r.NumOfPossibleEngines), len(r.EngineID))
	return Razwi{Time: time.Duration(r.Timestamp), Addr: r.Addr, Engines: append([]uint16(nil), r.EngineID[:n]...), Flags: r.Flags}, true, nil
}

// PageFault is a device MMU page fault.
type PageFault struct {
	Time   time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Addr   uint64
	Engine uint16
}

// PageFaultEvent returns the recorded page fault, if any; UserMappings
// returns the mappings recorded with it.
func (d *Device) PageFaultEvent() (PageFault, bool, error) {
	r, err := infoStruct[hl.PageFaultInfo](d, hl.HL_INFO_PAGE_FAULT_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return PageFault{}, false, err
	}
	return PageFault{Time: time.Duration(r.Timestamp), Addr: r.Addr, Engine: r.EngineID}, true, nil
}

// UndefinedOpcode is a queue that met a packet opcode it does not know.
type UndefinedOpcode struct {
	Time    time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Engine  uint32
	Stream  uint32
	CQAddr  uint64
	CQSize  uint32
	CBAddrs [][]uint64 // per stream, the command buffers in flight
}

// UndefinedOpcodeEvent returns the recorded undefined-opcode event, if any.
func (d *Device) UndefinedOpcodeEvent() (UndefinedOpcode, bool, error) {
	r, err := infoStruct[hl.InfoUndefinedOpcodeEvent](d, hl.HL_INFO_UNDEFINED_OPCODE_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return UndefinedOpcode{}, false, err
	}
	u := UndefinedOpcode{Time: time.Duration(r.Timestamp), Engine: r.EngineID, Stream: r.StreamID, CQAddr: r.CQAddr, CQSize: r.CQSize}
	n := min(int(r.CBAddrStreamsLen), len(r.CBAddrStreams[0]))
	for _, s := range r.CBAddrStreams {
		u.CBAddrs = append(u.CBAddrs, append([]uint64(nil), s[:n]...))
	}
	return u, true, nil
}

// HWError is a hardware error event.
type HWError struct {
	Time    time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	EventID uint16
}

// HWErrEvent returns the recorded hardware error, if any.
func (d *Device) HWErrEvent() (HWError, bool, error) {
	r, err := infoStruct[hl.InfoHWErrEvent](d, hl.HL_INFO_HW_ERR_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return HWError{}, false, err
	}
	return HWError{Time: time.Duration(r.Timestamp), EventID: r.EventID}, true, nil
}

// FWError is a firmware error event.
type FWError struct {
	Time    time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Type    hl.InfoFWErrType
	EventID uint16
}

// FWErrEvent returns the recorded firmware error, if any.
func (d *Device) FWErrEvent() (FWError, bool, error) {
	r, err := infoStruct[hl.InfoFWErrEvent](d, hl.HL_INFO_FW_ERR_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return FWError{}, false, err
	}
	return FWError{Time: time.Duration(r.Timestamp), Type: hl.InfoFWErrType(r.ErrType), EventID: r.EventID}, true, nil
}

// EngineError is an error a user engine reported.
type EngineError struct {
	Time   time.Duration // CLOCK_MONOTONIC, as the driver stamps events
	Engine uint16
	Count  uint16
}

// EngineErrEvent returns the recorded engine error, if any.
func (d *Device) EngineErrEvent() (EngineError, bool, error) {
	r, err := infoStruct[hl.InfoEngineErrEvent](d, hl.HL_INFO_USER_ENGINE_ERR_EVENT, nil)
	if err != nil || r.Timestamp == 0 {
		return EngineError{}, false, err
	}
	return EngineError{Time: time.Duration(r.Timestamp), Engine: r.EngineID, Count: r.ErrorCount}, true, nil
}

// LastOpenTime returns INFO LAST_ERR_OPEN_DEV_TIME: despite the op's name,
// the 6.12 driver reports when the device was last opened successfully, on
// CLOCK_MONOTONIC; zero when never.
func (d *Device) LastOpenTime() (time.Duration, error) {
	r, err := infoStruct[hl.InfoLastErrOpenDevTime](d, hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, nil)
	return time.Duration(r.Timestamp), err
}
