package memory

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

func openSim(t testing.TB, asic sim.ASIC) (*device.Device, *Manager) {
	t.Helper()
	cfg := sim.Default(asic, 1)
	cfg.LockDir = t.TempDir()
	if _, ok := t.(*testing.B); ok {
		cfg.Strict = sim.StrictOff // benchmarks measure what programs run
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the cleanups below: fails on strict mode violations
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		d.Close()
	})
	return d, m
}

func TestAllocGaudi2(t *testing.T) {
	d, m := openSim(t, sim.Gaudi2)
	hw := d.HWIPInfo()
	before, _ := d.DRAMUsage()
	b, err := m.Alloc(1<<20, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.AllocatedSize() != hw.DRAMPageSize || b.Handle() == 0 || b.VA() < hw.DRAMBase || b.VA() >= hw.DRAMBase+hw.DRAMSize*2 {
		t.Errorf("buffer: va %#x size %#x handle %d", b.VA(), b.AllocatedSize(), b.Handle())
	}
	u, _ := d.DRAMUsage()
	if before.Free-u.Free != b.AllocatedSize() || u.Context != b.AllocatedSize() {
		t.Errorf("DRAM usage %+v -> %+v after %#x bytes", before, u, b.AllocatedSize())
	}
	r := m.Lookup(b.VA() + 100)
	if r.Kind != DeviceMemory || r.Device != b || r.Offset != 100 || r.DeviceVA() != b.VA()+100 {
		t.Errorf("Lookup = %+v", r)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if r := m.Lookup(b.VA()); r.Kind != Unknown {
		t.Errorf("Lookup after Close = %v", r.Kind)
	}
	if u, _ := d.DRAMUsage(); u.Free != before.Free {
		t.Errorf("free DRAM %#x after Close, want %#x", u.Free, before.Free)
	}
}

// TestAllocUntilFull ports hl-thunk's scenario: allocate until DRAM is
// full and account for all of it.
func TestAllocUntilFull(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			d, m := openSim(t, asic)
			hw := d.HWIPInfo()
			chunk := hw.DRAMSize / 8
			var bufs []*Buffer
			for {
				b, err := m.Alloc(chunk, AllocOptions{})
				if err != nil {
					if !errors.Is(err, unix.ENOMEM) && !errors.Is(err, ErrNoSpace) {
						t.Fatalf("allocation %d: %v", len(bufs), err)
					}
					break
				}
				bufs = append(bufs, b)
				if len(bufs) > 64 {
					t.Fatal("allocated beyond the DRAM size")
				}
			}
			var total uint64
			for _, b := range bufs {
				total += b.AllocatedSize()
			}
			u, _ := d.DRAMUsage()
			if total > hw.DRAMSize || total+chunk <= hw.DRAMSize-hw.DRAMPageSize || u.Context != total || u.Free != hw.DRAMSize-total {
				t.Errorf("allocated %#x of %#x; usage %+v", total, hw.DRAMSize, u)
			}
			for _, b := range bufs {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if u, _ := d.DRAMUsage(); u.Free != hw.DRAMSize || u.Context != 0 {
				t.Errorf("after freeing all: %+v", u)
			}
		})
	}
}

