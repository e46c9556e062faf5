package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// servedExport allocates and maps 2 MiB of device memory on the compute
// file f (Gaudi2) and exports its first size bytes with flags; it returns
// the client's descriptor of the dma-buf (ioctl.OpenFile takes it from
// the server).
func servedExport(t *testing.T, f ioctl.File, size uint64, flags uint32) int {
	t.Helper()
	fd, err := exportRange(f, servedMap(t, f), size, flags)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// servedMap allocates and maps 2 MiB of device memory on f and returns
// its address.
func servedMap(t *testing.T, f ioctl.File) uint64 {
	t.Helper()
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_ALLOC
	a.In().Alloc().MemSize = 2 << 20
	if err := f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	h := a.Out().Handle()
	a = hl.MemArgs{}
	a.In().Op = hl.HL_MEM_OP_MAP
	a.In().MapDevice().Handle = h
	if err := f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	return a.Out().DeviceVirtAddr()
}

// exportRange exports the first size bytes of the mapping at va.
func exportRange(f ioctl.File, va, size uint64, flags uint32) (int, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_EXPORT_DMABUF_FD
	a.In().Flags = flags
	e := a.In().ExportDmabufFD()
	e.Addr, e.MemSize = va, size
	err := f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a))
	return int(a.Out().FD()), err
}

// TestServedDMABufNoCPUAccess: the driver's dma-buf has no read, write
// or mmap. habanalabs_dmabuf_ops (common/memory.c) has no mmap, so
// dma_buf_mmap_internal (drivers/dma-buf/dma-buf.c) answers EINVAL, and
// dma_buf_fops has no read or write, so vfs_read and vfs_write answer
// EINVAL (EBADF first for a write to a read-only one: FMODE_WRITE). A
// served export was the simulator's memfd file itself: read answered
// EBADF, a write reached device memory, mmap answered EACCES. It is now a
// file of the server's hlsim/dmabuf/N (dmabuf_unsafe.go); its size, as
// dma_buf_llseek tells, is the export's. A shared mmap answers ENODEV,
// not EINVAL: FUSE sends no mmap request the server could refuse.
func TestServedDMABufNoCPUAccess(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	f, err := ioctl.OpenFile(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rw := servedExport(t, f, 8192, unix.O_RDWR|unix.O_CLOEXEC)
	defer unix.Close(rw)
	ro := servedExport(t, f, 4096, unix.O_RDONLY|unix.O_CLOEXEC)
	defer unix.Close(ro)
	b := make([]byte, 16)
	for _, tc := range []struct {
		name string
		err  error
		want unix.Errno
	}{
		{"read", ignoreN(unix.Read(rw, b)), unix.EINVAL},
		{"pread", ignoreN(unix.Pread(rw, b, 0)), unix.EINVAL},
		{"write", ignoreN(unix.Write(rw, b)), unix.EINVAL},
		{"pwrite", ignoreN(unix.Pwrite(rw, b, 4096)), unix.EINVAL},
		{"read of the read-only export", ignoreN(unix.Read(ro, b)), unix.EINVAL},
		{"write to the read-only export", ignoreN(unix.Write(ro, b)), unix.EBADF},
		{"shared mmap", mmapErr(rw, unix.PROT_READ, unix.MAP_SHARED), unix.ENODEV},
		{"shared writable mmap", mmapErr(rw, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED), unix.ENODEV},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		fd   int
		size int64
	}{{"read-write", rw, 8192}, {"read-only", ro, 4096}} {
		if n, err := unix.Seek(tc.fd, 0, unix.SEEK_END); err != nil || n != tc.size {
			t.Errorf("%s export: SEEK_END %d, %v; want %d", tc.name, n, err, tc.size)
		}
		if k, err := sim.ExportKindOf(tc.fd); k != sim.ExportServed || err != nil {
			t.Errorf("%s export: kind %v, %v; want served", tc.name, k, err)
		}
	}
}

func ignoreN(_ int, err error) error { return err }

func mmapErr(fd, prot, flags int) error {
	m, err := unix.Mmap(fd, 0, 4096, prot, flags)
	if err == nil {
		unix.Munmap(m)
	}
	return err
}

// TestServedExportHeldByAnotherProcess: the driver's dma-buf holds the
// compute file, read-only or not (export_dmabuf takes the reference,
// hl_release_dmabuf puts it once the dma-buf's last reference goes), so
// while another process holds it a new compute open is EBUSY
// (hl_device_open). A served read-only export was an O_PATH file of the
// simulator's memfd, which the simulator did not see in the other
// process: the open succeeded. Now the server keeps the export until the
// RELEASE of the file it handed out.
func TestServedExportHeldByAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags uint32
	}{{"read-write", unix.O_RDWR | unix.O_CLOEXEC}, {"read-only", unix.O_RDONLY | unix.O_CLOEXEC}} {
		t.Run(tc.name, func(t *testing.T) {
			s := hlsimtest.Serve(t, "gaudi2:1")
			f, err := ioctl.OpenFile(s.Node(0, false))
			if err != nil {
				t.Fatal(err)
			}
			fd := servedExport(t, f, 8192, tc.flags)
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			file := os.NewFile(uintptr(fd), "dmabuf")
			c := exec.Command(exe)
			c.Env = append(os.Environ(), hlsimChildEnv+"=hold 3")
			c.ExtraFiles = []*os.File{file}
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer c.Process.Kill()
			file.Close()
			f.Close()
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() || sc.Text() != "holding" {
				t.Fatalf("child: %q, %v", sc.Text(), sc.Err())
			}
			if _, err := ioctl.OpenFile(s.Node(0, false)); !errors.Is(err, unix.EBUSY) {
				t.Fatalf("open while another process holds the export: %v, want EBUSY\n%s", err, s.Log())
			}
			stdin.Close() // the child exits, closing its descriptor
			if err := c.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			g, err := ioctl.OpenFile(s.Node(0, false))
			if err != nil {
				t.Fatalf("open once the export is released: %v\n%s", err, s.Log())
			}
			g.Close()
		})
	}
}

