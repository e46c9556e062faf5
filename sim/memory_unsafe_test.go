package sim

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Helpers issuing MEMORY requests the way hl-thunk does.

func memIoctl(f *File, a *hl.MemArgs) error {
	return f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(a))
}

func memAllocFlags(f *File, size uint64, flags uint32) (uint64, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_ALLOC
	a.In().Flags = flags
	a.In().Alloc().MemSize = size
	err := memIoctl(f, &a)
	return a.Out().Handle(), err
}

func memFree(f *File, handle uint64) error {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_FREE
	a.In().Free().Handle = handle
	return memIoctl(f, &a)
}

func memMapDevice(f *File, handle, hint uint64, flags uint32) (uint64, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP
	a.In().Flags = flags
	a.In().MapDevice().Handle = handle
	a.In().MapDevice().HintAddr = hint
	err := memIoctl(f, &a)
	return a.Out().DeviceVirtAddr(), err
}

func memMapHost(f *File, addr, size, hint uint64, flags uint32) (uint64, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP
	a.In().Flags = flags | hl.HL_MEM_USERPTR
	a.In().MapHost().HostVirtAddr = addr
	a.In().MapHost().MemSize = size
	a.In().MapHost().HintAddr = hint
	err := memIoctl(f, &a)
	return a.Out().DeviceVirtAddr(), err
}

func memUnmap(f *File, va uint64) error {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_UNMAP
	a.In().Unmap().DeviceVirtAddr = va
	return memIoctl(f, &a)
}

func memExport(f *File, addr, size, offset uint64, flags uint32) (int, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_EXPORT_DMABUF_FD
	a.In().Flags = flags
	e := a.In().ExportDmabufFD()
	e.Addr, e.MemSize, e.Offset = addr, size, offset
	err := memIoctl(f, &a)
	return int(a.Out().FD()), err
}

func dramUsage(t *testing.T, f *File) (free, ctx uint64) {
	t.Helper()
	var r hl.InfoDRAMUsage
	if err := info(f, hl.HL_INFO_DRAM_USAGE, structBytes(&r)); err != nil {
		t.Fatal(err)
	}
	return r.DRAMFreeMem, r.CtxDRAMMem
}

func errIs(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func openCompute(t *testing.T, asic ASIC) (*System, *Device, *File) {
	t.Helper()
	return openComputeMode(t, asic, StrictAuto)
}

// openComputeMode is openCompute with strict mode set.
func openComputeMode(t *testing.T, asic ASIC, mode StrictMode) (*System, *Device, *File) {
	t.Helper()
	cfg := Default(asic, 1)
	cfg.Strict = mode
	return openComputeConfig(t, cfg)
}

// openComputeConfig opens the compute file of device 0 of a new system of
// cfg; the test's cleanup closes both.
func openComputeConfig(t *testing.T, cfg Config) (*System, *Device, *File) {
	t.Helper()
	s := newTestSystem(t, cfg)
	t.Cleanup(func() { s.Close() })
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return s, d, f
}

// anon maps n bytes of private anonymous memory aligned to align, without
// touching it.
func anon(t *testing.T, n, align uint64, prot int) []byte {
	t.Helper()
	raw, err := unix.Mmap(-1, 0, int(n+align), prot, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&raw[0])))
	skip := (align - base%align) % align
	b := raw[skip : skip+n : skip+n]
	t.Cleanup(func() { unix.Munmap(raw) })
	return b
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	return len(ents)
}

// countMaps counts the shared and file-backed mappings: the Go runtime
// adds and merges private anonymous ones on its own.
func countMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[1][3] == 's' || f[4] != "0") {
			n++
		}
	}
	return n
}

const (
	g2Page   = 768 << 20
	g2Pages  = 127
	g2DRAMVA = 0x1001001800000000
	g2HostVA = 0xFFF0000100200000 // after the 4 GB CB pool and the 2 MB internal CB
	g2HugeVA = 0xFFF0800000000000
	gHostVA  = 0x1000000200000 // Gaudi: after the 2 MB internal CB
)

