package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Tests of behaviours where the simulator differed from the 6.12 driver.

// TestReleaseResetNotCounted: on Gaudi2 the release of a compute context
// resets the device (hpriv_release calls hl_device_reset with
// HL_DRV_RESET_DEV_RELEASE, as fixup_device_params_per_asic sets
// reset_upon_device_release), but hl_device_reset adds to
// compute_reset_cnt only when !reset_upon_device_release, so INFO
// RESET_COUNT's soft_reset_cnt stays 0 across closes. Gaudi does no
// release reset at all. The simulator counted one per close on Gaudi2.
func TestReleaseResetNotCounted(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openCompute(t, asic)
			for range 3 {
				f.Close()
				var err error
				if f, err = d.Open(); err != nil {
					t.Fatal(err)
				}
			}
			defer f.Close()
			var r hl.InfoResetCount
			if err := infoInto(t, f, hl.HL_INFO_RESET_COUNT, &r); err != nil {
				t.Fatal(err)
			}
			if r.SoftResetCnt != 0 || r.HardResetCnt != 0 {
				t.Errorf("after 3 closes: soft_reset_cnt %d, hard_reset_cnt %d; want 0, 0", r.SoftResetCnt, r.HardResetCnt)
			}
		})
	}
}

// TestMultiCSTimeout64: hl_multi_cs_wait_ioctl converts timeout_us with
// hl_usecs64_to_jiffies, which keeps all 64 bits (only a single-CS wait,
// _hl_cs_wait_ioctl, passes it through usecs_to_jiffies's unsigned int).
// A timeout of 2^32 us therefore waits (about 71 minutes); the simulator
// cut it to 32 bits, 0, and answered BUSY at once.
func TestMultiCSTimeout64(t *testing.T) {
	_, d, f := openSim(t, Gaudi)
	blocked := runCB(t, f, 2, blockedCB(t, f), 0, 0)
	seqs := []uint64{blocked}
	done := make(chan error, 1)
	var out hl.WaitCSOut
	go func() {
		var a hl.WaitCSArgs
		a.In().SetSeq(addrFor(&seqs[0]))
		a.In().SetSeqArrLen(1)
		a.In().SetTimeoutUs(1 << 32)
		a.In().Flags = hl.HL_WAIT_CS_FLAGS_MULTI_CS
		err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
		out = *a.Out()
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("multi-CS wait of 2^32 us returned at once: %v, status %d", err, out.Status)
	case <-time.After(300 * time.Millisecond):
	}
	// A reset aborts the CS, which ends the wait.
	d.Reset()
	select {
	case err := <-done:
		if err != unix.EIO {
			t.Errorf("after the reset: %v, status %d; want EIO", err, out.Status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end with the reset")
	}
}

// ioc encodes an ioctl request: direction, size, type and number.
func ioc(dir, size, typ, nr uint) uint { return dir<<30 | size<<16 | typ<<8 | nr }

const (
	iocNone  = 0
	iocWrite = 1 // IOC_IN: the caller's argument is copied in
	iocRead  = 2 // IOC_OUT: copied back out
	iocRW    = 3
)

// TestIoctlArgSize: drm_ioctl takes the argument size from the request:
// it copies in the caller's bytes (when both the request and the driver's
// definition have IOC_IN), zeroes the rest of the driver's struct, and
// copies back only the caller's size (when both have IOC_OUT); a longer
// argument is copied in and out whole. _hl_ioctl, the control node's
// path (hl_ioctl_control) and the legacy 'H' driver's, does the same by
// the driver's direction bits, and picks the ioctl by number whatever the
// type. The simulator answered EINVAL unless the size was exact.
func TestIoctlArgSize(t *testing.T) {
	cbSize := uint(unsafe.Sizeof(hl.CBArgs{}))
	cbNr := uint(hl.DRM_COMMAND_BASE + hl.HL_IOCTL_CB)
	d := uint(hl.DRM_IOCTL_BASE)

	t.Run("DRM", func(t *testing.T) {
		_, _, f := openSim(t, Gaudi2)
		// A CB CREATE argument cut after cb_size (16 bytes): ctx_id and
		// flags read as 0, and only 16 bytes come back (the handle is
		// the first 8).
		var buf [4]uint64
		for i := range buf {
			buf[i] = 0xaaaaaaaaaaaaaaaa
		}
		a := (*hl.CBArgs)(unsafe.Pointer(&buf[0]))
		a.In().Op = hl.HL_CB_OP_CREATE
		a.In().CBSize = 4096
		if err := f.Ioctl(ioc(iocRW, 16, d, cbNr), unsafe.Pointer(&buf[0])); err != nil {
			t.Fatalf("CB CREATE of 16 bytes: %v", err)
		}
		h := a.Out().CBHandle()
		if h == 0 || buf[1] != 0 || buf[2] != 0xaaaaaaaaaaaaaaaa || buf[3] != 0xaaaaaaaaaaaaaaaa {
			t.Errorf("after a 16-byte CREATE: %#x, want a handle, zeroed op/size and the rest untouched", buf)
		}
		if _, err := cbInfo(f, h, 0); err != nil {
			t.Errorf("the CB made by a short CREATE: %v", err)
		}

		// Longer than the driver's struct: the extra bytes go in and come
		// back unchanged.
		for i := range buf {
			buf[i] = 0xbbbbbbbbbbbbbbbb
		}
		*a = hl.CBArgs{}
		a.In().Op = hl.HL_CB_OP_CREATE
		a.In().CBSize = 4096
		if err := f.Ioctl(ioc(iocRW, cbSize+8, d, cbNr), unsafe.Pointer(&buf[0])); err != nil {
			t.Fatalf("CB CREATE of %d bytes: %v", cbSize+8, err)
		}
		if a.Out().CBHandle() == 0 || buf[3] != 0xbbbbbbbbbbbbbbbb {
			t.Errorf("after a longer CREATE: %#x", buf)
		}

		// IOC_IN only: the CB is made, nothing is written back.
		*a = hl.CBArgs{}
		a.In().Op = hl.HL_CB_OP_CREATE
		a.In().CBSize = 4096
		a.In().CBHandle = 0xdead
		if err := f.Ioctl(ioc(iocWrite, cbSize, d, cbNr), unsafe.Pointer(&buf[0])); err != nil {
			t.Fatalf("_IOW CB CREATE: %v", err)
		}
		if a.In().CBHandle != 0xdead || a.In().Op != hl.HL_CB_OP_CREATE {
			t.Errorf("_IOW wrote the argument back: %#x", buf)
		}

		// No direction, no size, no argument: the handler sees a zeroed
		// struct (CB CREATE of size 0: one page) and nothing is copied.
		if err := f.Ioctl(ioc(iocNone, 0, d, cbNr), nil); err != nil {
			t.Errorf("_IO CB with a nil argument: %v, want success (nothing copied)", err)
		}
		// IOC_OUT only, shorter: zeroes in, 8 bytes out.
		buf[0], buf[1] = 0xcccc, 0xcccc
		if err := f.Ioctl(ioc(iocRead, 8, d, cbNr), unsafe.Pointer(&buf[0])); err != nil || buf[0] == 0xcccc || buf[1] != 0xcccc {
			t.Errorf("_IOR CB of 8 bytes: %v, %#x; want a new handle in the first 8 bytes only", err, buf[:2])
		}
		// A shorter argument at a bad address is EFAULT (copy_from_user).
		if err := f.Ioctl(ioc(iocRW, 16, d, cbNr), nil); err != unix.EFAULT {
			t.Errorf("short argument at NULL: %v, want EFAULT", err)
		}
		// Numbers and types drm_ioctl refuses are unchanged.
		if err := f.Ioctl(ioc(iocRW, cbSize, 'H', cbNr), unsafe.Pointer(&buf[0])); err != unix.ENOTTY {
			t.Errorf("type 'H' on the DRM node: %v, want ENOTTY", err)
		}
		if err := f.Ioctl(ioc(iocRW, cbSize, d, hl.DRM_COMMAND_BASE+0x20), unsafe.Pointer(&buf[0])); err != unix.EINVAL {
			t.Errorf("number past the table: %v, want EINVAL", err)
		}
	})

	t.Run("control", func(t *testing.T) {
		s := newTestSystem(t, Default(Gaudi2, 1))
		t.Cleanup(func() { s.Close() })
		c, err := s.Device(0).OpenControl()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		infoNr := uint(hl.DRM_COMMAND_BASE + hl.HL_IOCTL_INFO)
		var st hl.InfoDeviceStatus
		a := hl.InfoArgs{Op: hl.HL_INFO_DEVICE_STATUS, ReturnSize: uint32(unsafe.Sizeof(st))}
		setPointer(&a.ReturnPointer, addrFor(&st))
		// hl_ioctl_control looks at the number only, and _hl_ioctl copies
		// the caller's 20 bytes (pad and the union zeroed).
		for _, typ := range []uint{d, 'H', 0} {
			if err := c.Ioctl(ioc(iocNone, 20, typ, infoNr), unsafe.Pointer(&a)); err != nil {
				t.Errorf("control INFO, type %#x, 20 bytes, no direction: %v", typ, err)
			}
		}
		if err := c.Ioctl(ioc(iocRW, 24, d, hl.DRM_COMMAND_BASE+0x20), unsafe.Pointer(&a)); err != unix.ENOTTY {
			t.Errorf("control, number past the table: %v, want ENOTTY", err)
		}
	})

	t.Run("legacy", func(t *testing.T) {
		cfg := Default(Gaudi2, 1)
		cfg.Legacy = true
		s := newTestSystem(t, cfg)
		t.Cleanup(func() { s.Close() })
		f, err := s.Device(0).Open()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var buf [3]uint64
		a := (*hl.CBArgs)(unsafe.Pointer(&buf[0]))
		a.In().Op = hl.HL_CB_OP_CREATE
		a.In().CBSize = 4096
		buf[2] = 0xaaaa
		// _hl_ioctl copies by the driver's IOWR: a request without
		// direction bits still gets its handle back.
		if err := f.Ioctl(ioc(iocNone, 16, 'H', 1+hl.HL_IOCTL_CB), unsafe.Pointer(&buf[0])); err != nil {
			t.Fatalf("legacy CB CREATE of 16 bytes: %v", err)
		}
		if a.Out().CBHandle() == 0 || buf[2] != 0xaaaa {
			t.Errorf("legacy short CREATE: %#x", buf)
		}
	})
}

// TestCSTimeoutWatchdog: with an eventfd registered, a CS timeout does not
// reset at once (hl_device_cond_reset): the user is notified
// (DEVICE_RESET, CS_TIMEOUT), every CS in flight is force-completed with
// EIO (hl_abort_waiting_for_completions -> force_complete_cs), WAIT_CS
// answers EBUSY while the watchdog runs (hl_wait_ioctl checks
// watchdog_active), and the device release watchdog hard-resets after
// device_release_watchdog_timeout_sec unless the compute file is closed
// first (hpriv_release resets with watchdog_active, and hl_device_reset
// cancels the watchdog). The watchdog's hard reset kills the holder
// (device_kill_open_processes): the file becomes dead.
func TestCSTimeoutWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		asic  ASIC
		close bool // close the file while the watchdog runs
	}{
		{"Gaudi2 closed in time", Gaudi2, true},
		{"Gaudi closed in time", Gaudi, true},
		{"Gaudi2 watchdog fires", Gaudi2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default(tc.asic, 1)
			cfg.Devices[0].ReleaseWatchdog = 400 * time.Millisecond
			s := newTestSystem(t, cfg)
			t.Cleanup(func() { s.Close() })
			d := s.Device(0)
			f, err := d.Open()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeSim(f) })
			ctl, err := d.OpenControl()
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(efd)
			var reg hl.InfoArgs
			reg.Op = hl.HL_INFO_REGISTER_EVENTFD
			reg.SetEventfd(uint32(efd))
			if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&reg)); err != nil {
				t.Fatal(err)
			}
			hardBefore := resetCount(t, ctl)
			q := uint32(0)
			if tc.asic == Gaudi {
				q = 2 // an external queue
			}
			seq := runCB(t, f, q, blockedCB(t, f), hl.HL_CS_FLAGS_CUSTOM_TIMEOUT, 1)
			waited := make(chan error, 1)
			go func() {
				_, err := waitCS(f, seq, 10_000_000)
				waited <- err
			}()
			if _, ok := waitEventfd(t, efd, 5000); !ok {
				t.Fatal("no eventfd signal after the CS timeout")
			}
			if !d.WatchdogActive() {
				t.Fatal("the release watchdog does not run")
			}
			select {
			case err := <-waited:
				if err != unix.EIO {
					t.Errorf("wait under way when the CS timed out: %v, want EIO (force_complete_cs)", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the wait under way was not force-completed")
			}
			if _, err := waitCS(f, seq, 0); err != unix.EBUSY {
				t.Errorf("WAIT_CS while the watchdog runs: %v, want EBUSY", err)
			}
			if ev := getEvents(t, f); ev&hl.HL_NOTIFIER_EVENT_DEVICE_RESET == 0 || ev&hl.HL_NOTIFIER_EVENT_CS_TIMEOUT == 0 {
				t.Errorf("events %#x, want DEVICE_RESET and CS_TIMEOUT", ev)
			}
			if f.Killed() || d.State() != Operational {
				t.Fatalf("before the watchdog: killed %v, state %v", f.Killed(), d.State())
			}
			wantHard := hardBefore
			if tc.close {
				closeSim(f)
				if d.WatchdogActive() {
					t.Error("the release did not cancel the watchdog")
				}
				if tc.asic == Gaudi {
					wantHard++ // no compute reset: the release reset is hard
				}
				time.Sleep(600 * time.Millisecond) // past the watchdog
			} else {
				deadline := time.Now().Add(5 * time.Second)
				for !f.Killed() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !f.Killed() {
					t.Fatal("the watchdog did not kill the file")
				}
				for d.State() != Operational && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // the reset is under way
				}
				if _, err := cbCreate(f, 4096, 0); err != ErrKilled {
					t.Errorf("CB after the watchdog: %v, want ErrKilled", err)
				}
				if _, err := d.Open(); err != unix.EBUSY {
					t.Errorf("open while the killed file is open: %v, want EBUSY", err)
				}
				closeSim(f)
				wantHard++
			}
			if f.Killed() != !tc.close {
				t.Errorf("killed %v", f.Killed())
			}
			g, err := d.Open()
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer closeSim(g)
			if n := resetCount(t, g); n != wantHard {
				t.Errorf("hard resets %d -> %d, want %d", hardBefore, n, wantHard)
			}
		})
	}
}

