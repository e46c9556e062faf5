package sim

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

const exportFlags = unix.O_RDWR | unix.O_CLOEXEC

// dramAt reads n bytes of device memory at device address va.
func dramAt(t *testing.T, f *File, va uint64, n int) []byte {
	t.Helper()
	out := make([]byte, 0, n)
	err := f.ctx.access(va, uint64(n), func(e extent) error {
		b := make([]byte, e.n)
		if err := f.dev.dram.ReadAt(b, e.dram); err != nil {
			return err
		}
		out = append(out, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dramPut writes b to device memory at device address va.
func dramPut(t *testing.T, f *File, va uint64, b []byte) {
	t.Helper()
	err := f.ctx.access(va, uint64(len(b)), func(e extent) error {
		err := f.dev.dram.WriteAt(b[:e.n], e.dram)
		b = b[e.n:]
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// preadFD reads an export's bytes through the test hook: the CPU cannot
// read a dma-buf.
func preadFD(t *testing.T, fd int, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := TestHookReadDMABuf(fd, off, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMemoryExportGaudi2(t *testing.T) {
	memfdExports(t) // the file is read and written; TestUdmabufExport covers dma-bufs
	_, d, f := openCompute(t, Gaudi2)
	// Scatter the allocation: its second page is not after its first.
	x, _ := memAllocFlags(f, g2Page, 0)
	y, _ := memAllocFlags(f, g2Page, 0)
	z, _ := memAllocFlags(f, g2Page, 0)
	memFree(f, y)
	h, _ := memAllocFlags(f, 2*g2Page, 0)
	va, err := memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	hva, _ := memMapHost(f, addrOf(host), 4096, 0, 0)
	for _, tc := range []struct {
		name               string
		addr, size, offset uint64
	}{
		{"unmapped address", va + 2*g2Page, 4096, 0},
		{"host mapping", hva, 4096, 0},
		{"inside the mapping", va + 4096, 4096, 0},
		{"size 0", va, 0, 0},
		{"size not in pages", va, 100, 0},
		{"offset not in pages", va, 4096, 100},
		{"past the allocation", va, 8192, 2*g2Page - 4096},
		// validate_export_params lets a wrapping sum through; the
		// simulator refuses it by choice (see exportDMABuf).
		{"offset + size wraps", va, 8192, ^uint64(4095)},
	} {
		fd, err := memExport(f, tc.addr, tc.size, tc.offset, exportFlags)
		if !errors.Is(err, unix.EINVAL) || fd != -int(unix.EBADF) {
			t.Errorf("%s: fd %d, %v; want -EBADF, EINVAL", tc.name, fd, err)
		}
	}

	// An export across the two pages.
	const n = 64 << 10
	off := uint64(g2Page - n/2)
	fd, err := memExport(f, va, n, off, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	if st.Size != n {
		t.Errorf("export size %d, want %d", st.Size, n)
	}
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("O_CLOEXEC not honoured")
	}
	// Never readable: the CPU cannot read or map a Gaudi dma-buf
	// (habanalabs_dmabuf_ops has no mmap: dma_buf_mmap_internal answers
	// EINVAL; the simulator's write-only file answers EACCES).
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_ACCMODE != unix.O_WRONLY {
		t.Errorf("access mode %#x, want write-only", fl)
	}
	if _, err := unix.Mmap(fd, 0, n, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EACCES) {
		t.Errorf("mmap of the export: %v, want EACCES", err)
	}
	if _, err := unix.Pread(fd, make([]byte, 8), 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("read of the export: %v, want EBADF", err)
	}
	// Device writes show in the file, file writes in device memory.
	dramPut(t, f, va+off+n/2-4, []byte("device!!"))
	if got := preadFD(t, fd, n/2-4, 8); string(got) != "device!!" {
		t.Errorf("file reads %q", got)
	}
	unix.Pwrite(fd, []byte("from the file"), 10)
	if got := dramAt(t, f, va+off+10, 13); string(got) != "from the file" {
		t.Errorf("device reads %q", got)
	}
	unix.Pwrite(fd, []byte("mmap!"), int64(n-5))
	if got := dramAt(t, f, va+off+n-5, 5); string(got) != "mmap!" {
		t.Errorf("device reads %q after a write", got)
	}

	// The same range again: another file of the same memory.
	fd2, err := memExport(f, va, n, off, unix.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if got := preadFD(t, fd2, 10, 13); string(got) != "from the file" {
		t.Errorf("second export reads %q", got)
	}
	// A file of the export's write-sealed witness (export_witness.go):
	// EPERM where the driver's dma-buf answers EINVAL.
	if _, err := unix.Pwrite(fd2, []byte("x"), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write to a read-only export: %v, want EPERM", err)
	}
	// An overlapping range while the first is open: a view of the same
	// memory (export_view.go, TestOverlappingExports).
	fd3, err := memExport(f, va, 2*n, off, exportFlags)
	if err != nil {
		t.Fatalf("overlapping export: %v", err)
	}
	if got := preadFD(t, fd3, 10, 13); string(got) != "from the file" {
		t.Errorf("overlapping export reads %q", got)
	}
	// A disjoint range of the same mapping is fine.
	fd4, err := memExport(f, va, 4096, 0, exportFlags)
	if err != nil {
		t.Fatal(err)
	}

	// The mapping cannot go while an export of it is open, nor the
	// allocation while it is mapped.
	if err := memUnmap(f, va); !errors.Is(err, unix.EINVAL) {
		t.Errorf("UNMAP while exported: %v", err)
	}
	if err := memFree(f, h); !errors.Is(err, unix.EINVAL) {
		t.Errorf("FREE while mapped: %v", err)
	}
	unix.Close(fd)
	unix.Close(fd2)
	unix.Close(fd3)
	unix.Close(fd4)
	if err := memUnmap(f, va); err != nil {
		t.Errorf("UNMAP after the export was closed: %v", err)
	}

	// The bytes stay with the allocation: mapped again; freed and
	// allocated again they are scrubbed (dram_scrub.go; the driver does
	// not scrub by default).
	va, _ = memMapDevice(f, h, 0, 0)
	if got := dramAt(t, f, va+off+10, 13); string(got) != "from the file" {
		t.Errorf("after remapping: %q", got)
	}
	// Now the overlapping export is a segment of its own and sees the
	// same bytes.
	fd3, err = memExport(f, va, 2*n, off, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	if got := preadFD(t, fd3, n-5, 5); string(got) != "mmap!" {
		t.Errorf("overlapping export after the first closed reads %q", got)
	}
	unix.Close(fd3)
	memUnmap(f, va)
	memUnmap(f, hva)
	if err := memFree(f, h); err != nil {
		t.Fatal(err)
	}
	if len(d.dram.pieces) != 0 {
		t.Errorf("exported ranges left after FREE: %d", len(d.dram.pieces))
	}
	h, _ = memAllocFlags(f, 2*g2Page, 0)
	va, _ = memMapDevice(f, h, 0, 0)
	if got := dramAt(t, f, va+off+10, 13); string(got) != string(make([]byte, 13)) {
		t.Errorf("after FREE and ALLOC: %q, want zeros (scrubbed)", got)
	}
	_, _ = x, z
}

func TestMemoryExportGaudi(t *testing.T) {
	memfdExports(t)
	_, d, f := openCompute(t, Gaudi)
	for _, tc := range []struct {
		name               string
		addr, size, offset uint64
	}{
		{"offset", 0x20000000, 4096, 4096},
		{"driver's DRAM", 0x20000000 - 4096, 4096, 0},
		{"past DRAM", 32<<30 - 4096, 8192, 0},
		{"wraps", 0x20000000, ^uint64(4095), 0},
		{"address not in pages", 0x20000000 + 8, 4096, 0},
		{"size 0", 0x20000000, 0, 0},
		{"size not in pages", 0x20000000, 4097, 0},
	} {
		fd, err := memExport(f, tc.addr, tc.size, tc.offset, exportFlags)
		if !errors.Is(err, unix.EINVAL) || fd != -int(unix.EBADF) {
			t.Errorf("%s: fd %d, %v; want -EBADF, EINVAL", tc.name, fd, err)
		}
	}
	d.dram.WriteAt([]byte("physical"), 32<<30-4096)
	fd, err := memExport(f, 32<<30-8192, 8192, 0, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	if got := preadFD(t, fd, 4096, 8); string(got) != "physical" {
		t.Errorf("export reads %q", got)
	}
	unix.Pwrite(fd, []byte("back"), 0)
	got := make([]byte, 4)
	d.dram.ReadAt(got, 32<<30-8192)
	if string(got) != "back" {
		t.Errorf("DRAM reads %q", got)
	}
	unix.Close(fd)
}

// The driver's exports hold the compute file: closing it with an export
// open leaves the context (and the device busy) until the export closes.
func TestMemoryExportHoldsContext(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openCompute(t, asic)
			addr := uint64(0x20000000)
			if asic == Gaudi2 {
				h, _ := memAllocFlags(f, 1, 0)
				addr, _ = memMapDevice(f, h, 0, 0)
			} else {
				memAllocFlags(f, 1<<20, 0)
			}
			fd, err := memExport(f, addr, 1<<20, 0, exportFlags)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := d.Open(); !errors.Is(err, unix.EBUSY) {
				t.Fatalf("open while an export holds the context: %v", err)
			}
			c, _ := d.OpenControl()
			defer c.Close()
			var st hl.OpenStatsInfo
			info(c, hl.HL_INFO_OPEN_STATS, structBytes(&st))
			if st.IsComputeCtxActive != 1 {
				t.Errorf("context not active while held")
			}
			if free, _ := dramUsage(t, c); free == d.prof.dramSize-(d.prof.dramUserBase-d.prof.dramBase) {
				t.Errorf("DRAM usage released while the context is held")
			}
			unix.Close(fd)
			info(c, hl.HL_INFO_OPEN_STATS, structBytes(&st))
			if st.IsComputeCtxActive != 0 {
				t.Errorf("context still active after the export closed")
			}
			if free, _ := dramUsage(t, c); free != d.prof.dramSize-(d.prof.dramUserBase-d.prof.dramBase) {
				t.Errorf("DRAM usage not released: free %#x", free)
			}
			g, err := d.Open()
			if err != nil {
				t.Fatalf("open after the export closed: %v", err)
			}
			g.Close()
		})
	}
}

// Loops of alloc/map/export/close leave no descriptor and no mapping
// behind.
func TestMemoryNoLeaks(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			s := newTestSystem(t, Default(asic, 1))
			defer s.Close()
			d := s.Device(0)
			host := anon(t, 4<<20, 2<<20, unix.PROT_READ|unix.PROT_WRITE)
			round := func(i int) {
				f, err := d.Open()
				if err != nil {
					t.Fatal(err)
				}
				addr := uint64(0x20000000 + i*8192)
				var h uint64
				if asic == Gaudi2 {
					h, _ = memAllocFlags(f, g2Page, 0)
					addr, _ = memMapDevice(f, h, 0, 0)
				}
				fd, err := memExport(f, addr, 8192, 0, exportFlags)
				if err != nil {
					t.Fatal(err)
				}
				unix.Pwrite(fd, []byte{byte(i)}, 0)
				hva, _ := memMapHost(f, addrOf(host), uint64(len(host)), 0, 0)
				var a hl.MemArgs
				a.In().Op = hl.HL_MEM_OP_TS_ALLOC
				a.In().NumOfElements = 16
				memIoctl(f, &a)
				ts, _ := f.Mmap(int64(a.Out().Handle()), 4096, unix.PROT_READ, unix.MAP_SHARED)
				switch i % 3 {
				case 0: // orderly
					unix.Close(fd)
					memUnmap(f, hva)
					if asic == Gaudi2 {
						if err := memUnmap(f, addr); err != nil {
							t.Fatal(err)
						}
						memFree(f, h)
					}
					f.Munmap(ts)
					f.Close()
				case 1: // close with everything in place
					unix.Close(fd)
					f.Close()
					f.Munmap(ts)
				case 2: // the export outlives the file
					f.Munmap(ts)
					f.Close()
					unix.Close(fd)
				}
			}
			round(0) // sets up device memory
			round(1)
			round(2)
			d.reap()
			fds, maps := countFDs(t), countMaps(t)
			links := fdLinks(t)

			for i := 3; i < 30; i++ {
				round(i)
			}
			d.reap()
			if n := countFDs(t); n != fds {
				t.Errorf("descriptors: %d before, %d after; (-before +after):\n%s", fds, n, cmp.Diff(links, fdLinks(t)))
			}
			if n := countMaps(t); n != maps {
				t.Errorf("mappings: %d before, %d after", maps, n)
			}
			if r := d.ResidentDRAM(); r > 64*pageResident {
				t.Errorf("resident %d", r)
			}
			f, err := d.Open()
			if err != nil {
				t.Fatal(err)
			}
			if free, ctx := dramUsage(t, f); ctx != 0 || free != d.prof.dramSize-(d.prof.dramUserBase-d.prof.dramBase) {
				t.Errorf("DRAM usage free %#x ctx %#x", free, ctx)
			}
			f.Close()
		})
	}
}

// Parallel MEMORY calls on one context (run with -race).
func TestMemoryConcurrent(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	const workers, rounds = 8, 40
	host := anon(t, workers*(1<<20), 4096, unix.PROT_READ|unix.PROT_WRITE)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := host[w<<20 : (w+1)<<20]
			for i := 0; i < rounds; i++ {
				h, err := memAllocFlags(f, uint64(1+i%2)*g2Page, uint32(i%2))
				if errors.Is(err, unix.ENOMEM) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				va, err := memMapDevice(f, h, 0, 0)
				if err != nil {
					errs <- fmt.Errorf("MAP: %w", err)
					return
				}
				hva, err := memMapHost(f, addrOf(buf), uint64(len(buf)), 0, 0)
				if err != nil {
					errs <- fmt.Errorf("host MAP: %w", err)
					return
				}
				if i%4 == 0 {
					fd, err := memExport(f, va, 4096, 0, exportFlags)
					if err != nil {
						errs <- fmt.Errorf("EXPORT: %w", err)
						return
					}
					unix.Pwrite(fd, []byte{byte(w)}, 0)
					unix.Close(fd)
				}
				f.ctx.access(hva, 64, func(e extent) error { e.host[0] = byte(i); return nil })
				f.ctx.access(va, 64, func(e extent) error { return d.dram.WriteAt([]byte{byte(i)}, e.dram) })
				if err := memUnmap(f, hva); err != nil {
					errs <- fmt.Errorf("host UNMAP: %w", err)
					return
				}
				if err := memUnmap(f, va); err != nil {
					errs <- fmt.Errorf("UNMAP: %w", err)
					return
				}
				if err := memFree(f, h); err != nil {
					errs <- fmt.Errorf("FREE: %w", err)
					return
				}
				var st hl.InfoDRAMUsage
				info(f, hl.HL_INFO_DRAM_USAGE, structBytes(&st))
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if free, ctx := dramUsage(t, f); ctx != 0 || free != g2Pages*g2Page {
		t.Errorf("after the workers: free %#x ctx %#x", free, ctx)
	}
	for rt, r := range f.ctx.ranges {
		if rt == vaHost {
			continue // the CB pool and the internal CB stay reserved
		}
		if len(r.free) != 1 || r.free[0] != r.span {
			t.Errorf("range %d free list %x", rt, r.free)
		}
	}
	if len(f.ctx.maps) != 0 || len(f.ctx.index) != 0 {
		t.Errorf("mappings left: %d", len(f.ctx.maps))
	}
	_ = unsafe.Pointer(nil)
}

// Export failures that do not come from the arguments: no descriptor left
// (EMFILE, as get_unused_fd_flags answers) and device memory released by
// System.Close.
func TestMemoryExportResources(t *testing.T) {
	s, _, f := openCompute(t, Gaudi)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Set up device memory first: it takes a descriptor of its own.
	s.Device(0).dram.WriteAt([]byte{1}, 0)
	// The lowest free descriptor becomes the limit: no new one fits.
	free, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(free)
	low := lim
	low.Cur = uint64(free)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	fd, err := memExport(f, 0x20000000, 4096, 0, exportFlags)
	unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	if !errors.Is(err, unix.EMFILE) || fd != -int(unix.EBADF) {
		t.Errorf("export without descriptors: %d, %v", fd, err)
	}
	if fd, err := memExport(f, 0x20000000, 4096, 0, exportFlags); err != nil {
		t.Errorf("export with descriptors again: %v", err)
	} else {
		unix.Close(fd)
	}
	s.Close()
	if fd, err := memExport(f, 0x20000000, 4096, 0, exportFlags); !errors.Is(err, unix.ENODEV) || fd != -int(unix.EBADF) {
		t.Errorf("export after System.Close: %d, %v", fd, err)
	}
}
