package rdma

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// fakeRegion is a registration on a fake NIC that accepts dma-buf
// registrations: it holds a real dma-buf export of the range (so the
// buffer's export count is what ib.RegisterBuffer's would be) and counts
// its closes.
type fakeRegion struct {
	nic    *fakeNIC
	d      *memory.DMABuf
	key    uint32
	closed bool
}

func (r *fakeRegion) LKey() uint32 { return r.key }
func (r *fakeRegion) RKey() uint32 { return r.key }

func (r *fakeRegion) Close() error {
	r.nic.mu.Lock()
	defer r.nic.mu.Unlock()
	if r.closed {
		r.nic.doubleClose++
		return nil
	}
	r.closed = true
	r.nic.live--
	return r.d.Close()
}

// fakeNIC counts registrations.
type fakeNIC struct {
	mu                        sync.Mutex
	registered, live, nextKey int
	doubleClose               int
}

func (f *fakeNIC) register(b *memory.Buffer, off, n uint64, _ ib.Access) (region, error) {
	d, err := b.Export(off, n, memory.ExportOptions{})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered++
	f.live++
	f.nextKey++
	return &fakeRegion{nic: f, d: d, key: uint32(f.nextKey)}, nil
}

func (f *fakeNIC) counts() (registered, live, doubleClose int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registered, f.live, f.doubleClose
}

// newManager returns a memory manager of one simulated Gaudi2.
func newManager(t testing.TB) *memory.Manager {
	t.Helper()
	a, _ := newNodes(t, sim.Gaudi2)
	return a.m
}

func TestRegCache(t *testing.T) {
	m := newManager(t)
	nic := &fakeNIC{}
	c := &regCache{register: nic.register}
	b, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key := regKey{buf: b, n: 1 << 20, access: ib.AccessLocalWrite}

	// A hit registers nothing.
	for i := range 3 {
		e, err := c.get(key)
		if err != nil {
			t.Fatal(err)
		}
		if e.LKey() != 1 {
			t.Fatalf("get %d: key %d, want the first registration's 1", i, e.LKey())
		}
		if err := c.put(e); err != nil {
			t.Fatal(err)
		}
	}
	// Another span or access is another registration.
	e, err := c.get(regKey{buf: b, n: 1 << 20, access: ib.AccessLocalWrite | ib.AccessRemoteWrite})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.put(e); err != nil {
		t.Fatal(err)
	}
	if reg, live, _ := nic.counts(); reg != 2 || live != 2 {
		t.Fatalf("%d registrations, %d live; want 2, 2", reg, live)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if _, live, dbl := nic.counts(); live != 0 || dbl != 0 {
		t.Fatalf("after the cache's close: %d live, %d closed twice", live, dbl)
	}
	// A closed cache registers once per use.
	e, err = c.get(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.put(e); err != nil {
		t.Fatal(err)
	}
	if reg, live, _ := nic.counts(); reg != 3 || live != 0 {
		t.Fatalf("closed cache: %d registrations, %d live; want 3, 0", reg, live)
	}
}

// cachedBuffer returns a cache on a fake NIC and a MiB of device memory
// whose registration the cache holds for a transfer (e, to be put back).
// Cleanup closes the cache.
func cachedBuffer(t *testing.T) (*fakeNIC, *regCache, *memory.Buffer, regKey, *regEntry) {
	t.Helper()
	m := newManager(t)
	nic := &fakeNIC{}
	c := &regCache{register: nic.register}
	t.Cleanup(func() { c.close() })
	b, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := regKey{buf: b, n: 1 << 20, access: ib.AccessLocalWrite}
	e, err := c.get(key)
	if err != nil {
		t.Fatal(err)
	}
	return nic, c, b, key, e
}

// TestRegCacheBufferClose: a cached registration never keeps its buffer
// from closing, and once the buffer's Close was called the registration
// is gone: the cache never hands out a stale one.
func TestRegCacheBufferClose(t *testing.T) {
	nic, c, b, key, e := cachedBuffer(t)
	if err := c.put(e); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("closing a buffer whose registration is cached and idle: %v", err)
	}
	if _, live, dbl := nic.counts(); live != 0 || dbl != 0 {
		t.Fatalf("after the buffer's close: %d registrations live, %d closed twice", live, dbl)
	}
	if e, err := c.get(key); err == nil {
		t.Fatalf("get after the buffer closed: key %d (closed %v), want an error", e.LKey(), e.reg.(*fakeRegion).closed)
	} else if !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("get after the buffer closed: %v, want ErrClosed", err)
	}
}