func TestMemoryVARanges(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		dc                   DeviceConfig
		host, huge, dram     vaSpan
		hintDRAM             vaSpan
		hugeRange, reserving bool
	}{
		{"gaudi2", DeviceConfig{ASIC: Gaudi2},
			vaSpan{0xFFF0000000000000, 0xFFF07FFFFFFFFFFF}, vaSpan{0xFFF0800000000000, 0xFFF0FFFFFFFFFFFF},
			vaSpan{0x1001001800000000, 0x1001C005FFFFFFFF}, vaSpan{0x1001500000000000, 0x10016FFFFFFFFFFF}, true, true},
		{"gaudi2-5hbm", DeviceConfig{ASIC: Gaudi2, DRAMSize: 80 << 30},
			vaSpan{0xFFF0000000000000, 0xFFF07FFFFFFFFFFF}, vaSpan{0xFFF0800000000000, 0xFFF0FFFFFFFFFFFF},
			vaSpan{0x1001001400000000, 0x1001A0077FFFFFFF}, vaSpan{0x1001500000000000, 0x10016FFFFFFFFFFF}, true, true},
		{"gaudi", DeviceConfig{ASIC: Gaudi},
			vaSpan{0x1000000000000, 0x27FBFFFFFEFFF}, vaSpan{0x1000000000000, 0x27FBFFFFFEFFF},
			vaSpan{0x27FC000000000, 0x3FF7FFFFFFFFF}, vaSpan{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newProfile(tc.dc.ASIC, tc.dc.DRAMSize)
			if err != nil {
				t.Fatal(err)
			}
			v := p.vm
			if v.host != tc.host || v.hostHuge != tc.huge || v.dram != tc.dram || v.hintsDRAM != tc.hintDRAM ||
				v.hugeRange != tc.hugeRange || v.hintsReserved != tc.reserving {
				t.Errorf("ranges %+v", v)
			}
		})
	}
}