// TestPinDeviceMemory: hl_pin_host_memory pins with pin_user_pages_fast
// (FOLL_WRITE | FOLL_LONGTERM), and check_vma_flags (mm/gup.c) refuses a
// mapping with VM_IO or VM_PFNMAP, device memory: EFAULT when it is the
// first page, and ENOMEM from the driver when a later page stops the pin
// short. The simulator accepted such memory. Here a memfd mapping plays
// the device mapping: /proc/self/smaps is replaced by a copy whose
// VmFlags give it "io pf".
func TestPinDeviceMemory(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	region, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(region)
	fd, err := unix.MemfdCreate("pfnmap", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, pageSize); err != nil {
		t.Fatal(err)
	}
	dev := uintptr(unsafe.Pointer(&region[pageSize]))
	if _, _, e := unix.Syscall6(unix.SYS_MMAP, dev, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED, uintptr(fd), 0); e != 0 {
		t.Fatal(e)
	}
	// Without the flags, the memfd page pins.
	va, err := memMapHost(f, uint64(dev), pageSize, 0, 0)
	if err != nil {
		t.Fatalf("MAP of a memfd page: %v", err)
	}
	if err := memUnmap(f, va); err != nil {
		t.Fatal(err)
	}

	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	header := []byte(fmt.Sprintf("%x-", dev))
	var out []byte
	in := false
	for line := range bytes.Lines(smaps) {
		if bytes.HasPrefix(line, header) {
			in = true
		}
		if in && bytes.HasPrefix(line, []byte("VmFlags:")) {
			line = append(bytes.TrimRight(line, "\n"), []byte(" io pf\n")...)
			in = false
		}
		out = append(out, line...)
	}
	fake := filepath.Join(t.TempDir(), "smaps")
	if err := os.WriteFile(fake, out, 0o600); err != nil {
		t.Fatal(err)
	}
	old := procSmaps
	procSmaps = fake
	defer func() { procSmaps = old }()

	if _, err := memMapHost(f, uint64(dev), pageSize, 0, 0); err != unix.EFAULT {
		t.Errorf("MAP of a VM_IO|VM_PFNMAP page: %v, want EFAULT", err)
	}
	if _, err := memMapHost(f, uint64(uintptr(unsafe.Pointer(&region[0]))), 2*pageSize, 0, 0); err != unix.ENOMEM {
		t.Errorf("MAP of a page, then a VM_IO|VM_PFNMAP page: %v, want ENOMEM", err)
	}
	if va, err := memMapHost(f, uint64(uintptr(unsafe.Pointer(&region[0]))), pageSize, 0, 0); err != nil {
		t.Errorf("MAP of the ordinary page alone: %v", err)
	} else {
		memUnmap(f, va)
	}
}

