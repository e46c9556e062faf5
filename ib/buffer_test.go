package ib

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// simBuffer allocates a device buffer on a simulated Gaudi2, whose
// exports are real descriptors (a memfd, or a udmabuf where the kernel
// has /dev/udmabuf).
func simBuffer(t *testing.T, size uint64) *memory.Buffer {
	t.Helper()
	m := simtest.Memory(t, simtest.Device(t, sim.Gaudi2))
	b, err := m.Alloc(size, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestRegisterBuffer(t *testing.T) {
	b := simBuffer(t, 4<<20)
	k := newFakeKernel(DriverMLX5)
	c, err := fakeContext(k, DriverMLX5)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := RegisterBuffer(pd, b, 1<<20, 2<<20, AccessLocalWrite|AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	// The NIC sees the range at its device address, offset 0 of the
	// exported dma-buf, and the descriptor of that dma-buf.
	a := k.lastAttr
	if a[2].Data != 0 || a[3].Data != 2<<20 || a[4].Data != b.VA()+1<<20 || int(a[5].Data) != rb.DMABuf().Fd() {
		t.Errorf("REG_DMABUF_MR offset %#x length %#x iova %#x fd %d; buffer VA %#x, dma-buf fd %d",
			a[2].Data, a[3].Data, a[4].Data, a[5].Data, b.VA(), rb.DMABuf().Fd())
	}
	if rb.MR().IOVA() != b.VA()+1<<20 || !rb.MR().DMABuf() {
		t.Errorf("MR %+v", rb.MR())
	}
	// While registered the buffer is exported and cannot be closed.
	if err := b.Close(); !errors.Is(err, memory.ErrInUse) {
		t.Errorf("closing an exported buffer: %v, want ErrInUse", err)
	}
	if err := rb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, m := k.live(); m != 0 {
		t.Errorf("%d MRs live after Close", m)
	}

	// A NIC without dma-buf registration: nothing stays exported.
	k.fail["MR.REG_DMABUF_MR"] = unix.EOPNOTSUPP
	if _, err := RegisterBuffer(pd, b, 0, 1<<20, AccessLocalWrite); !errors.Is(err, ErrDMABufNotSupported) {
		t.Errorf("RegisterBuffer on a NIC without dma-buf: %v", err)
	}
	// A range the exporter refuses never reaches the NIC.
	calls := len(k.calls)
	if _, err := RegisterBuffer(pd, b, 100, 4096, AccessLocalWrite); !errors.Is(err, memory.ErrRange) {
		t.Errorf("unaligned range: %v, want memory.ErrRange", err)
	}
	if len(k.calls) != calls {
		t.Errorf("a refused export still called the NIC: %v", k.calls[calls:])
	}
	if _, err := RegisterBuffer(pd, nil, 0, 4096, AccessLocalWrite); err == nil {
		t.Errorf("nil buffer accepted")
	}
	if err := b.Close(); err != nil {
		t.Errorf("closing the buffer after every registration closed: %v", err)
	}
}
