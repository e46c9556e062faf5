package memory

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAllocHostDropsStaleCacheEntries: a caller frees cached memory
// without InvalidateHost and the kernel hands the address to the
// Manager's next AllocHost. The cache must not serve its old mapping,
// whose pinned pages are not this memory, for the new buffer.
func TestAllocHostDropsStaleCacheEntries(t *testing.T) {
	m, err := openSimCache(t, 8, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64 << 10
	mem, err := mmapAnon(n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := m.MapHostCached(mem)
	if err != nil {
		t.Fatal(err)
	}
	stale := ref.VA()
	ref.Release()
	if err := munmapRange(mem); err != nil {
		t.Fatal(err)
	}
	// What AllocHost does with the memory mmap returned, the address of
	// the freed memory on purpose.
	p, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&mem[0]), n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		t.Skipf("the address was taken meanwhile: %v", err)
	}
	h, err := m.mapHost(unsafe.Slice((*byte)(p), n), true, true)
	if err != nil {
		unix.MunmapPtr(p, n)
		t.Fatal(err)
	}
	defer h.Close()
	if st := m.CacheStats(); st.Entries != 0 {
		t.Errorf("the cache keeps %d entries over memory AllocHost got anew", st.Entries)
	}
	// The new mapping may take the device addresses the stale one left.
	if r := m.Lookup(stale); r.Kind != Unknown && stale != h.VA() {
		t.Errorf("the stale cached mapping at %#x is still there (%v)", stale, r.Kind)
	}
	if ref, err := m.MapHostCached(h.Bytes()); err == nil {
		t.Error("MapHostCached served the stale mapping for the new buffer")
		ref.Release()
	}
}