func TestAllocGaudiPhysical(t *testing.T) {
	d, m := openSim(t, sim.Gaudi)
	hw := d.HWIPInfo()
	a, err := m.Alloc(3<<20, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Alloc(1, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.VA() != hw.DRAMBase || a.AllocatedSize() != 4<<20 || b.VA() != a.VA()+a.AllocatedSize() || a.Handle() != 0 {
		t.Errorf("physical buffers at %#x (+%#x) and %#x", a.VA(), a.AllocatedSize(), b.VA())
	}
	a.Close()
	c, err := m.Alloc(2<<20, AllocOptions{})
	if err != nil || c.VA() != hw.DRAMBase {
		t.Errorf("reuse of a freed range: %#x, %v", c.VA(), err)
	}
}

func TestHints(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	a, err := m.Alloc(1, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hint := a.VA() + 8*a.AllocatedSize()
	b, err := m.Alloc(1, AllocOptions{Hint: hint, ForceHint: true})
	if err != nil {
		t.Fatalf("free forced hint: %v", err)
	}
	if b.VA() != hint {
		t.Errorf("forced hint %#x mapped at %#x", hint, b.VA())
	}
	// FORCE_HINT onto a used address fails; without force the driver
	// picks another address.
	if _, err := m.Alloc(1, AllocOptions{Hint: hint, ForceHint: true}); err == nil {
		t.Error("FORCE_HINT onto a used VA succeeded")
	}
	c, err := m.Alloc(1, AllocOptions{Hint: hint})
	if err != nil || c.VA() == hint {
		t.Errorf("unforced used hint: %#x, %v", c.VA(), err)
	}
}

func TestHostMemory(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	h, err := m.AllocHost(1<<20, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	copy(h.Bytes(), "hello")
	p := addrOf(h.Bytes())
	for _, addr := range []uint64{p + 10, h.VA() + 10} {
		r := m.Lookup(addr)
		if r.Kind != HostMemory || r.Host != h || r.Offset != 10 {
			t.Errorf("Lookup(%#x) = %+v", addr, r)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if r := m.Lookup(p); r.Kind != Unknown {
		t.Errorf("Lookup after Close = %v", r.Kind)
	}
	// Go-heap memory is refused; mmap'd memory is accepted.
	for _, n := range []int{64, 1 << 16, 64 << 20} {
		heap := make([]byte, n)
		if _, err := m.MapHost(heap); !errors.Is(err, ErrGoHeap) {
			t.Errorf("MapHost of %d bytes of Go heap memory: %v, want ErrGoHeap", n, err)
		}
	}
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	hb, err := m.MapHost(mem[100:])
	if err != nil {
		t.Fatalf("MapHost of mmap memory: %v", err)
	}
	if hb.VA()%4096 != 100 {
		t.Errorf("mapping VA %#x does not keep the in-page offset 100", hb.VA())
	}
	hb.Close()
	// Huge pages on request: whichever the system gives, the memory works.
	hh, err := m.AllocHost(3<<20, HostOptions{HugePages: true})
	if err != nil {
		t.Fatal(err)
	}
	if addrOf(hh.Bytes())%(2<<20) != 0 || hh.HugePages() == "" {
		t.Errorf("huge-page buffer at %#x backed by %q", addrOf(hh.Bytes()), hh.HugePages())
	}
	if err := hh.Close(); err != nil {
		t.Errorf("Close of the huge-page buffer: %v", err)
	}
}

// TestLargeHostMapping maps more than 4 GiB without touching it.
func TestLargeHostMapping(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	const size = 5 << 30
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot reserve 5 GiB of address space: %v", err)
	}
	defer unix.Munmap(mem)
	h, err := m.MapHost(mem)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size() != size || m.Lookup(h.VA()+size-1).Host != h {
		t.Errorf("5 GiB mapping: size %#x", h.Size())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestExport(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	b, err := m.Alloc(1<<20, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := uint64(os.Getpagesize())
	for _, bad := range []struct{ off, size uint64 }{{0, 0}, {0, page + 1}, {1, page}, {b.Size(), page}, {b.Size() - page, 2 * page}} {
		if _, err := b.Export(bad.off, bad.size, ExportOptions{}); !errors.Is(err, ErrRange) {
			t.Errorf("Export(%#x, %#x): %v, want ErrRange", bad.off, bad.size, err)
		}
	}
	x, err := b.Export(page, 16*page, ExportOptions{Name: "test-export"})
	if err != nil {
		t.Fatal(err)
	}
	if x.Fd() < 0 || x.Size() != 16*page || x.DeviceVA() != b.VA()+page {
		t.Errorf("export: fd %d size %#x va %#x", x.Fd(), x.Size(), x.DeviceVA())
	}
	var st unix.Stat_t
	if err := unix.Fstat(x.Fd(), &st); err != nil {
		t.Fatalf("exported fd is not open: %v", err)
	}
	if err := b.Close(); !errors.Is(err, ErrInUse) {
		t.Errorf("Close with an open export: %v, want ErrInUse", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if err := b.Close(); err != nil {
		t.Errorf("Close after the export closed: %v", err)
	}
	if _, err := b.Export(0, page, ExportOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Export of a closed buffer: %v", err)
	}
}

func TestHoldDefersClose(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	b, _ := m.Alloc(1, AllocOptions{})
	h, _ := m.AllocHost(4096, HostOptions{})
	if err := b.addHold(); err != nil {
		t.Fatal(err)
	}
	if err := h.addHold(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	h.Close()
	if m.Lookup(b.VA()).Kind != DeviceMemory || m.Lookup(h.VA()).Kind != HostMemory {
		t.Fatal("Close released memory a transfer holds")
	}
	if b.addHold() == nil || h.addHold() == nil {
		t.Error("Hold after Close succeeded")
	}
	b.dropHold()
	h.dropHold()
	if m.Lookup(b.VA()).Kind != Unknown || m.Lookup(h.VA()).Kind != Unknown {
		t.Error("the last Release did not finish Close")
	}
}

func TestRegistrationCache(t *testing.T) {
	d, err := openSimCache(t, 3, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	m := d
	mem, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	r1, err := m.MapHostCached(mem[:64<<10])
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.MapHostCached(mem[4096:8192])
	if err != nil {
		t.Fatal(err)
	}
	if r2.VA() != r1.VA()+4096 || r2.Len() != 4096 {
		t.Errorf("contained range: va %#x, want %#x", r2.VA(), r1.VA()+4096)
	}
	st := m.CacheStats()
	if st.Hits != 1 || st.Misses != 1 || st.Entries != 1 {
		t.Errorf("stats %+v", st)
	}
	if r := m.Lookup(addrOf(mem) + 5); r.Kind != HostMemory {
		t.Errorf("Lookup of a cached host pointer = %v", r.Kind)
	}
	r1.Release()
	r2.Release()
	// Fill past three entries: the least recently used unheld one goes.
	var refs []HostRef
	for i := 1; i <= 3; i++ {
		r, err := m.MapHostCached(mem[i*128<<10 : i*128<<10+4096])
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	st = m.CacheStats()
	if st.Entries != 3 || st.Evictions != 1 {
		t.Errorf("after filling: %+v", st)
	}
	if r := m.Lookup(addrOf(mem)); r.Kind != Unknown {
		t.Error("the evicted mapping is still indexed")
	}
	// Invalidation of a held entry waits for its release.
	m.InvalidateHost(mem[128<<10 : 128<<10+1])
	if m.CacheStats().Entries != 2 {
		t.Errorf("entries after invalidation: %d", m.CacheStats().Entries)
	}
	va := refs[0].VA()
	if m.Lookup(va).Kind != HostMemory {
		t.Error("a held, invalidated mapping was unmapped")
	}
	refs[0].Release()
	if m.Lookup(va).Kind != Unknown {
		t.Error("the last release of an invalidated mapping did not unmap it")
	}
	for _, r := range refs[1:] {
		r.Release()
	}
	// Go heap memory is refused here too.
	if _, err := m.MapHostCached(make([]byte, 4096)); !errors.Is(err, ErrGoHeap) {
		t.Errorf("MapHostCached of Go heap memory: %v", err)
	}
}

func openSimCache(t *testing.T, entries int, bytes uint64) (*Manager, error) {
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { // after the cleanups below: fails on strict mode violations
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		return nil, err
	}
	m, err := New(d, Options{CacheEntries: entries, CacheBytes: bytes})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { m.Close(); d.Close() })
	return m, nil
}

func TestConcurrent(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	mem, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				b, err := m.Alloc(1, AllocOptions{})
				if err != nil {
					errs <- err
					return
				}
				if m.Lookup(b.VA()).Device != b {
					errs <- errors.New("lookup of a live buffer failed")
				}
				r, err := m.MapHostCached(mem[g*4096 : g*4096+4096])
				if err != nil {
					errs <- err
					return
				}
				r.Release()
				if err := b.Close(); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNoLeaks checks file descriptors and memory mappings before and after
// a loop of allocations, mappings and exports.
func TestNoLeaks(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	// What this loop could leak: descriptors, the simulator's export memfds
	// (counted by inode: its DRAM mapping is split and merged as exports
	// come and go, which is not a leak), and 1 MiB host buffers per round.
	// The kernel merges adjacent anonymous mappings, so leaked buffers are
	// seen in the address space size (200 rounds leak 200 MiB), with room
	// for the Go runtime's own growth.
	count := func() (fds, exports int, vm uint64) {
		ents, _ := os.ReadDir("/proc/self/fd")
		b, _ := os.ReadFile("/proc/self/maps")
		inodes := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && strings.Contains(line, "gaudi-sim-dmabuf") {
				inodes[f[4]] = true
			}
			var lo, hi uint64
			if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil {
				vm += hi - lo
			}
		}
		return len(ents), len(inodes), vm
	}
	run := func() {
		b, err := m.Alloc(1<<20, AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		x, err := b.Export(0, 1<<20, ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.AllocHost(1<<20, HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
		h.Close()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm up lazily created state
	fd0, x0, vm0 := count()
	for i := 0; i < 200; i++ {
		run()
	}
	fd1, x1, vm1 := count()
	if fd1 != fd0 || x1 > x0 || vm1 > vm0+100<<20 {
		t.Errorf("fds %d -> %d, export memfds mapped %d -> %d, address space %d MiB -> %d MiB", fd0, fd1, x0, x1, vm0>>20, vm1>>20)
	}
}

func BenchmarkCacheHit(b *testing.B) {
	_, m := openSim(b, sim.Gaudi2)
	mem, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	r, err := m.MapHostCached(mem)
	if err != nil {
		b.Fatal(err)
	}
	r.Release()
	sub := mem[4096:8192]
	b.ReportAllocs()
	for b.Loop() {
		r, err := m.MapHostCached(sub)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

func BenchmarkLookup10k(b *testing.B) {
	_, m := openSim(b, sim.Gaudi2)
	const n = 10000
	mem, err := unix.Mmap(-1, 0, n*8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	vas := make([]uint64, n)
	for i := 0; i < n; i++ {
		h, err := m.MapHost(mem[i*8192 : i*8192+4096])
		if err != nil {
			b.Fatal(err)
		}
		vas[i] = h.VA()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i = (i + 7919) % n
		if m.Lookup(vas[i]+100).Kind != HostMemory {
			b.Fatal("miss")
		}
	}
}

// TestAllocSizes: sizes whose rounding to the DRAM page would wrap around
// 2^64 are ErrRange; sizes just below are passed on for the driver to
// refuse; nothing is left allocated either way.
func TestAllocSizes(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			d, m := openSim(t, asic)
			page := m.pageSize()
			before, _ := d.DRAMUsage()
			for _, tc := range []struct {
				size   uint64
				tooBig bool // ErrRange, before any driver call
				ok     bool
			}{
				{size: 0, tooBig: true},
				{size: 1, ok: true},
				{size: page, ok: true},
				{size: page + 1, ok: true},
				{size: math.MaxUint64, tooBig: true},
				{size: math.MaxUint64 - page + 2, tooBig: true},
				{size: math.MaxUint64 - page + 1}, // rounds to 2^64 - page: too large
				{size: 1 << 63},
			} {
				b, err := m.Alloc(tc.size, AllocOptions{})
				switch {
				case tc.ok:
					if err != nil {
						t.Errorf("Alloc(%#x): %v", tc.size, err)
						continue
					}
					if b.Size() != tc.size || b.AllocatedSize()%page != 0 || b.AllocatedSize() < tc.size || b.AllocatedSize()-tc.size >= page {
						t.Errorf("Alloc(%#x): size %#x", tc.size, b.AllocatedSize())
					}
					if err := b.Close(); err != nil {
						t.Error(err)
					}
				case tc.tooBig:
					if !errors.Is(err, ErrRange) {
						t.Errorf("Alloc(%#x) = %v, want ErrRange", tc.size, err)
					}
				default:
					if err == nil {
						b.Close()
						t.Errorf("Alloc(%#x) succeeded", tc.size)
					}
				}
			}
			if after, _ := d.DRAMUsage(); after != before {
				t.Errorf("DRAM usage %+v after the failed allocations, was %+v", after, before)
			}
		})
	}
}

// TestHoldDefersManagerClose: Manager.Close, like a buffer's Close, leaves
// memory a transfer holds mapped until the last Release, host mappings
// included.
func TestHoldDefersManagerClose(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	b, _ := m.Alloc(1, AllocOptions{})
	h, _ := m.AllocHost(4096, HostOptions{})
	if err := b.addHold(); err != nil {
		t.Fatal(err)
	}
	if err := h.addHold(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m.Lookup(b.VA()).Kind != DeviceMemory {
		t.Error("Manager.Close released a device buffer a transfer holds")
	}
	if m.Lookup(h.VA()).Kind != HostMemory {
		t.Error("Manager.Close unmapped host memory a transfer holds")
	}
	b.dropHold()
	h.dropHold()
	if m.Lookup(b.VA()).Kind != Unknown || m.Lookup(h.VA()).Kind != Unknown {
		t.Error("the last Release did not finish Manager.Close")
	}
}

// TestHoldDefersCacheEviction: a cached host mapping a transfer holds
// (found through Lookup, held with Hold, as the dma package does) stays
// mapped when the cache drops it: eviction, InvalidateHost, Manager.Close.
func TestHoldDefersCacheEviction(t *testing.T) {
	for _, how := range []string{"evict", "invalidate", "close"} {
		t.Run(how, func(t *testing.T) {
			m, err := openSimCache(t, 1, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := unix.Mmap(-1, 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(mem)
			ref, err := m.MapHostCached(mem[:1<<20])
			if err != nil {
				t.Fatal(err)
			}
			r := m.Lookup(ref.VA())
			if r.Kind != HostMemory {
				t.Fatalf("Lookup of a cached mapping: %+v", r)
			}
			if err := r.Host.addHold(); err != nil {
				t.Fatal(err)
			}
			ref.Release()
			switch how {
			case "evict": // a second entry beyond the one-entry limit
				ref2, err := m.MapHostCached(mem[1<<20:])
				if err != nil {
					t.Fatal(err)
				}
				ref2.Release()
			case "invalidate":
				m.InvalidateHost(mem[:1<<20])
			case "close":
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if m.Lookup(ref.VA()).Kind != HostMemory {
				t.Fatal("the cache unmapped host memory a transfer holds")
			}
			r.Host.dropHold()
			if m.Lookup(ref.VA()).Kind != Unknown {
				t.Error("the last Release did not unmap the dropped mapping")
			}
		})
	}
}

// TestHoldUnderflow: a hold released more often than taken is an error,
// and does not finish a Close.
func TestHoldUnderflow(t *testing.T) {
	_, m := openSim(t, sim.Gaudi2)
	b, err := m.Alloc(4096, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.AllocHost(4096, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.dropHold(); !errors.Is(err, errNotHeld) {
		t.Errorf("buffer dropHold without a hold: %v, want errNotHeld", err)
	}
	if err := h.dropHold(); !errors.Is(err, errNotHeld) {
		t.Errorf("host dropHold without a hold: %v, want errNotHeld", err)
	}
	if err := b.addHold(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.dropHold(); err != nil {
		t.Fatal(err)
	}
	if err := b.dropHold(); !errors.Is(err, errNotHeld) {
		t.Errorf("second dropHold: %v, want errNotHeld", err)
	}
}
