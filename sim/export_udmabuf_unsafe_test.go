package sim

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"golang.org/x/sys/unix"
)

// needUdmabuf skips the test on a host without /dev/udmabuf, with the
// reason, unless GAUDI_VMTEST=1 says it runs in the VM harness, whose
// kernel has udmabuf: there it fails.
func needUdmabuf(t *testing.T) {
	t.Helper()
	fd, err := unix.Open(udmabufPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return
	}
	if os.Getenv("GAUDI_VMTEST") == "1" {
		t.Fatalf("open %s: %v; GAUDI_VMTEST=1 and the VM kernel must have udmabuf", udmabufPath, err)
	}
	t.Skipf("open %s: %v: this kernel has no udmabuf (CONFIG_UDMABUF); scripts/vmtest/run.sh ./sim runs this test on one that has", udmabufPath, err)
}

// memfdExports makes the test's exports memfds, as on a host without
// /dev/udmabuf, for tests of what only a memfd does (read, write, access
// modes). The test must not run in parallel with others.
func memfdExports(t *testing.T) {
	saved := udmabufPath
	udmabufPath = "/nonexistent/udmabuf"
	t.Cleanup(func() { udmabufPath = saved })
}

// fdLinks lists what this process's descriptors refer to.
func fdLinks(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+" "+l)
	}
	return out
}

// dmaBufSync issues DMA_BUF_IOCTL_SYNC with flags.
func dmaBufSync(fd int, flags uint64) error {
	arg := dmabuf.Sync{Flags: flags}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), dmabuf.DMA_BUF_IOCTL_SYNC, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return errno
	}
	return nil
}

// exportTarget is a range to export and the device's own view of it.
type exportTarget struct {
	addr, size, offset uint64
	put                func(i uint64, b []byte) // device write at byte i of the range
	get                func(i, n uint64) []byte // device read
	unmap              func() error             // UNMAP of the exported mapping (nil on Gaudi)
	reset              func()                   // scrub all device memory, as a hard reset does
}

func gaudi2Target(t *testing.T, d *Device, f *File) exportTarget {
	h, err := memAllocFlags(f, 2*g2Page, 0)
	if err != nil {
		t.Fatal(err)
	}
	va, err := memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 64 KiB across the border of the allocation's two pages, which need
	// not be next to each other in DRAM.
	const n = 64 << 10
	off := uint64(g2Page - n/2)
	return exportTarget{
		addr: va, size: n, offset: off,
		put:   func(i uint64, b []byte) { dramPut(t, f, va+off+i, b) },
		get:   func(i, n uint64) []byte { return dramAt(t, f, va+off+i, int(n)) },
		unmap: func() error { return memUnmap(f, va) },
		reset: d.dram.Reset,
	}
}

func gaudiTarget(t *testing.T, d *Device, f *File) exportTarget {
	const n = 8192
	addr := uint64(32<<30 - n)
	dram := addr - d.prof.dramBase
	return exportTarget{
		addr: addr, size: n,
		put: func(i uint64, b []byte) {
			if err := d.dram.WriteAt(b, dram+i); err != nil {
				t.Fatal(err)
			}
		},
		get: func(i, n uint64) []byte {
			b := make([]byte, n)
			if err := d.dram.ReadAt(b, dram+i); err != nil {
				t.Fatal(err)
			}
			return b
		},
		reset: d.dram.Reset,
	}
}

