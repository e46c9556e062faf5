package memory_test

import (
	"bytes"
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

// The registration cache against host memory that is unmapped and mapped
// again at the same address. The driver pins a mapping's pages at MAP, so
// a cached mapping of memory that went away goes on moving data to and
// from the old pages; the simulator in strict mode reports a CS that
// reaches such a mapping (sim.ViolationHostReplaced).

// cacheRig is a simulated Gaudi2 with a Manager, a DMA engine and a
// device buffer of n bytes.
type cacheRig struct {
	sd  *sim.Device
	m   *memory.Manager
	e   *dma.Engine
	dev *memory.Buffer
}

func newCacheRig(t *testing.T, n uint64) cacheRig {
	t.Helper()
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.Strict = sim.StrictOn // the test is about what strict mode sees
	s := simtest.New(t, cfg)
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	m := simtest.Memory(t, d)
	e := simtest.DMA(t, m)
	b, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return cacheRig{sd: s.Device(0), m: m, e: e, dev: b}
}

// toDevice copies n bytes from device address src (a cached host
// mapping) into the rig's device buffer and returns them.
func (r cacheRig) toDevice(t *testing.T, src, n uint64) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := r.e.NewBatch(dma.BatchOptions{})
	if err := b.CopyAddr(r.dev.VA(), src, n); err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	if _, err := r.dev.ReadAt(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

// mapFile maps n bytes of a new memfd, at addr when it is not nil, filled
// with fill.
func mapFile(t *testing.T, addr unsafe.Pointer, n int, fill byte) []byte {
	t.Helper()
	fd, err := unix.MemfdCreate("cache-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		t.Fatal(err)
	}
	flags := unix.MAP_SHARED
	if addr != nil {
		flags |= unix.MAP_FIXED
	}
	p, err := unix.MmapPtr(fd, 0, addr, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		t.Fatal(err)
	}
	b := unsafe.Slice((*byte)(p), n)
	for i := range b {
		b[i] = fill
	}
	return b
}

// TestCacheServesReplacedMemory: memory the caller unmaps and maps again
// at the same address without InvalidateHost is served from the cache:
// the device would go on using the old pages, and the strict simulator
// says so. With InvalidateHost first, as MapHostCached's contract asks,
// the new memory is mapped anew and nothing is reported.
func TestCacheServesReplacedMemory(t *testing.T) {
	const n = 64 << 10
	for _, invalidate := range []bool{false, true} {
		name := "without InvalidateHost"
		if invalidate {
			name = "with InvalidateHost"
		}
		t.Run(name, func(t *testing.T) {
			r := newCacheRig(t, n)
			mem := mapFile(t, nil, n, 0x11)
			base := unsafe.Pointer(&mem[0])
			t.Cleanup(func() { unix.MunmapPtr(base, n) })
			ref, err := r.m.MapHostCached(mem)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.toDevice(t, ref.VA(), n); !bytes.Equal(got, mem) {
				t.Fatal("the first copy moved the wrong bytes")
			}
			ref.Release()
			if invalidate {
				if err := r.m.InvalidateHost(mem); err != nil {
					t.Fatal(err)
				}
			}
			if err := unix.MunmapPtr(base, n); err != nil {
				t.Fatal(err)
			}
			mem = mapFile(t, base, n, 0x22)
			hits := r.m.CacheStats().Hits
			ref, err = r.m.MapHostCached(mem)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Release()
			r.toDevice(t, ref.VA(), n)
			v := r.sd.TakeViolations()
			if invalidate {
				if r.m.CacheStats().Hits != hits {
					t.Error("the cache served memory that was invalidated")
				}
				if len(v) != 0 {
					t.Errorf("violations %v", v)
				}
				return
			}
			if r.m.CacheStats().Hits != hits+1 {
				t.Fatal("the cache did not serve the stale mapping; the test needs it to")
			}
			if len(v) != 1 || v[0].Kind != sim.ViolationHostReplaced {
				t.Errorf("violations %v, want the stale mapping reported (%v)", v, sim.ViolationHostReplaced)
			}
		})
	}
}