// TestExportMmapRefused: a Gaudi dma-buf cannot be mapped by the CPU: the
// driver's habanalabs_dmabuf_ops has no mmap, so dma_buf_mmap_internal
// (drivers/dma-buf/dma-buf.c) answers EINVAL, and dma-buf files have no
// read. The simulator's memfd export could be mapped and read. It now
// hands out a write-only file: mmap fails (EACCES, the nearest a file the
// simulator can make comes to the kernel's EINVAL) and so does read.
func TestExportMmapRefused(t *testing.T) {
	memfdExports(t)
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			va := deviceBuf(t, f, 1<<21)
			if asic == Gaudi {
				va = 32<<30 - 8192
			}
			dramPut(t, f, va, []byte("device"))
			fd, err := memExport(f, va, 8192, 0, exportFlags)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			for _, prot := range []int{unix.PROT_READ, unix.PROT_READ | unix.PROT_WRITE} {
				for _, flags := range []int{unix.MAP_SHARED, unix.MAP_PRIVATE} {
					if m, err := unix.Mmap(fd, 0, 8192, prot, flags); err == nil {
						unix.Munmap(m)
						t.Errorf("mmap(prot %d, flags %d) of an export succeeded", prot, flags)
					}
				}
			}
			if _, err := unix.Read(fd, make([]byte, 6)); err == nil {
				t.Error("read of an export succeeded")
			}
			b := make([]byte, 6)
			if _, err := TestHookReadDMABuf(fd, 0, b); err != nil || string(b) != "device" {
				t.Errorf("TestHookReadDMABuf = %q, %v", b, err)
			}
			// A read-only export refuses writes too.
			ro, err := memExport(f, va, 8192, 0, unix.O_RDONLY|unix.O_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(ro)
			if _, err := unix.Mmap(ro, 0, 8192, unix.PROT_READ, unix.MAP_SHARED); err == nil {
				t.Error("mmap of a read-only export succeeded")
			}
			if _, err := unix.Pwrite(ro, []byte("x"), 0); err == nil {
				t.Error("write to a read-only export succeeded")
			}
		})
	}
}

