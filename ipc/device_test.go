package ipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// devSize is the device buffer the cross-process device tests share.
const devSize = 1 << 20

// simRig opens a simulated Gaudi2 of one driver flavour with a memory
// manager and a DMA engine; done closes them.
func simRig(drv sim.Driver, lockDir string) (d *device.Device, m *memory.Manager, e *dma.Engine, done func(), err error) {
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.Driver, cfg.LockDir = drv, lockDir
	s, err := sim.New(cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if d, err = simdevice.OpenSim(s.Device(0)); err != nil {
		s.Close()
		return nil, nil, nil, nil, err
	}
	if m, err = memory.New(d, memory.Options{}); err != nil {
		d.Close()
		s.Close()
		return nil, nil, nil, nil, err
	}
	if e, err = dma.New(m, dma.Options{}); err != nil {
		m.Close()
		d.Close()
		s.Close()
		return nil, nil, nil, nil, err
	}
	return d, m, e, func() { e.Close(); m.Close(); d.Close(); s.Close() }, nil
}

// exportPattern fills a device buffer of devSize bytes of m with pattern,
// exports it on $ADDR and prints its handle; closeAll closes the exporter,
// the export and the buffer.
func exportPattern(d *device.Device, m *memory.Manager) (b *memory.Buffer, closeAll func(), err error) {
	b, err = m.Alloc(devSize, memory.AllocOptions{})
	if err != nil {
		return nil, nil, err
	}
	data := make([]byte, devSize)
	for i := range data {
		data[i] = pattern(i)
	}
	var x *memory.DMABuf
	var ex *Exporter
	closeAll = func() {
		if ex != nil {
			ex.Close()
		}
		if x != nil {
			x.Close()
		}
		b.Close()
	}
	if _, err = b.WriteAt(data, 0); err == nil {
		x, err = b.Export(0, devSize, memory.ExportOptions{})
	}
	if err == nil {
		ex, err = NewExporter(os.Getenv("ADDR"), ExporterOptions{})
	}
	var h Handle
	if err == nil {
		h, err = ex.Export(x, DeviceIDOf(d))
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	fmt.Println("HANDLE", h.String())
	return b, closeAll, nil
}

// childDeviceExport is process A: it fills a buffer of its own simulated
// Gaudi (out-of-tree driver) with pattern, exports it on $ADDR, prints the
// handle, then answers each "READ" line on stdin with the CRC of what its
// buffer holds; it exits when stdin closes.
func childDeviceExport() int {
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	d, m, _, done, err := simRig(sim.DriverOutOfTree, os.Getenv("LOCKDIR"))
	if err != nil {
		return fail(err)
	}
	defer done()
	b, closeExport, err := exportPattern(d, m)
	if err != nil {
		return fail(err)
	}
	defer closeExport()
	data := make([]byte, devSize)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "READ" {
			continue
		}
		if _, err := b.ReadAt(data, 0); err != nil {
			return fail(err)
		}
		fmt.Printf("SUM %08x\n", crc32.ChecksumIEEE(data))
	}
	return 0
}

// copyPatternIn copies process A's buffer (peer, imported) into local with
// e and checks that it holds pattern.
func copyPatternIn(t *testing.T, ctx context.Context, e *dma.Engine, local *memory.Buffer, peer *memory.HostBuffer) {
	t.Helper()
	if err := e.CopyToDevice(ctx, local.Range(0, devSize), peer.All()); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, devSize)
	if _, err := local.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if b != pattern(i) {
			t.Fatalf("byte %d copied from process A is %#x, want %#x", i, b, pattern(i))
		}
	}
}

// TestDeviceToDeviceAcrossProcesses: process A (a child) exports device
// memory; this process, B, imports it over the socket into its own
// simulated Gaudi and copies device to device with its own engines, both
// ways; A then reads in its own buffer what B wrote.
func TestDeviceToDeviceAcrossProcesses(t *testing.T) {
	addr := abstractAddr(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=device-export", "ADDR=" + addr, "LOCKDIR=" + t.TempDir()}, nil)
	l := c.line(t)
	hs, ok := strings.CutPrefix(l, "HANDLE ")
	if !ok {
		t.Fatalf("child: %s", l)
	}
	h, err := ParseHandle(hs)
	if err != nil {
		t.Fatal(err)
	}
	_, m, e, done, err := simRig(sim.DriverOutOfTree, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	im, err := Import(ctx, addr, h)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := im.MapInto(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil { // the mapping keeps its own reference
		t.Fatal(err)
	}
	defer peer.Close()
	local, err := m.Alloc(devSize, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()

	// A's memory into B's, by B's engines.
	copyPatternIn(t, ctx, e, local, peer)

	// B's memory into A's.
	mine := bytes.Repeat([]byte("written by B "), devSize/13+1)[:devSize]
	if _, err := local.WriteAt(mine, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.CopyToHost(ctx, peer.All(), local.Range(0, devSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.stdin.Write([]byte("READ\n")); err != nil {
		t.Fatal(err)
	}
	if l, want := c.line(t), fmt.Sprintf("SUM %08x", crc32.ChecksumIEEE(mine)); l != want {
		t.Fatalf("process A reads %q in its buffer, want %q", l, want)
	}

	// On the kernel's driver the same import is refused as not supported.
	_, um, _, udone, err := simRig(sim.DriverUpstream, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer udone()
	im2, err := Import(ctx, addr, h)
	if err != nil {
		t.Fatal(err)
	}
	defer im2.Close()
	if _, err := im2.MapInto(um); !errors.Is(err, memory.ErrNotSupported) {
		t.Errorf("MapInto on the kernel's driver: %v, want ErrNotSupported", err)
	}
}
