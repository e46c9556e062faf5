package device

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Queues, engines and engine cores are named by the numbers of the
// driver's uapi enums (hl.Gaudi2QueueID, hl.GaudiEngineID, ...), and each
// ASIC numbers them its own way: queue 0 is DMA_0_0 on a first-generation
// Gaudi and PDMA_0_0 on a Gaudi2. The types here carry the ASIC with the
// number, so a queue of one ASIC given to a device of another is an
// error (*WrongASICError) before anything reaches the driver, and they
// print as the driver names them.

// ErrUnknownName reports a queue, engine or engine core name the device's
// ASIC does not have.
var ErrUnknownName = errors.New("unknown name")

// WrongASICError reports a queue, engine or engine core used with a
// device whose ASIC numbers them differently, or the zero value of one
// (which names nothing). It matches unix.EINVAL, as the driver's answer to
// an invalid id does.
type WrongASICError struct {
	// Kind is "queue", "engine" or "engine core".
	Kind string
	// Name is the identity as it prints.
	Name string
	// Have is the ASIC the identity belongs to (Gaudi, Gaudi2 or Gaudi3,
	// see Queue.ASIC), or ASICUnknown for a zero value.
	Have ASIC
	// Device is the ASIC of the device it was used with.
	Device ASIC
}

func (e *WrongASICError) Error() string {
	if e.Have == ASICUnknown {
		return fmt.Sprintf("no %s given for a %s device", e.Kind, e.Device)
	}
	return fmt.Sprintf("%s %s is a %s %s, not one of a %s device", e.Kind, e.Name, e.Have, e.Kind, e.Device)
}

// Unwrap returns unix.EINVAL.
func (e *WrongASICError) Unwrap() error { return unix.EINVAL }

// family returns the ASIC whose numbering a uses: Gaudi for both
// first-generation Gaudis, Gaudi2 for every Gaudi2 revision, Gaudi3 for
// Gaudi3 and the HL-338, ASICUnknown for the others (whose queues and
// engines this package does not name).
func (a ASIC) family() ASIC {
	switch {
	case a.IsGaudi():
		return Gaudi
	case a.IsGaudi2():
		return Gaudi2
	case a.IsGaudi3():
		return Gaudi3
	}
	return ASICUnknown
}

// Queue is one hardware queue of an ASIC: the queue_index a command
// submission names, with the ASIC it belongs to. The zero Queue names no
// queue; every call that takes one refuses it.
//
// Get one by name from an open device (Device.Queue), from the list of
// the device's queues (Device.Queues), or from the driver's enum
// (GaudiQueue, Gaudi2Queue, Gaudi3Queue). Queues are comparable.
type Queue struct {
	asic ASIC // Gaudi, Gaudi2 or Gaudi3; ASICUnknown for the zero Queue
	id   uint32
}

// GaudiQueue returns the first-generation Gaudi queue id
// (hl.GAUDI_QUEUE_ID_*).
func GaudiQueue(id hl.GaudiQueueID) Queue { return Queue{asic: Gaudi, id: uint32(id)} }

// Gaudi2Queue returns the Gaudi2 queue id (hl.GAUDI2_QUEUE_ID_*).
func Gaudi2Queue(id hl.Gaudi2QueueID) Queue { return Queue{asic: Gaudi2, id: uint32(id)} }

// Gaudi3Queue returns the Gaudi3 queue id (gaudi3.GAUDI3_QUEUE_ID_*).
// Gaudi3 has one queue, the driver's own CPU queue: user work does not go
// through command submission on Gaudi3.
func Gaudi3Queue(id gaudi3.QueueID) Queue { return Queue{asic: Gaudi3, id: uint32(id)} }

// ASIC returns the ASIC whose queue q is: Gaudi (which stands for
// GaudiSec too), Gaudi2 (for every revision) or Gaudi3 (the HL-338 too),
// or ASICUnknown for the zero Queue.
func (q Queue) ASIC() ASIC { return q.asic }

// ID returns the driver's number for the queue (its hl.*_QUEUE_ID_*
// value), whatever ASIC it belongs to; Device.QueueID checks the ASIC.
func (q Queue) ID() uint32 { return q.id }

// String returns the driver's name of the queue without the enum's
// prefix, such as "PDMA_0_0" or "DCORE0_EDMA_0_0".
func (q Queue) String() string {
	var name string
	switch q.asic {
	case Gaudi:
		name = hl.GaudiQueueIDNames[hl.GaudiQueueID(q.id)]
	case Gaudi2:
		name = hl.Gaudi2QueueIDNames[hl.Gaudi2QueueID(q.id)]
	case Gaudi3:
		name = gaudi3.QueueIDNames[gaudi3.QueueID(q.id)]
	case ASICUnknown:
		return "Queue(none)"
	}
	if name == "" {
		return fmt.Sprintf("Queue(%s, %d)", q.asic, q.id)
	}
	return name
}

// Queues returns every queue the driver numbers for the device's ASIC, in
// the driver's order (an empty list for ASICs other than Gaudi, Gaudi2 and
// Gaudi3, whose one queue is CPU_PQ). Not every queue takes every submission: the CPU queue (CPU_PQ)
// is the driver's own, and the driver refuses queues of engines the device
// has not enabled.
func (d *Device) Queues() []Queue {
	return slices.Clone(queueTables()[d.asic.family()].list)
}

// Queue returns the device's queue of the given name, as Queue.String
// spells it; case does not matter. An unknown name gives an error matching
// ErrUnknownName.
func (d *Device) Queue(name string) (Queue, error) {
	q, ok := queueTables()[d.asic.family()].byName[strings.ToUpper(name)]
	if !ok {
		return Queue{}, fmt.Errorf("%s has no queue %q: %w", d.asic, name, ErrUnknownName)
	}
	return q, nil
}

// QueueID returns the driver's number for q on the device: the
// queue_index of a command submission. A queue of another ASIC, or the
// zero Queue, gives a *WrongASICError.
func (d *Device) QueueID(q Queue) (uint32, error) {
	if q.asic == ASICUnknown || q.asic != d.asic.family() {
		return 0, &WrongASICError{Kind: "queue", Name: q.String(), Have: q.asic, Device: d.asic}
	}
	return q.id, nil
}

// idTable is the list of one ASIC's queues, engines or engine cores in
// id order, and the same by name.
type idTable[T fmt.Stringer] struct {
	list   []T
	byName map[string]T
}

func newIDTable[T fmt.Stringer, K ~uint32](names map[K]string, mk func(K) T) idTable[T] {
	ids := slices.Sorted(maps.Keys(names))
	t := idTable[T]{byName: make(map[string]T, len(ids))}
	for _, id := range ids {
		v := mk(id)
		t.list = append(t.list, v)
		t.byName[names[id]] = v
	}
	return t
}

var queueTables = sync.OnceValue(func() map[ASIC]idTable[Queue] {
	return map[ASIC]idTable[Queue]{
		Gaudi:  newIDTable(hl.GaudiQueueIDNames, GaudiQueue),
		Gaudi2: newIDTable(hl.Gaudi2QueueIDNames, Gaudi2Queue),
		Gaudi3: newIDTable(gaudi3.QueueIDNames, Gaudi3Queue),
	}
})