const childEnv = "GAUDI_SIM_TEST_DMABUF_CHILD"

// TestExportHeldByAnotherProcess: the driver's dma-buf holds the exporting
// context (export_dmabuf takes hl_ctx_get and the compute file,
// hl_release_dmabuf puts them), so while any descriptor of it is open, in
// any process, the device stays owned: a new compute open is EBUSY. The
// simulator only looked at this process's descriptors, so a descriptor
// passed to another process did not keep the context alive. It now asks
// the kernel whether any other file of the export's memory is open for
// writing (a write lease is refused then).
func TestExportHeldByAnotherProcess(t *testing.T) {
	exportHeldByAnotherProcess(t, exportFlags)
}

// TestReadOnlyExportHeldByAnotherProcess: a read-only export holds the
// compute file as a writable one does (export_dmabuf, common/memory.c,
// takes the file reference whatever the flags; hl_release_dmabuf puts
// it), so while another process holds it a new compute open is EBUSY
// (hl_device_open). The simulator handed out an O_PATH file, which no
// write lease sees; it now hands out a write-only file of an empty,
// write-sealed witness memfd whose write lease tells.
func TestReadOnlyExportHeldByAnotherProcess(t *testing.T) {
	exportHeldByAnotherProcess(t, unix.O_RDONLY|unix.O_CLOEXEC)
}

