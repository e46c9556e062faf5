// Package devio gives the module's own packages the raw ioctl layer of an
// open device.Device, which the public API does not hand out.
//
// A device.Device owns one compute (or control) file, and the packages
// built on it keep state in step with what they issued on it: a
// memory.Manager knows every buffer and mapping of the context, a
// dma.Engine its command buffers. A caller holding the same *ioctl.Device
// could free or unmap behind their back (MEMORY FREE of a handle the
// manager still lists, CB DESTROY of a pooled buffer), so device does not
// export it; memory, dma, stream and control reach it through Of, and
// simdevice reaches the File through File. Code outside the module that
// wants raw ioctls opens its own file with package ioctl (see its
// documentation for when that is safe).
package devio

import (
	"weak"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio/hook"
	"github.com/gaudi-go/gaudi/ioctl"
)

// Of returns the typed ioctl layer d issues its calls on. It is d's: it is
// closed by d.Close and must not be closed by the caller.
func Of(d *device.Device) *ioctl.Device { return hook.Ioctl(d) }

// File returns the File d was opened over (a kernel file, a *sim.File or
// the caller's File given to device.FromFile). It is d's, as for Of; calls
// on it bypass the ioctl layer's encoding probe, EINTR retries and close
// tracking, so use it only to recognise what it is.
func File(d *device.Device) ioctl.File { return hook.File(d) }

// Attach registers p, an object built on d (a memory.Manager, a
// dma.Engine), as a dependent that d.Close closes
// before the node, newest first; p's Close calls the returned detach so
// that d forgets it. d holds p weakly, so p dropped without Close is still
// found by the garbage collector and reported as a leak. Attach fails with
// an error matching os.ErrClosed once d.Close began.
func Attach[T any, P interface {
	*T
	Close() error
}](d *device.Device, name string, p P) (detach func(), err error) {
	w := weak.Make((*T)(p))
	return hook.Attach(d, name, func() error {
		if q := P(w.Value()); q != nil {
			return q.Close()
		}
		return nil
	})
}
