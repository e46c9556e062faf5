package memory

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/sim"
)

// TestDMABufAfterClose: hooks run once, in Close and while the descriptor
// is still open; a stopped hook does not run; a hook added after Close
// runs at once.
func TestDMABufAfterClose(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	b, err := m.Alloc(1, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	page := uint64(os.Getpagesize())
	x, err := b.Export(0, page, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fd := x.Fd()
	ran, stoppedRan := 0, 0
	var fdOpenInHook error
	x.AfterClose(func() {
		ran++
		var st unix.Stat_t
		fdOpenInHook = unix.Fstat(fd, &st)
	})
	stop := x.AfterClose(func() { stoppedRan++ })
	if !stop() {
		t.Error("stop of a pending hook reported false")
	}
	if stop() {
		t.Error("second stop reported true")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if ran != 1 || stoppedRan != 0 {
		t.Errorf("hook ran %d times, stopped hook %d times; want 1 and 0", ran, stoppedRan)
	}
	if fdOpenInHook != nil {
		t.Errorf("descriptor closed before the hook ran: %v", fdOpenInHook)
	}
	late := make(chan struct{})
	if x.AfterClose(func() { close(late) })() {
		t.Error("stop of a hook added after Close reported true")
	}
	select {
	case <-late:
	case <-time.After(10 * time.Second):
		t.Fatal("hook added after Close did not run")
	}
}
