package device

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gaudi-go/gaudi/internal/errclosed"
)

// A dependent is an object built on the Device's file (a memory.Manager, a
// dma.Engine) that Close closes before the file, so that
// nothing it still owns on the file (buffers, mappings, command buffers,
// CSs in flight) outlives the compute context.
type dependent struct {
	name  string       // for errors, e.g. "*memory.Manager"
	close func() error // the dependent's Close; nil-safe if it was collected
}

// attach registers a dependent and returns the function its Close calls
// to leave the list, at the end of its Close: a dependent whose own Close
// is under way stays listed, and the device's Close calls its Close
// again, which waits for the first. It fails with an error matching ErrClosed once Close
// began.
func (d *Device) attach(name string, close func() error) (detach func(), err error) {
	d.depMu.Lock()
	defer d.depMu.Unlock()
	if d.closing {
		return nil, fmt.Errorf("attach %s to %s: %w", name, d.path, errclosed.New("device"))
	}
	d.nextDep++
	id := d.nextDep
	if d.deps == nil {
		d.deps = map[uint64]dependent{}
	}
	d.deps[id] = dependent{name: name, close: close}
	return func() {
		d.depMu.Lock()
		delete(d.deps, id)
		d.depMu.Unlock()
	}, nil
}

// closeDependents closes what is still attached, newest first (an Engine
// before the Manager it was built on), and returns their errors joined.
func (d *Device) closeDependents() error {
	d.depMu.Lock()
	d.closing = true
	ids := make([]uint64, 0, len(d.deps))
	for id := range d.deps {
		ids = append(ids, id)
	}
	deps := d.deps
	d.depMu.Unlock()
	// Newest first: ids grow with attach order.
	slices.Sort(ids)
	slices.Reverse(ids)
	var errs []error
	for _, id := range ids {
		d.depMu.Lock()
		dep, ok := deps[id]
		d.depMu.Unlock()
		if !ok { // closed by its owner meanwhile
			continue
		}
		if err := dep.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", dep.name, err))
		}
		d.depMu.Lock()
		delete(deps, id) // also when it was collected and cannot detach
		d.depMu.Unlock()
	}
	return errors.Join(errs...)
}