// exportHeldByAnotherProcess passes an export made with flags to a child
// process, closes this process's descriptor and the compute file, and
// checks that a new open is EBUSY until the child exits.
func exportHeldByAnotherProcess(t *testing.T, flags uint32) {
	if os.Getenv(childEnv) != "" {
		return // the child's part is TestDMABufChild
	}
	memfdExports(t)
	cfg := Default(Gaudi2, 1)
	s := newTestSystem(t, cfg)
	t.Cleanup(func() { s.Close() })
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	va := deviceBuf(t, f, 1<<21)
	dramPut(t, f, va, []byte("shared bytes"))
	fd, err := memExport(f, va, 8192, 0, flags)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.dram.pieces[0].seg; s.probe < 0 {
		t.Skip("the kernel grants no write lease on the export's memfd")
	}
	readOnly := flags&unix.O_ACCMODE == unix.O_RDONLY
	file := os.NewFile(uintptr(fd), "dmabuf")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDMABufChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if readOnly {
		cmd.Env = append(cmd.Env, childEnv+"_HOLD=1")
	}
	cmd.ExtraFiles = []*os.File{file} // descriptor 3 in the child
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	file.Close() // this process's descriptor goes; the child's stays
	f.Close()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	for line := range lines {
		got = append(got, line)
		if strings.HasPrefix(line, "child read") || strings.HasPrefix(line, "child holds") {
			break
		}
	}
	want := "child read \"shared bytes\""
	if readOnly {
		// The witness of a read-only export holds no bytes; another
		// process cannot read it through the hook (export.go).
		want = "child holds the export"
	}
	if len(got) == 0 || got[len(got)-1] != want {
		t.Fatalf("child: %q", got)
	}
	if g, err := d.Open(); err != unix.EBUSY {
		if g != nil {
			g.Close()
		}
		t.Fatalf("open while another process holds the export: %v, want EBUSY", err)
	}
	stdin.Close() // the child exits, closing its descriptor
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	g, err := d.Open()
	if err != nil {
		t.Fatalf("open after every descriptor closed: %v", err)
	}
	g.Close()
}

// TestDMABufChild is the child of TestExportHeldByAnotherProcess: it reads
// the export it was given as descriptor 3 through the test hook and holds
// it until its standard input closes.
func TestDMABufChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestExportHeldByAnotherProcess")
	}
	if os.Getenv(childEnv+"_HOLD") != "" {
		if _, err := ExportKindOf(3); err != nil {
			t.Fatal(err)
		}
		fmt.Println("child holds the export")
	} else {
		b := make([]byte, 12)
		if _, err := TestHookReadDMABuf(3, 0, b); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("child read %q\n", b)
	}
	io.Copy(io.Discard, os.Stdin)
}
