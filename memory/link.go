package memory

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/internal/memlink"
)

// errNotHeld reports a hold released more often than taken: a bug in the
// package that holds, which must not free memory under a running DMA.
var errNotHeld = errors.New("memory: hold released more often than taken")

func init() {
	memlink.Hold = func(x any) error {
		switch x := x.(type) {
		case *Buffer:
			return x.addHold()
		case *HostBuffer:
			return x.addHold()
		}
		return fmt.Errorf("memory: cannot hold %T", x)
	}
	memlink.Release = func(x any) error {
		switch x := x.(type) {
		case *Buffer:
			return x.dropHold()
		case *HostBuffer:
			return x.dropHold()
		}
		return fmt.Errorf("memory: cannot release %T", x)
	}
	memlink.OnClose = func(x any, f func()) (func(), error) {
		if b, ok := x.(*Buffer); ok {
			return b.onClose(f)
		}
		return nil, fmt.Errorf("memory: cannot watch %T", x)
	}
	memlink.Attach = func(manager, mover any) {
		m, mv := manager.(*Manager), mover.(Mover)
		if m == nil {
			return
		}
		m.moverMu.Lock()
		defer m.moverMu.Unlock()
		if m.mover == nil {
			m.mover = mv
		}
	}
	memlink.Detach = func(manager, mover any) {
		m := manager.(*Manager)
		if m == nil {
			return
		}
		m.moverMu.Lock()
		defer m.moverMu.Unlock()
		if m.mover == mover {
			m.mover = nil
		}
	}
}
