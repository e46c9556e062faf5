package memory

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/sim"
)

// catchLeaks installs a leak reporter for the test, restores the default
// at its end, and returns the channel it reports on.
func catchLeaks(t *testing.T) <-chan device.Leak {
	t.Helper()
	c := make(chan device.Leak, 16)
	device.SetLeakReporter(func(l device.Leak) { c <- l })
	t.Cleanup(func() { device.SetLeakReporter(nil) })
	return c
}

// collectLeaks runs the garbage collector until n reports arrived, for at
// most five seconds, and returns them by type.
func collectLeaks(t *testing.T, c <-chan device.Leak, n int) map[string]device.Leak {
	t.Helper()
	got := map[string]device.Leak{}
	for deadline := time.Now().Add(5 * time.Second); len(got) < n && time.Now().Before(deadline); {
		runtime.GC()
		select {
		case l := <-c:
			if _, dup := got[l.Type]; dup {
				t.Errorf("a second report of a %s: %+v", l.Type, l)
			}
			got[l.Type] = l
		case <-time.After(10 * time.Millisecond):
		}
	}
	return got
}

// TestLeakedManagerReported drops a Manager, a device buffer and a host
// buffer without Close. Each is reported with what it held, and nothing is
// released: the device memory stays allocated and the host memory mapped.
func TestLeakedManagerReported(t *testing.T) {
	c := catchLeaks(t)
	d, _ := openSim(t, sim.Gaudi2)
	before, err := d.DRAMUsage()
	if err != nil {
		t.Fatal(err)
	}
	var (
		host             []byte
		bufVA, bufSize   uint64
		hostVA, hostSize uint64
	)
	func() {
		m, err := New(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Alloc(3<<20, AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.AllocHost(5*4096, HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bufVA, bufSize = b.VA(), b.AllocatedSize()
		host, hostVA, hostSize = h.Bytes(), h.VA(), h.Size()
	}()
	got := collectLeaks(t, c, 3)
	path := d.Path()
	want := map[string]device.Leak{
		"*memory.Manager":    {Type: "*memory.Manager", Device: path, FD: -1},
		"*memory.Buffer":     {Type: "*memory.Buffer", Device: path, VA: bufVA, Size: bufSize, FD: -1},
		"*memory.HostBuffer": {Type: "*memory.HostBuffer", Device: path, VA: hostVA, Host: uintptr(addrOf(host)), Size: hostSize, FD: -1},
	}
	creator := map[string]string{
		"*memory.Manager":    "memory.New",
		"*memory.Buffer":     "memory.(*Manager).Alloc",
		"*memory.HostBuffer": "memory.(*Manager).AllocHost",
	}
	for typ, w := range want {
		l, ok := got[typ]
		if !ok {
			t.Errorf("no report of the %s", typ)
			continue
		}
		if l.Type != w.Type || l.Device != w.Device || l.VA != w.VA || l.Host != w.Host || l.Size != w.Size || l.FD != w.FD {
			t.Errorf("report %+v, want %+v", l, w)
		}
		if f, _ := l.Frames().Next(); f.Function != "github.com/gaudi-go/gaudi/"+creator[typ] {
			t.Errorf("%s created at %s, want %s", typ, f.Function, creator[typ])
		}
	}
	// Nothing was released by the collection.
	after, err := d.DRAMUsage()
	if err != nil {
		t.Fatal(err)
	}
	if after.Context != before.Context+bufSize {
		t.Errorf("context DRAM %d after the leak, want %d + the leaked %d", after.Context, before.Context, bufSize)
	}
	if !slices.ContainsFunc(leak.Mappings(), func(m leak.Mapping) bool { return m.Start == uintptr(addrOf(host)) }) {
		t.Error("the leaked host memory is no longer mapped")
	}
	host[0] = 1 // still mapped: this would fault otherwise
	// Clean up by hand: closing the device releases the device memory and
	// the pinning; the host memory is the process's to unmap.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := munmapRange(host); err != nil {
		t.Fatal(err)
	}
}

// TestLeakedDMABufReported drops a dma-buf export without Close: it is
// reported with its descriptor and range, and its buffer still refuses to
// close.
func TestLeakedDMABufReported(t *testing.T) {
	c := catchLeaks(t)
	d, m := openSim(t, sim.Gaudi2)
	b, err := m.Alloc(1<<21, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	func() {
		x, err := b.Export(4096, 2*4096, ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fd = x.Fd()
	}()
	got := collectLeaks(t, c, 1)
	want := device.Leak{Type: "*memory.DMABuf", Device: d.Path(), VA: b.VA() + 4096, Size: 2 * 4096, FD: fd}
	l := got["*memory.DMABuf"]
	if l.Type != want.Type || l.Device != want.Device || l.VA != want.VA || l.Host != 0 || l.Size != want.Size || l.FD != want.FD {
		t.Errorf("report %+v, want %+v", l, want)
	}
	if err := b.Close(); !errors.Is(err, ErrInUse) {
		t.Errorf("Close of the buffer of a leaked export: %v, want ErrInUse", err)
	}
	b.dropExport() // what the lost DMABuf's Close would have done
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestClosedObjectsNotReported: objects closed before they are dropped are
// not reported.
func TestClosedObjectsNotReported(t *testing.T) {
	c := catchLeaks(t)
	d, _ := openSim(t, sim.Gaudi2)
	func() {
		m, err := New(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Alloc(1<<21, AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		x, err := b.Export(0, 4096, ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.AllocHost(4096, HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Closed by its owner, or by the Manager.
		h2, err := m.AllocHost(4096, HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b2, err := m.Alloc(1<<21, AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{x.Close(), b.Close(), h.Close(), m.Close()} {
			if err != nil {
				t.Fatal(err)
			}
		}
		_, _ = h2, b2
	}()
	// A leaked Manager marks the point by which the collector ran the
	// cleanups.
	func() {
		if _, err := New(d, Options{}); err != nil {
			t.Fatal(err)
		}
	}()
	got := collectLeaks(t, c, 1)
	if _, ok := got["*memory.Manager"]; !ok || len(got) != 1 {
		t.Fatalf("reports %+v, want only the marker Manager", got)
	}
	runtime.GC()
	select {
	case l := <-c:
		t.Errorf("report of a closed object: %+v", l)
	case <-time.After(50 * time.Millisecond):
	}
}