// TestRegCacheCloseWhileUsed: a buffer whose registration a transfer
// uses is not closed under it (its Close answers ErrInUse, as without the
// cache); the registration goes when the transfer puts it back, and the
// buffer then closes.
func TestRegCacheCloseWhileUsed(t *testing.T) {
	nic, c, b, key, e := cachedBuffer(t)
	if err := b.Close(); !errors.Is(err, memory.ErrInUse) {
		t.Fatalf("closing a buffer a transfer's registration names: %v, want ErrInUse", err)
	}
	if e.reg.(*fakeRegion).closed {
		t.Fatal("the registration was closed while a transfer used it")
	}
	// The next transfer does not get the invalidated entry.
	e2, err := c.get(key)
	if err != nil {
		t.Fatal(err)
	}
	if e2 == e {
		t.Fatal("get returned the entry its buffer's close invalidated")
	}
	for _, x := range []*regEntry{e, e2} {
		if err := c.put(x); err != nil {
			t.Fatal(err)
		}
	}
	if !e.reg.(*fakeRegion).closed {
		t.Fatal("the invalidated registration outlived its last use")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, live, dbl := nic.counts(); live != 0 || dbl != 0 {
		t.Fatalf("%d registrations live, %d closed twice", live, dbl)
	}
}

// TestRegCacheConcurrent races gets, puts and the buffer's Close; run it
// with -race. Whatever the order, nothing stays registered and nothing is
// closed twice.
func TestRegCacheConcurrent(t *testing.T) {
	m := newManager(t)
	for round := range 20 {
		nic := &fakeNIC{}
		c := &regCache{register: nic.register}
		b, err := m.Alloc(1<<20, memory.AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		key := regKey{buf: b, n: 1 << 20, access: ib.AccessLocalWrite}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					e, err := c.get(key)
					if err != nil {
						return // the buffer closed
					}
					if e.reg.(*fakeRegion).closed {
						t.Error("got a closed registration")
					}
					if err := c.put(e); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		var cerr error
		for {
			if cerr = b.Close(); !errors.Is(cerr, memory.ErrInUse) {
				break
			}
		}
		wg.Wait()
		if err := c.close(); err != nil || cerr != nil {
			t.Fatalf("round %d: close: %v; buffer's close: %v", round, err, cerr)
		}
		if _, live, dbl := nic.counts(); live != 0 || dbl != 0 {
			t.Fatalf("round %d: %d registrations live, %d closed twice", round, live, dbl)
		}
	}
}

// BenchmarkZeroCopyRegistration measures what the zero-copy path spends
// per transfer to name a device range to the NIC, on a fake NIC that
// accepts dma-buf registrations (its registration is the dma-buf export
// alone: no NIC's page-table work): cached, a map lookup; the reference
// in the same run, without the cache, an export, a registration and
// their closes per transfer, as before the cache.
func BenchmarkZeroCopyRegistration(b *testing.B) {
	m := newManager(b)
	for _, off := range []bool{false, true} {
		name := "cached"
		if off {
			name = "uncached"
		}
		b.Run(fmt.Sprintf("%s/1MiB", name), func(b *testing.B) {
			nic := &fakeNIC{}
			c := &regCache{register: nic.register, off: off}
			buf, err := m.Alloc(1<<20, memory.AllocOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer buf.Close()
			defer c.close()
			key := regKey{buf: buf, n: 1 << 20, access: ib.AccessLocalWrite}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				e, err := c.get(key)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.put(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