// TestUdmabufExport checks that, with /dev/udmabuf, an export is a real
// dma-buf of the device memory: DMA_BUF_IOCTL_SYNC works, device writes
// show through its mapping and writes through the mapping in device
// memory, also after device memory was scrubbed, and no descriptor is
// left once the export and the simulator are closed.
func TestUdmabufExport(t *testing.T) {
	needUdmabuf(t)
	for _, tc := range []struct {
		asic   ASIC
		target func(*testing.T, *Device, *File) exportTarget
	}{
		{Gaudi2, gaudi2Target},
		{Gaudi, gaudiTarget},
	} {
		t.Run(tc.asic.String(), func(t *testing.T) {
			// Checked last, once the simulator is closed too.
			fds := countFDs(t)
			t.Cleanup(func() {
				if got := countFDs(t); got != fds {
					t.Errorf("%d descriptors open after the export and the simulator were closed, %d before", got, fds)
				}
			})
			_, d, f := openCompute(t, tc.asic)
			x := tc.target(t, d, f)

			fd, err := memExport(f, x.addr, x.size, x.offset, exportFlags)
			if err != nil {
				t.Fatal(err)
			}
			if k, err := ExportKindOf(fd); k != ExportUdmabuf || err != nil {
				t.Fatalf("ExportKindOf = %v, %v; want udmabuf", k, err)
			}
			link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			if !strings.HasPrefix(link, "/dmabuf:") && link != "anon_inode:dmabuf" {
				t.Errorf("export is %q, not a dma-buf", link)
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || uint64(st.Size) != x.size {
				t.Errorf("fstat: size %d, %v; want %d", st.Size, err, x.size)
			}
			if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
				t.Errorf("O_CLOEXEC not honoured")
			}

			mem, err := unix.Mmap(fd, 0, int(x.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			n := x.size
			x.put(n/2-4, []byte("device!!"))
			if err := dmaBufSync(fd, dmabuf.DMA_BUF_SYNC_START|dmabuf.DMA_BUF_SYNC_RW); err != nil {
				t.Errorf("DMA_BUF_IOCTL_SYNC start: %v", err)
			}
			if got := mem[n/2-4 : n/2+4]; string(got) != "device!!" {
				t.Errorf("the dma-buf's mapping reads %q after a device write", got)
			}
			copy(mem[n-5:], "mmap!")
			copy(mem[:4], "head")
			if err := dmaBufSync(fd, dmabuf.DMA_BUF_SYNC_END|dmabuf.DMA_BUF_SYNC_RW); err != nil {
				t.Errorf("DMA_BUF_IOCTL_SYNC end: %v", err)
			}
			if err := dmaBufSync(fd, 1<<7); !errors.Is(err, unix.EINVAL) {
				t.Errorf("DMA_BUF_IOCTL_SYNC with unknown flags: %v, want EINVAL (is it a dma-buf?)", err)
			}
			if got := x.get(n-5, 5); string(got) != "mmap!" {
				t.Errorf("device reads %q after a write through the dma-buf", got)
			}
			if got := x.get(0, 4); string(got) != "head" {
				t.Errorf("device reads %q at the start of the range", got)
			}

			// A scrub must not take the pages from under the dma-buf.
			x.reset()
			if !bytes.Equal(mem[n/2-4:n/2+4], make([]byte, 8)) {
				t.Errorf("after a scrub the dma-buf reads %q", mem[n/2-4:n/2+4])
			}
			x.put(8, []byte("again"))
			if got := mem[8:13]; string(got) != "again" {
				t.Errorf("after a scrub a device write reads %q through the dma-buf", got)
			}

			// The export lives while mapped, then goes.
			unix.Close(fd)
			if x.unmap != nil {
				if err := x.unmap(); !errors.Is(err, unix.EINVAL) {
					t.Errorf("UNMAP while the dma-buf is still mmapped: %v, want EINVAL", err)
				}
			}
			unix.Munmap(mem)
			if x.unmap != nil {
				if err := x.unmap(); err != nil {
					t.Errorf("UNMAP after the dma-buf was closed and unmapped: %v", err)
				}
			} else {
				// The same range again, then the bytes stay with DRAM.
				fd2, err := memExport(f, x.addr, x.size, x.offset, exportFlags)
				if err != nil {
					t.Fatal(err)
				}
				unix.Close(fd2)
			}
		})
	}
}

// TestUdmabufExportMany exports the same range more often than the
// simulator remembers dma-bufs of one range: the open ones keep the
// export alive, the closed ones are forgotten.
func TestUdmabufExportMany(t *testing.T) {
	needUdmabuf(t)
	_, d, f := openCompute(t, Gaudi)
	x := gaudiTarget(t, d, f)
	var open []int
	for i := range 3 * maxBufs {
		fd, err := memExport(f, x.addr, x.size, x.offset, exportFlags)
		if err != nil {
			t.Fatalf("export %d: %v", i, err)
		}
		if i%maxBufs == 0 {
			open = append(open, fd)
		} else {
			unix.Close(fd)
		}
	}
	d.dram.mu.RLock()
	seg := d.dram.pieces[0].seg
	n := len(seg.bufs)
	d.dram.mu.RUnlock()
	if n > maxBufs || n < len(open) {
		t.Errorf("%d dma-bufs remembered with %d open, want at most %d", n, len(open), maxBufs)
	}
	// Each open one alone keeps the range exported.
	for i, fd := range open {
		if !d.dram.segmentLive(seg) {
			t.Errorf("export not live with %d of its dma-bufs open", len(open)-i)
		}
		unix.Close(fd)
	}
	if d.dram.segmentLive(seg) {
		t.Errorf("export live with all its dma-bufs closed")
	}
}

// TestUdmabufExportFallback checks that without /dev/udmabuf an export is
// a file of the memfd, and that ExportKindOf says so.
func TestUdmabufExportFallback(t *testing.T) {
	memfdExports(t)
	_, _, f := openCompute(t, Gaudi)
	fd, err := memExport(f, 32<<30-4096, 4096, 0, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if k, err := ExportKindOf(fd); k != ExportMemfd || err != nil {
		t.Errorf("ExportKindOf = %v, %v; want memfd", k, err)
	}
	if _, err := unix.Pwrite(fd, []byte("file"), 0); err != nil {
		t.Errorf("a memfd export takes writes: %v", err)
	}
	if err := dmaBufSync(fd, dmabuf.DMA_BUF_SYNC_START|dmabuf.DMA_BUF_SYNC_RW); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("DMA_BUF_IOCTL_SYNC on a memfd export: %v, want ENOTTY", err)
	}
}

func TestUdmabufExportKindOf(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	other, err := unix.MemfdCreate("not-an-export", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	closed, _ := unix.Dup(p[0])
	unix.Close(closed)
	for _, tc := range []struct {
		name string
		fd   int
		want error
	}{
		{"pipe", p[0], ErrNotExport},
		{"another memfd", other, ErrNotExport},
		{"closed", closed, unix.ENOENT},
		{"negative", -1, unix.ENOENT},
	} {
		if k, err := ExportKindOf(tc.fd); k != 0 || !errors.Is(err, tc.want) {
			t.Errorf("%s: ExportKindOf = %v, %v; want 0, %v", tc.name, k, err, tc.want)
		}
	}
	for _, tc := range []struct {
		k    ExportKind
		want string
	}{{ExportMemfd, "memfd"}, {ExportUdmabuf, "udmabuf"}, {7, "ExportKind(7)"}} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