// holdDMABuf is the child's "hold FD": it checks that FD is a dma-buf
// export, says "holding" and keeps it until its standard input closes.
func holdDMABuf(fd int) int {
	if _, err := sim.ExportKindOf(fd); err != nil {
		println(err.Error())
		return 1
	}
	os.Stdout.WriteString("holding\n")
	r := bufio.NewReader(os.Stdin)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return 0
		}
	}
}

// TestServedOverlappingExports: export_dmabuf_from_addr accepts exports
// of a mapping that overlap (memhash_node_export_get counts them). On a
// served node the second answered EOPNOTSUPP; it is now a view
// (sim/export_view.go) that the server reads (the simulator's
// TestOverlappingExports checks that views follow the device memory).
func TestServedOverlappingExports(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	f, err := ioctl.OpenFile(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	va := servedMap(t, f)
	x1, err := exportRange(f, va, 8192, unix.O_RDWR|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(x1)
	x2, err := exportRange(f, va, 16384, unix.O_RDWR|unix.O_CLOEXEC)
	if err != nil {
		t.Fatalf("export overlapping a live one: %v, want success", err)
	}
	defer unix.Close(x2)
	for _, tc := range []struct {
		name string
		fd   int
		size int
	}{{"first", x1, 8192}, {"overlapping", x2, 16384}} {
		got := make([]byte, tc.size+1)
		if n, err := sim.TestHookReadDMABuf(tc.fd, 0, got); err != nil || n != tc.size {
			t.Errorf("%s export: read %d bytes, %v; want %d", tc.name, n, err, tc.size)
		}
	}
}

// TestServedDMABufsBounded: each served dma-buf holds a descriptor of the
// server until its last reference goes, so one process's exports may hold
// at most maxServedDMABufs; the next answers EMFILE, as the driver's
// dma_buf_fd does for a full descriptor table, and one is accepted again
// once a dma-buf is closed.
func TestServedDMABufsBounded(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	f, err := ioctl.OpenFile(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	va := servedMap(t, f)
	for range maxServedDMABufs {
		fd, err := exportRange(f, va, 4096, unix.O_RDWR|unix.O_CLOEXEC)
		if err != nil {
			t.Fatalf("export %d: %v", len(fds), err)
		}
		fds = append(fds, fd)
	}
	if _, err := exportRange(f, va, 4096, unix.O_RDWR|unix.O_CLOEXEC); !errors.Is(err, unix.EMFILE) {
		t.Fatalf("export beyond %d held: %v, want EMFILE", maxServedDMABufs, err)
	}
	unix.Close(fds[0])
	fds = fds[1:]
	// The release of the closed one reaches the server after close(2):
	// wait for it.
	for deadline := time.Now().Add(time.Minute); ; {
		fd, err := exportRange(f, va, 4096, unix.O_RDWR|unix.O_CLOEXEC)
		if err == nil {
			fds = append(fds, fd)
			break
		}
		if !errors.Is(err, unix.EMFILE) || time.Now().After(deadline) {
			t.Fatalf("export once one was closed: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServedViewImport: REG_DMABUF_FD (map_device_va_from_dmabuf_fd,
// out-of-tree driver) of an export that overlaps a live one imports it
// like any other; on a served node the server takes the client's file of
// hlsim/dmabuf/N and imports the view it stands for.
func TestServedViewImport(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2:oot")
	exp, err := ioctl.OpenFile(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	imp, err := ioctl.OpenFile(s.Node(1, false))
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	va := servedMap(t, exp)
	x1, err := exportRange(exp, va, 8192, unix.O_RDWR|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(x1)
	x2, err := exportRange(exp, va, 16384, unix.O_RDWR|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(x2)
	for _, tc := range []struct {
		name string
		fd   int
		size uint64
	}{{"segment", x1, 8192}, {"view", x2, 16384}} {
		var a hl.MemArgs
		v := (*hl.MemRegDmabufFDArgs)(unsafe.Pointer(&a))
		v.Op, v.FD, v.Length = hl.HL_MEM_OP_REG_DMABUF_FD, uint64(tc.fd), tc.size
		if err := imp.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil || a.Out().DeviceVirtAddr() == 0 {
			t.Errorf("import of the %s export: %#x, %v", tc.name, a.Out().DeviceVirtAddr(), err)
		}
	}
}
