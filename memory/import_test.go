package memory_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

// pair opens n simulated Gaudi2s of one driver flavour, each with a
// Manager and a DMA engine.
func pair(t *testing.T, cfg sim.Config) ([]*memory.Manager, []*dma.Engine) {
	t.Helper()
	cfg.LockDir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var ms []*memory.Manager
	var es []*dma.Engine
	for _, sd := range s.Devices() {
		d, err := simdevice.OpenSim(sd)
		if err != nil {
			t.Fatal(err)
		}
		m, err := memory.New(d, memory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := dma.New(m, dma.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(); m.Close(); d.Close() })
		ms, es = append(ms, m), append(es, e)
	}
	return ms, es
}

func ootConfig(n int) sim.Config {
	cfg := sim.Default(sim.Gaudi2, n)
	cfg.Driver = sim.DriverOutOfTree
	return cfg
}

func fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	return len(ents)
}

// TestImportDeviceToDevice: device 0 exports a buffer, device 1 imports it
// and copies to and from it with its own engines.
func TestImportDeviceToDevice(t *testing.T) {
	ms, es := pair(t, ootConfig(2))
	ctx := context.Background()
	const n = 1 << 20
	src, err := ms[0].Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := bytes.Repeat([]byte("peer memory "), n/12+1)[:n]
	if _, err := src.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	exp, err := src.Export(0, n, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	imp, err := ms[1].Import(exp.Fd(), n)
	if err != nil {
		t.Fatal(err)
	}
	if !imp.Imported() || imp.Bytes() != nil || imp.Range(0, n).Bytes() != nil || imp.Size() != n {
		t.Errorf("import: imported %v, bytes %v, size %d", imp.Imported(), imp.Bytes() != nil, imp.Size())
	}
	if r := ms[1].Lookup(imp.VA() + 5); r.Kind != memory.HostMemory || r.Host != imp || r.Offset != 5 {
		t.Errorf("Lookup of the import: %+v", r)
	}
	// The exporter's descriptor is not needed any more.
	if err := exp.Close(); err != nil {
		t.Fatal(err)
	}

	local, err := ms[1].Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if err := es[1].CopyToDevice(ctx, local.Range(0, n), imp.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := local.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("device 1 copied other bytes than device 0 holds")
	}
	// And back, into the exporter's memory.
	back := bytes.Repeat([]byte{0x5a, 0xa5}, n/2)
	if _, err := local.WriteAt(back, 0); err != nil {
		t.Fatal(err)
	}
	if err := es[1].CopyToHost(ctx, imp.Range(4096, n-4096), local.Range(0, n-4096)); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:4096], want[:4096]) || !bytes.Equal(got[4096:], back[:n-4096]) {
		t.Fatal("device 0's memory is not what device 1 wrote into the import")
	}

	// Close unmaps it, once; the driver's reference (the simulator's
	// descriptor of the buffer) goes with it.
	before := fds(t)
	if err := imp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := imp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if after := fds(t); after != before-1 {
		t.Errorf("%d descriptors after the import closed, %d before", after, before)
	}
	if r := ms[1].Lookup(imp.VA()); r.Kind != memory.Unknown {
		t.Errorf("a closed import is still found: %+v", r)
	}
	if err := es[1].CopyToDevice(ctx, local.Range(0, 8), imp.Range(0, 8)); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("copy from a closed import: %v, want ErrClosed", err)
	}
}

// TestImportHeldByTransfer: Close of an import a transfer uses waits for
// the transfer.
func TestImportHeldByTransfer(t *testing.T) {
	ms, es := pair(t, ootConfig(2))
	const n = 64 << 20
	src, err := ms[0].Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	exp, err := src.Export(0, n, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	imp, err := ms[1].Import(exp.Fd(), n)
	if err != nil {
		t.Fatal(err)
	}
	local, err := ms[1].Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	b := es[1].NewBatch(dma.BatchOptions{})
	if err := b.CopyToDevice(local.Range(0, n), imp.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := imp.Close(); err != nil {
		t.Fatalf("Close while held: %v", err)
	}
	// Still mapped until the transfer ends: the device address resolves.
	if r := ms[1].Lookup(imp.VA()); r.Kind != memory.HostMemory {
		t.Errorf("the import went away under the transfer: %+v", r)
	}
	if err := tr.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := ms[1].Lookup(imp.VA()); r.Kind != memory.Unknown {
		t.Errorf("the import outlived the transfer that held it: %+v", r)
	}
}

func TestImportRefusals(t *testing.T) {
	// The kernel's driver has no REG_DMABUF_FD.
	up := sim.Default(sim.Gaudi2, 2)
	up.Driver = sim.DriverUpstream
	ms, _ := pair(t, up)
	src, err := ms[0].Alloc(4096, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	exp, err := src.Export(0, 4096, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	if _, err := ms[1].Import(exp.Fd(), 4096); !errors.Is(err, memory.ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("import on the kernel's driver: %v, want ErrNotSupported (EINVAL)", err)
	}
	if info, _ := ms[1].Device().DriverInfo(); info.Driver != device.DriverUpstream {
		t.Errorf("driver %v", info.Driver)
	}

	// Out-of-tree without peer to peer: EPERM, not supported either.
	np := ootConfig(1)
	np.NoPeerToPeer = true
	nm, _ := pair(t, np)
	if _, err := nm[0].Import(exp.Fd(), 4096); !errors.Is(err, memory.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Errorf("import without peer to peer: %v, want ErrNotSupported (EPERM)", err)
	}

	// Out-of-tree: bad arguments are not "not supported".
	om, _ := pair(t, ootConfig(1))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name   string
		fd     int
		length uint64
		want   error
	}{
		{"pipe", int(r.Fd()), 4096, unix.EINVAL},
		{"closed descriptor", 1 << 20, 4096, unix.EBADF},
		{"longer than the buffer", exp.Fd(), 8192, unix.EINVAL},
	} {
		_, err := om[0].Import(tc.fd, tc.length)
		if !errors.Is(err, tc.want) || errors.Is(err, memory.ErrNotSupported) {
			t.Errorf("%s: %v, want %v and not ErrNotSupported", tc.name, err, tc.want)
		}
	}
	if _, err := om[0].Import(exp.Fd(), 0); !errors.Is(err, memory.ErrRange) {
		t.Errorf("length 0: %v, want ErrRange", err)
	}
	om[0].Close()
	if _, err := om[0].Import(exp.Fd(), 4096); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("import on a closed manager: %v, want ErrClosed", err)
	}
}