func TestMemoryAllocGaudi2(t *testing.T) {
	_, _, f := openCompute(t, Gaudi2)
	userDRAM := uint64(g2Pages * g2Page)
	for _, tc := range []struct {
		name   string
		size   uint64
		flags  uint32
		handle uint64
		want   error
		ctx    uint64 // DRAM_USAGE ctx_dram_mem afterwards
	}{
		{"zero", 0, 0, 0, unix.EINVAL, 0},
		{"wraps to zero pages", ^uint64(0), 0, 0, unix.EINVAL, 0},
		{"wraps to zero pages at 2^64-page+1", ^uint64(g2Page-1) + 1, 0, 0, unix.EINVAL, 0},
		{"more than DRAM", userDRAM + 1, 0, 0, unix.ENOMEM, 0},
		{"more than DRAM contiguous", userDRAM + 1, hl.HL_MEM_CONTIGUOUS, 0, unix.ENOMEM, 0},
		{"huge page count", 1 << 62, 0, 0, unix.ENOMEM, 0},
		{"one byte is one page", 1, 0, 1, nil, g2Page},
		{"a page and a byte", g2Page + 1, 0, 2, nil, 3 * g2Page},
		{"contiguous shared", 2 * g2Page, hl.HL_MEM_CONTIGUOUS | hl.HL_MEM_SHARED, 3, nil, 5 * g2Page},
	} {
		var a hl.MemArgs
		for i := range 5 {
			*(*uint64)(unsafe.Add(unsafe.Pointer(&a), 8*i)) = 0xdead
		}
		a.In().Op = hl.HL_MEM_OP_ALLOC
		a.In().Flags = tc.flags
		a.In().Alloc().MemSize = tc.size
		a.In().Alloc().PageSize = 2 << 20 // ignored: no user page sizes
		err := memIoctl(f, &a)
		if !errIs(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if h := a.Out().Handle(); h != tc.handle {
			t.Errorf("%s: handle %#x, want %#x", tc.name, h, tc.handle)
		}
		if cleared := a.In().CtxID == 0; cleared != (tc.size != 0) {
			t.Errorf("%s: argument cleared %v", tc.name, cleared)
		}
		free, ctx := dramUsage(t, f)
		if ctx != tc.ctx || free != userDRAM-tc.ctx {
			t.Errorf("%s: DRAM usage free %#x ctx %#x, want ctx %#x", tc.name, free, ctx, tc.ctx)
		}
	}
	// FREE: unknown handles, the u32 truncation of the handle.
	for _, tc := range []struct {
		handle uint64
		want   error
	}{
		{0, unix.EINVAL},
		{4, unix.EINVAL},
		{1<<32 | 2, nil},
		{2, unix.EINVAL},
		{1, nil},
		{3, nil},
		{3, unix.EINVAL},
	} {
		if err := memFree(f, tc.handle); !errIs(err, tc.want) {
			t.Errorf("FREE %#x: %v, want %v", tc.handle, err, tc.want)
		}
	}
	if free, ctx := dramUsage(t, f); ctx != 0 || free != userDRAM {
		t.Errorf("after FREE: free %#x ctx %#x", free, ctx)
	}
	// Handles: the lowest free one from 1.
	for want := uint64(1); want <= 3; want++ {
		if h, err := memAllocFlags(f, 1, 0); err != nil || h != want {
			t.Fatalf("ALLOC: %d, %v, want %d", h, err, want)
		}
	}
	memFree(f, 2)
	if h, _ := memAllocFlags(f, 1, 0); h != 2 {
		t.Errorf("ALLOC after FREE of 2 gave %d", h)
	}
}

// Allocate until DRAM is full, as hl-thunk's alloc_device_mem_until_full
// does, contiguous and not, and with mixed sizes; DRAM_USAGE accounts for
// all of it.
func TestMemoryAllocUntilFull(t *testing.T) {
	for _, contiguous := range []uint32{0, hl.HL_MEM_CONTIGUOUS} {
		_, d, f := openCompute(t, Gaudi2)
		var handles []uint64
		for {
			h, err := memAllocFlags(f, g2Page, contiguous)
			if err != nil {
				if !errors.Is(err, unix.ENOMEM) {
					t.Fatal(err)
				}
				break
			}
			handles = append(handles, h)
		}
		if len(handles) != g2Pages {
			t.Fatalf("allocated %d pages, want %d", len(handles), g2Pages)
		}
		if free, ctx := dramUsage(t, f); free != 0 || ctx != g2Pages*g2Page {
			t.Errorf("full: free %#x ctx %#x", free, ctx)
		}
		for _, h := range handles {
			if err := memFree(f, h); err != nil {
				t.Fatal(err)
			}
		}
		if free, ctx := dramUsage(t, f); free != g2Pages*g2Page || ctx != 0 {
			t.Errorf("emptied: free %#x ctx %#x", free, ctx)
		}
		if d.ResidentDRAM() != 0 {
			t.Errorf("allocation made memory resident")
		}
	}

	// Mixed sizes until full; then a hole too small for a contiguous
	// request is skipped while a scattered one uses it.
	_, d, f := openCompute(t, Gaudi2)
	sizes := []uint64{1, 3 * g2Page, g2Page + 1, 5 << 30, 100}
	var handles []uint64
	var total uint64
	for i := 0; ; i++ {
		size := sizes[i%len(sizes)]
		h, err := memAllocFlags(f, size, uint32(i%2)*hl.HL_MEM_CONTIGUOUS)
		if err != nil {
			break
		}
		handles = append(handles, h)
		total += (size + g2Page - 1) / g2Page * g2Page
	}
	free, ctx := dramUsage(t, f)
	if ctx != total || free != g2Pages*g2Page-total {
		t.Errorf("mixed: free %#x ctx %#x, allocated %#x", free, ctx, total)
	}
	for _, h := range handles {
		memFree(f, h)
	}
	a, _ := memAllocFlags(f, g2Page, 0)
	b, _ := memAllocFlags(f, g2Page, 0)
	c, _ := memAllocFlags(f, g2Page, 0)
	memFree(f, b)
	pages := func(h uint64) []uint64 { return d.vm.packs[uint32(h)].pages }
	base := d.prof.dramUserBase
	cont, err := memAllocFlags(f, 2*g2Page, hl.HL_MEM_CONTIGUOUS)
	if err != nil || pages(cont)[0] != base+3*g2Page {
		t.Errorf("contiguous pages %#x, %v", pages(cont), err)
	}
	scat, err := memAllocFlags(f, 2*g2Page, 0)
	if err != nil || pages(scat)[0] != base+g2Page || pages(scat)[1] != base+5*g2Page {
		t.Errorf("scattered pages %#x, %v", pages(scat), err)
	}
	_, _ = a, c
}

func TestMemoryMapDeviceGaudi2(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	h1, _ := memAllocFlags(f, 2*g2Page, 0)
	h2, _ := memAllocFlags(f, g2Page, 0)
	va := func(k uint64) uint64 { return g2DRAMVA + k*g2Page }
	// The first page at or after the reserved range start.
	rk := uint64(0x1001500000000000-g2DRAMVA+g2Page-1) / g2Page
	steps := []struct {
		name   string
		handle uint64
		hint   uint64
		flags  uint32
		want   error
		va     uint64
	}{
		{"unknown handle", 9, 0, 0, unix.EINVAL, 0},
		{"handle 0", 0, 0, 0, unix.EINVAL, 0},
		{"first", h1, 0, 0, nil, va(0)},
		{"upper bits of the handle ignored", 1<<40 | h2, 0, 0, nil, va(2)},
		{"page-aligned free hint", h2, va(10), 0, nil, va(10)},
		{"hint in use is ignored", h2, va(10), 0, nil, va(3)},
		{"forced hint in use", h2, va(10), hl.HL_MEM_FORCE_HINT, unix.ENOMEM, 0},
		{"unaligned hint is ignored", h2, va(20) + 4096, 0, nil, va(4)},
		{"forced unaligned hint", h2, va(20) + 4096, hl.HL_MEM_FORCE_HINT, unix.ENOMEM, 0},
		{"forced without hint", h2, 0, hl.HL_MEM_FORCE_HINT, unix.ENOMEM, 0},
		{"forced hint", h2, va(30), hl.HL_MEM_FORCE_HINT, nil, va(30)},
		{"a host address as hint is ignored", h2, g2HugeVA, 0, nil, va(5)},
		{"hint in the reserved range is honoured", h2, va(rk), 0, nil, va(rk)},
		{"forced hint inside a reserved range", h2, va(rk + 2), hl.HL_MEM_FORCE_HINT, nil, va(rk + 2)},
		// The free block between the two is a page, the best fit, but it
		// lies in the reserved range: without a hint it is skipped.
		{"reserved range avoided", h2, 0, 0, nil, va(6)},
		// hint + size must stay below the block's inclusive end: a hint
		// that would fill a block to its last byte is ignored.
		{"hint at the end of a block", h1, va(rk - 2), 0, nil, va(7)},
	}
	for _, st := range steps {
		got, err := memMapDevice(f, st.handle, st.hint, st.flags)
		if !errIs(err, st.want) || got != st.va {
			t.Errorf("%s: %#x, %v; want %#x, %v", st.name, got, err, st.va, st.want)
		}
	}
	// FREE of a mapped handle fails until every mapping is gone.
	if err := memFree(f, h2); !errors.Is(err, unix.EINVAL) {
		t.Errorf("FREE of a mapped handle: %v", err)
	}
	for _, st := range []struct {
		va   uint64
		want error
	}{
		{va(0) + 4096, unix.EINVAL},
		{va(1), unix.EINVAL},
		{va(0), nil},
		{va(0), unix.EINVAL},
		{va(2), nil},
		{va(3), nil},
		{va(4), nil},
		{va(5), nil},
		{va(6), nil},
		{va(7), nil},
		{va(10), nil},
		{va(30), nil},
		{va(rk), nil},
		{va(rk + 2), nil},
	} {
		if err := memUnmap(f, st.va); !errIs(err, st.want) {
			t.Errorf("UNMAP %#x: %v, want %v", st.va, err, st.want)
		}
	}
	if err := memFree(f, h2); err != nil {
		t.Errorf("FREE after UNMAP: %v", err)
	}
	// The DRAM VA range is whole again: the first map lands at its start.
	if got, err := memMapDevice(f, h1, 0, 0); got != va(0) || err != nil {
		t.Errorf("map after unmapping everything: %#x, %v", got, err)
	}
	if r := f.ctx.ranges[vaDRAM]; len(r.free) != 1 || r.free[0].start != va(2) {
		t.Errorf("free list %x", r.free)
	}
	_ = d
}

func TestMemoryMapHost(t *testing.T) {
	for _, tc := range []struct {
		asic   ASIC
		hostVA uint64
		hugeVA uint64
	}{
		{Gaudi2, g2HostVA, g2HugeVA},
		{Gaudi, gHostVA, gHostVA},
	} {
		t.Run(tc.asic.String(), func(t *testing.T) {
			_, _, f := openCompute(t, tc.asic)
			buf := anon(t, 8<<20, 2<<20, unix.PROT_READ|unix.PROT_WRITE)
			ro := anon(t, 4096, 4096, unix.PROT_READ)
			base := addrOf(buf)
			// A mapped page followed by a hole.
			hole := anon(t, 2*4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
			if err := unix.MunmapPtr(unsafe.Pointer(&hole[4096]), 4096); err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				name        string
				addr, size  uint64
				hint        uint64
				flags       uint32
				want        error
				va          uint64
				unmapAfter  bool
				checkPageSz uint64
			}{
				{"size 0", base, 0, 0, 0, unix.EINVAL, 0, false, 0},
				{"wraps", ^uint64(0) - 10, 100, 0, 0, unix.EINVAL, 0, false, 0},
				{"page align wraps", ^uint64(0) - 4096, 4096, 0, 0, unix.EINVAL, 0, false, 0},
				{"kernel address", 0xFFFF800000000000, 4096, 0, 0, unix.EFAULT, 0, false, 0},
				{"past user space", base, 1 << 50, 0, 0, unix.EFAULT, 0, false, 0},
				{"NULL", 0, 4096, 0, 0, unix.EFAULT, 0, false, 0},
				{"read-only", addrOf(ro), 4096, 0, 0, unix.EFAULT, 0, false, 0},
				{"runs into a hole", addrOf(hole), 2 * 4096, 0, 0, unix.ENOMEM, 0, false, 0},
				{"4 KB pages, offset kept", base + 4096 + 0x123, 100, 0, 0, nil, tc.hostVA + 0x123, true, 4096},
				{"huge pages", base, 4 << 20, 0, 0, nil, tc.hugeVA, true, 2 << 20},
				{"2 MB aligned, odd size: 4 KB pages", base, (2 << 20) + 4096, 0, 0, nil, tc.hostVA, true, 4096},
				{"size rounds up to 2 MB of pages", base, (2 << 20) - 100, 0, 0, nil, tc.hugeVA, true, 2 << 20},
				{"hint honoured", base + 4096, 4096, 0xFFF0000200000000 &^ 0, 0, nil, 0, true, 4096},
				{"hint with offset honoured", base + 4096 + 8, 4096, tc.hostVA + 64<<20, 0, nil, tc.hostVA + 64<<20 + 8, true, 4096},
				{"forced hint with offset", base + 8, 4096, tc.hostVA + 64<<20, hl.HL_MEM_FORCE_HINT, unix.EINVAL, 0, false, 0},
				{"forced unaligned hint", base + 4096, 4096, tc.hostVA + 100, hl.HL_MEM_FORCE_HINT, unix.ENOMEM, 0, false, 0},
				{"forced hint", base + 4096, 4096, tc.hostVA + 128<<20, hl.HL_MEM_FORCE_HINT, nil, tc.hostVA + 128<<20, false, 4096},
				{"forced hint in use", base + 8192, 4096, tc.hostVA + 128<<20, hl.HL_MEM_FORCE_HINT, unix.ENOMEM, 0, false, 0},
			}
			for _, st := range steps {
				want := st.va
				if st.name == "hint honoured" {
					want = tc.hostVA + 32<<20
					st.hint = want
				}
				got, err := memMapHost(f, st.addr, st.size, st.hint, st.flags)
				if !errIs(err, st.want) || got != want {
					t.Errorf("%s: %#x, %v; want %#x, %v", st.name, got, err, want, st.want)
					continue
				}
				if err != nil {
					continue
				}
				m := f.ctx.maps[got]
				if m == nil || m.pageSize != st.checkPageSz {
					t.Errorf("%s: mapping %+v", st.name, m)
				}
				if st.unmapAfter {
					if err := memUnmap(f, got); err != nil {
						t.Errorf("%s: UNMAP: %v", st.name, err)
					}
				}
			}
			if err := memUnmap(f, tc.hostVA+128<<20); err != nil {
				t.Errorf("UNMAP of the forced mapping: %v", err)
			}
			if f.dev.prof.dramVirtual {
				// The virtual MSI-X doorbell page is mapped in every
				// context: a mapping over it fails in the MMU.
				db := uint64(gaudi2DoorbellVA)
				if _, err := memMapHost(f, base+4096, 8192, db-4096, hl.HL_MEM_FORCE_HINT); !errors.Is(err, unix.EINVAL) {
					t.Errorf("mapping over the doorbell: %v", err)
				}
				if va, err := memMapHost(f, base+4096, 4096, db-4096, hl.HL_MEM_FORCE_HINT); err != nil || va != db-4096 {
					t.Errorf("mapping next to the doorbell: %#x, %v", va, err)
				} else {
					memUnmap(f, va)
				}
			}
			// Everything returned: the range has its initial free list.
			r := f.ctx.ranges[vaHost]
			if len(r.free) != 1 || r.free[0].start != tc.hostVA {
				t.Errorf("host range free list %x", r.free)
			}
		})
	}
}

// A host mapping larger than 4 GB (hl-thunk's test_map_bigger_than_4GB):
// the memory is not touched, and the whole of it resolves.
func TestMemoryMapHostBiggerThan4GB(t *testing.T) {
	_, _, f := openCompute(t, Gaudi2)
	const size = 5 << 30
	buf := anon(t, size+4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	if addrOf(buf)%(2<<20) == 0 {
		buf = buf[4096:]
	} else {
		buf = buf[:size]
	}
	n := uint64(len(buf))
	rssBefore := rss(t)
	va, err := memMapHost(f, addrOf(buf), n, 0, 0)
	if err != nil || va != g2HostVA {
		t.Fatalf("MAP of 5 GB: %#x, %v", va, err)
	}
	// RSS may also shrink meanwhile (the runtime's scavenger returns heap
	// pages): that is no growth.
	if after := rss(t); after > rssBefore && after-rssBefore > 64<<20 {
		t.Errorf("mapping touched the memory: RSS grew by %d", after-rssBefore)
	}
	last := va + n - 1
	e, err := f.ctx.resolve(last, 1)
	if err != nil || e.kind != extentHost || &e.host[0] != &buf[n-1] {
		t.Errorf("resolve of the last byte: %+v, %v", e, err)
	}
	if _, err := f.ctx.resolve(last+1, 1); err == nil {
		t.Errorf("resolve past the mapping succeeded")
	}
	if err := memUnmap(f, va); err != nil {
		t.Fatal(err)
	}
}

func rss(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc")
	}
	var size, res uint64
	for i, f := range strings.Fields(string(b))[:2] {
		var v uint64
		for _, c := range f {
			v = v*10 + uint64(c-'0')
		}
		if i == 0 {
			size = v
		} else {
			res = v
		}
	}
	_ = size
	return res * uint64(os.Getpagesize())
}

func TestMemoryResolve(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	host := anon(t, 3*4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	copy(host[4096+10:], "through the MMU")
	hva, err := memMapHost(f, addrOf(host)+4096+10, 100, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	err = f.ctx.access(hva, 15, func(e extent) error {
		if e.kind != extentHost {
			t.Errorf("kind %d", e.kind)
		}
		got = append(got, e.host...)
		return nil
	})
	if err != nil || string(got) != "through the MMU" {
		t.Errorf("host access: %q, %v", got, err)
	}
	// A DRAM mapping of scattered pages resolves page run by page run.
	a, _ := memAllocFlags(f, g2Page, 0)
	b, _ := memAllocFlags(f, g2Page, 0)
	c, _ := memAllocFlags(f, 2*g2Page, 0) // pages 2 and 3
	memFree(f, b)
	e, _ := memAllocFlags(f, 2*g2Page, 0) // pages 1 and 4
	dva, err := memMapDevice(f, e, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var exts []extent
	err = f.ctx.access(dva+g2Page-8, 16, func(x extent) error { exts = append(exts, x); return nil })
	base := d.prof.dramUserBase - d.prof.dramBase
	if err != nil || len(exts) != 2 || exts[0].dram != base+2*g2Page-8 || exts[0].n != 8 ||
		exts[1].dram != base+4*g2Page || exts[1].n != 8 {
		t.Errorf("DRAM extents %+v, %v", exts, err)
	}
	if err := d.dram.WriteAt([]byte("pages"), base+4*g2Page); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 5)
	x, err := f.ctx.resolve(dva+g2Page, 5)
	if err != nil || d.dram.ReadAt(out, x.dram) != nil || string(out) != "pages" {
		t.Errorf("DRAM resolve: %+v %q %v", x, out, err)
	}
	var fault *vaFault
	if _, err := f.ctx.resolve(0x1234, 1); !errors.As(err, &fault) {
		t.Errorf("unmapped address: %v", err)
	}
	_, _ = a, c

	// Gaudi: physical DRAM resolves directly.
	_, gd, gf := openCompute(t, Gaudi)
	x, err = gf.ctx.resolve(0x20000000, 1<<30)
	if err != nil || x.kind != extentDRAM || x.dram != 0x20000000 || x.n != 1<<30 {
		t.Errorf("Gaudi physical DRAM: %+v, %v", x, err)
	}
	if x, err := gf.ctx.resolve(gd.prof.dramSize-4, 100); err != nil || x.n != 4 {
		t.Errorf("Gaudi DRAM end: %+v, %v", x, err)
	}
}

func TestMemoryGaudi(t *testing.T) {
	s, d, f := openCompute(t, Gaudi)
	userDRAM := uint64(32<<30 - 512<<20)
	// ALLOC only counts, as the user reports it, and returns handle 0.
	for _, tc := range []struct {
		size uint64
		want error
		ctx  uint64
	}{
		{0, unix.EINVAL, 0},
		{100, nil, 100},
		{1 << 30, nil, 1<<30 + 100},
	} {
		h, err := memAllocFlags(f, tc.size, hl.HL_MEM_CONTIGUOUS)
		if !errIs(err, tc.want) || h != 0 {
			t.Errorf("ALLOC %d: %d, %v", tc.size, h, err)
		}
		if free, ctx := dramUsage(t, f); ctx != tc.ctx || free != userDRAM-tc.ctx {
			t.Errorf("ALLOC %d: free %#x ctx %#x", tc.size, free, ctx)
		}
	}
	// FREE subtracts alloc.mem_size (the handle's place) without checks.
	if err := memFree(f, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := memFree(f, 200); err != nil {
		t.Fatal(err)
	}
	if free, ctx := dramUsage(t, f); ctx != ^uint64(99) || free != userDRAM+100 {
		t.Errorf("after FREE of more than allocated: free %#x ctx %#x", free, ctx)
	}
	// No handle can be mapped.
	for _, h := range []uint64{0, 1, 2} {
		if va, err := memMapDevice(f, h, 0, 0); !errors.Is(err, unix.EINVAL) || va != 0 {
			t.Errorf("MAP of handle %d: %#x, %v", h, va, err)
		}
	}
	memAllocFlags(f, 4096, 0)
	// Closing the context forgets the usage.
	f.Close()
	g, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if free, ctx := dramUsage(t, g); ctx != 0 || free != userDRAM {
		t.Errorf("new context: free %#x ctx %#x", free, ctx)
	}
	_ = s
}

func TestMemoryMapBlock(t *testing.T) {
	if len(gaudi2UserBlocks) != 453 {
		t.Fatalf("%d user blocks, want NUM_USER_MAPPED_BLOCKS = 453", len(gaudi2UserBlocks))
	}
	seen := map[uint32]bool{}
	for _, b := range gaudi2UserBlocks {
		if seen[b.addr] {
			t.Errorf("block %#x twice", b.addr)
		}
		seen[b.addr] = true
	}
	_, _, f := openCompute(t, Gaudi2)
	for _, tc := range []struct {
		addr   uint64
		handle uint64
		size   uint32
		want   error
	}{
		{gaudi2CFGBase + 0x4e90000, 0x2000000000000000, 0x10000, nil},         // farm ARC0 DCCM
		{gaudi2CFGBase + 0x42c0000, 0x2000000000004000, 0x8000, nil},          // scheduler ARC4 DCCM
		{gaudi2CFGBase + 0x4e8f000, 69<<12 | 0x2000000000000000, 0x1000, nil}, // ARC0 ACP
		{gaudi2CFGBase + 0x5400000 + 0x80000 + 0x20000 + 0x2000, (77+3*15+2)<<12 | 0x2000000000000000, 0x1000, nil},
		{gaudi2CFGBase + 0x4f10000, 446<<12 | 0x2000000000000000, 0x1000, nil},               // PCIe decoder 1
		{gaudi2CFGBase + 0x4100000 + 3*0x200000, 451<<12 | 0x2000000000000000, 0x14000, nil}, // DCORE3 SM objects
		{gaudi2CFGBase + 0x4e90000 + 4, 0, 0, unix.EINVAL},
		{0x4e90000, 0, 0, unix.EINVAL},
		{0, 0, 0, unix.EINVAL},
	} {
		var a hl.MemArgs
		a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
		a.In().MapBlock().BlockAddr = tc.addr
		*(*uint64)(unsafe.Add(unsafe.Pointer(&a), 8)) = 0xFFFFFFFFFFFFFFFF
		err := memIoctl(f, &a)
		if !errIs(err, tc.want) || a.Out().BlockHandle() != tc.handle || a.Out().BlockSize() != tc.size {
			t.Errorf("MAP_BLOCK %#x: %#x %#x %v", tc.addr, a.Out().BlockHandle(), a.Out().BlockSize(), err)
		}
		if a.Out().Pad() != 0xFFFFFFFF {
			t.Errorf("MAP_BLOCK %#x wrote pad", tc.addr)
		}
		if err == nil {
			if _, err := f.Mmap(int64(tc.handle), int(tc.size)*2, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
				t.Errorf("mmap of a wrong size: %v", err)
			}
			b, err := f.Mmap(int64(tc.handle), int(tc.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Errorf("mmap of the block: %v", err)
			} else if err := f.Munmap(b); err != nil {
				t.Errorf("munmap of the block: %v", err)
			}
		}
	}
	_, _, g := openCompute(t, Gaudi)
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = gaudi2CFGBase + 0x4e90000
	if err := memIoctl(g, &a); !errors.Is(err, unix.EPERM) || a.Out().BlockHandle() != 0 {
		t.Errorf("Gaudi MAP_BLOCK: %v", err)
	}
	if _, err := g.Mmap(0x2000000000000000, 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EPERM) {
		t.Errorf("Gaudi block mmap: %v", err)
	}
}

func TestMemoryTSAlloc(t *testing.T) {
	_, _, f := openCompute(t, Gaudi2)
	ts := func(n uint32) (uint64, error) {
		var a hl.MemArgs
		a.In().Op = hl.HL_MEM_OP_TS_ALLOC
		a.In().NumOfElements = n
		a.In().Alloc().MemSize = 0x77
		err := memIoctl(f, &a)
		return a.Out().Handle(), err
	}
	for _, tc := range []struct {
		n      uint32
		handle uint64
		want   error
	}{
		{0, 0x77, unix.ENOMEM},
		{hl.TS_MAX_ELEMENTS_NUM + 1, 0x77, unix.EINVAL},
		{1, 0x8000000000001000, nil},
		{hl.TS_MAX_ELEMENTS_NUM, 0x8000000000002000, nil},
		{600, 0x8000000000003000, nil},
	} {
		h, err := ts(tc.n)
		if !errIs(err, tc.want) || h != tc.handle {
			t.Errorf("TS_ALLOC %d: %#x, %v", tc.n, h, err)
		}
	}
	// mmap: exactly the page-rounded size, once at a time.
	h := int64(0x8000000000003000 - 1<<64)
	for _, tc := range []struct {
		off    int64
		length int
		want   error
	}{
		{h, 4096, unix.EINVAL},
		{h, 12288, unix.EINVAL},
		{h + 0x10000, 4800, unix.EINVAL},
		{h + 8, 4800, unix.EINVAL},
		{0x4000, 4800, unix.EINVAL},
	} {
		if _, err := f.Mmap(tc.off, tc.length, unix.PROT_READ, unix.MAP_SHARED); !errIs(err, tc.want) {
			t.Errorf("mmap %#x/%d: %v, want %v", tc.off, tc.length, err, tc.want)
		}
	}
	b, err := f.Mmap(h, 4800, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Mmap(h, 4800, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second mmap: %v", err)
	}
	if !bytes.Equal(b[:4800], make([]byte, 4800)) {
		t.Errorf("TS buffer not zeroed")
	}
	if err := f.Munmap(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Munmap(b); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second munmap: %v", err)
	}
	b, err = f.Mmap(h, 4800, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap after munmap: %v", err)
	}
	// The mapping outlives the file.
	f.Close()
	_ = b[4799]
	if err := f.Munmap(b); err != nil {
		t.Errorf("munmap after Close: %v", err)
	}
}

func TestMemoryOpsAndStates(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	// Unknown ops: EINVAL, argument untouched.
	var a hl.MemArgs
	a.In().Op = 7
	a.In().Alloc().MemSize = 5
	if err := memIoctl(f, &a); !errors.Is(err, unix.EINVAL) || a.In().Alloc().MemSize != 5 {
		t.Errorf("unknown op: %v", err)
	}
	// Every op, known or not, needs an operational device.
	buf := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	for _, s := range []State{InReset, Malfunction, NeedsReset, InResetAfterDeviceRelease} {
		d.SetState(s)
		for op := uint32(0); op <= 7; op++ {
			var a hl.MemArgs
			a.In().Op = op
			a.In().NumOfElements = 1
			a.In().Flags = hl.HL_MEM_USERPTR
			a.In().MapHost().HostVirtAddr = addrOf(buf)
			a.In().MapHost().MemSize = 4096
			before := a
			if err := memIoctl(f, &a); !errors.Is(err, unix.EBUSY) || a != before {
				t.Errorf("op %d in state %v: %v", op, s, err)
			}
		}
	}
	d.SetState(InDeviceCreation)
	if _, err := memAllocFlags(f, 1, 0); err != nil {
		t.Errorf("ALLOC while in device creation: %v", err)
	}
	d.SetState(Operational)
	// Fault injection by op.
	d.InjectFault(Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_ALLOC, Nth: 2, Errno: unix.EIO})
	if _, err := memMapDevice(f, 1, 0, 0); err != nil {
		t.Errorf("MAP with an ALLOC fault armed: %v", err)
	}
	if _, err := memAllocFlags(f, 1, 0); err != nil {
		t.Errorf("first ALLOC: %v", err)
	}
	if _, err := memAllocFlags(f, 1, 0); !errors.Is(err, unix.EIO) {
		t.Errorf("second ALLOC: %v, want the injected EIO", err)
	}
	// The control node has no MEMORY.
	c, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := memAllocFlags(c, 1, 0); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("MEMORY on the control node: %v", err)
	}
	// The control node sees the device's usage but no context's.
	free, ctx := dramUsage(t, c)
	if ctx != 0 || free != (g2Pages-2)*g2Page {
		t.Errorf("control DRAM usage: free %#x ctx %#x", free, ctx)
	}
}

// Closing the compute file frees all the context had.
func TestMemoryReleaseOnClose(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	host := anon(t, 1<<20, 4096, unix.PROT_READ|unix.PROT_WRITE)
	for i := 0; i < 5; i++ {
		h, _ := memAllocFlags(f, g2Page, 0)
		memMapDevice(f, h, 0, 0)
		memMapDevice(f, h, 0, 0)
	}
	if _, err := memMapHost(f, addrOf(host), 1<<20, 0, 0); err != nil {
		t.Fatal(err)
	}
	c, _ := d.OpenControl()
	defer c.Close()
	if free, _ := dramUsage(t, c); free != (g2Pages-5)*g2Page {
		t.Errorf("free %#x", free)
	}
	f.Close()
	if free, _ := dramUsage(t, c); free != g2Pages*g2Page {
		t.Errorf("free after close %#x", free)
	}
	g, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, ctx := dramUsage(t, g); ctx != 0 {
		t.Errorf("ctx usage in a new context %#x", ctx)
	}
	if h, err := memAllocFlags(g, 1, 0); err != nil || h != 1 {
		t.Errorf("first handle of a new context: %d, %v", h, err)
	}
	if va, err := memMapHost(g, addrOf(host), 1<<20, 0, 0); err != nil || va != g2HostVA {
		t.Errorf("first host VA of a new context: %#x, %v", va, err)
	}
}

// A call in progress keeps the file, as the kernel holds a file during a
// system call: the context is released when the last call returns.
func TestMemoryCloseDuringCall(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	if _, err := memAllocFlags(f, 1, 0); err != nil {
		t.Fatal(err)
	}
	if !f.enter() {
		t.Fatal("enter refused")
	}
	f.Close()
	if _, err := d.Open(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("open while a call is in progress: %v", err)
	}
	if f.enter() {
		t.Errorf("a new call entered a closed file")
	}
	f.exit()
	g, err := d.Open()
	if err != nil {
		t.Fatalf("open after the call returned: %v", err)
	}
	defer g.Close()
	if free, ctx := dramUsage(t, g); ctx != 0 || free != g2Pages*g2Page {
		t.Errorf("usage after release: free %#x ctx %#x", free, ctx)
	}
}
