package sim

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Regressions for what FuzzProgramGaudi2 and FuzzProgramGaudi found. Each
// input is also kept as a seed in testdata/fuzz.

// TestFenceCompletedTwice: a CS times out while an eventfd is registered,
// so the reset is postponed: hl_abort_waiting_for_completions
// force-completes the CS's fence with EIO (force_complete_cs) and WAIT_CS
// returns. When the release watchdog then hard-resets the device, the CS
// is rolled back and cs_do_release sets the fence's error and completes
// it again. The second completion wrote the fence's result while the wait
// woken by the first was reading it: a data race (go test -race). Seed:
// seed-cs-timeout.
func TestFenceCompletedTwice(t *testing.T) {
	cfg := Default(Gaudi2, 1)
	cfg.Devices[0].ReleaseWatchdog = 10 * time.Millisecond
	s := newTestSystem(t, cfg)
	t.Cleanup(func() { s.Close() })
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSim(f) })
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	a := hl.InfoArgs{Op: hl.HL_INFO_REGISTER_EVENTFD}
	a.SetEventfd(uint32(efd))
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	// A CS that never ends (a FENCE on a counter nothing raises), with a
	// timeout of 0 s.
	stuck := userCB(t, f, 0, build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.Fence(packet.Fence{ID: 0, Target: 1})
	}))
	seq, _, err := submit(f, chunksOf([]chunk{stuck}), hl.HL_CS_FLAGS_CUSTOM_TIMEOUT, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The CS times out at once and the release watchdog postpones the
	// reset it asks for (an eventfd is registered): a wait that comes
	// after the watchdog started answers EBUSY (watchdog_active), one
	// that comes before the timeout's force completion EIO. Either is
	// the driver's answer; which one depends on timing.
	if _, err := waitCS(f, seq, 1_000_000); err != unix.EIO && err != unix.EBUSY {
		t.Fatalf("wait for the timed-out CS: %v, want EIO (force-completed) or EBUSY (reset postponed)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !f.Killed() {
		if time.Now().After(deadline) {
			t.Fatal("the release watchdog did not reset the device")
		}
		time.Sleep(time.Millisecond)
	}
	for d.State() != Operational {
		time.Sleep(time.Millisecond)
	}
}

// TestMultiWaitKilled: a multi-CS wait whose list is empty (or names no
// CS in flight) with a long timeout is ended by no completion: on the
// driver a reset wakes it (force_complete_multi_cs), hl_cs_poll_fences
// finds nothing and it sleeps again for the time left. Only a signal ends
// it, such as the SIGKILL of the hard reset that kills the holder of the
// compute node (device_kill_open_processes). The simulator models the
// kill as the file dying, but the wait in progress went on sleeping for
// 71 minutes. Now it answers ErrKilled. Seed: 5ddc6c748580a981.
func TestMultiWaitKilled(t *testing.T) {
	_, d, f := openSim(t, Gaudi)
	done := make(chan error, 1)
	go func() {
		var a hl.WaitCSArgs
		a.In().Flags = hl.HL_WAIT_CS_FLAGS_MULTI_CS
		a.In().SetTimeoutUs(1 << 32) // no sequence numbers, 71 minutes
		done <- f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	}()
	time.Sleep(20 * time.Millisecond)
	d.condReset(0) // a CS timeout without an eventfd: the holder is killed
	select {
	case err := <-done:
		if err != ErrKilled {
			t.Errorf("the wait answered %v, want ErrKilled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the killed file's wait goes on")
	}
}

// TestSystemCloseReleasesSRAM: the SRAM is a mapping made at its first
// use, and System.Close left it (48 MB of address space on Gaudi2, and
// whatever was written to it), so a process that makes many Systems, as
// the fuzz targets do, grew without bound. Close unmaps it now; a later
// access is a page fault.
func TestSystemCloseReleasesSRAM(t *testing.T) {
	s, d, f := openCompute(t, Gaudi2)
	cb := userCB(t, f, 0, build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Dst: d.prof.sramUserBase, Src: 0x0101010101010101, Size: 1 << 20, Memset: true,
			Header: packet.Header{EngineBarrier: true}})
	}))
	seq, _, err := submit(f, chunksOf([]chunk{cb}), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, f, seq)
	sram := d.hardware().sram
	if sram == nil {
		t.Fatal("no SRAM after a DMA into it")
	}
	closeSim(f)
	s.Close()
	if d.hardware().sram != nil {
		t.Error("the device still holds its SRAM")
	}
	if err := unix.Msync(sram[:pageSize], unix.MS_ASYNC); err != unix.ENOMEM {
		t.Errorf("msync of the SRAM after System.Close: %v, want ENOMEM (unmapped)", err)
	}
}

// TestResetBesideSubmitRelease: the ioctl that submits a CS holds a
// reference until it returns, and drops the last one when the CS's jobs
// are already done. A reset beside it took a reference on every CS of
// the mirror list (cs_get in hl_cs_rollback_all), including one whose
// count had just reached zero and whose release waited for the list's
// lock: the release recycled the CS, then the reset's put released it a
// second time and dereferenced its recycled fence. The driver flushes its
// completion work before it walks the list; the simulator skips a CS
// whose release is under way. Seed: e125c126820a759b (a CS with a 0 s
// timeout whose CB ends in an undefined opcode: the TDR's reset and the
// engine's raced the ioctl).
//
// The test makes the window: with the list's lock held, the last put
// starts a release, which waits for the lock, and an abort waits beside
// it; whichever gets the lock first, the CS is released once.
func TestResetBesideSubmitRelease(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	c := f.subm()
	hw := d.hardware()
	for range 200 {
		s, err := c.allocate(0, time.Minute) // the ioctl's reference
		if err != nil {
			t.Fatal(err)
		}
		hw.mu.Lock()
		hw.mirror = append(hw.mirror, s)
		s.submitted = true
		released := make(chan struct{})
		go func() {
			defer close(released)
			s.put() // the last reference: the release waits for hw.mu
		}()
		time.Sleep(100 * time.Microsecond)
		aborted := make(chan struct{})
		go func() {
			defer close(aborted)
			hw.abortCS(nil) // a reset's rollback
		}()
		time.Sleep(100 * time.Microsecond)
		hw.mu.Unlock()
		<-released
		<-aborted
		if n := s.refs.Load(); n != 0 {
			t.Fatalf("%d references left", n)
		}
	}
}

// TestSystemCloseEndsSelfImport: a context that imports its own export
// (out-of-tree MEMORY REG_DMABUF_FD) holds itself, as on the driver: after
// every descriptor is closed it lingers and the device stays taken. Its
// import holds a descriptor and a mapping of this process, which
// System.Close left behind (and the context's engine goroutine), so a
// process that made such Systems leaked them. Now System.Close ends the
// context. Found by FuzzProgramGaudi2OOT's leak check; seed:
// seed-oot-dmabuf.
func TestSystemCloseEndsSelfImport(t *testing.T) {
	memfdExports(t)
	cfg := Default(Gaudi2, 1)
	cfg.Driver = DriverOutOfTree
	before, err := takeCounts()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	s := newTestSystem(t, cfg)
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	va := deviceBuf(t, f, n)
	fd, err := memExport(f, va, n, 0, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regDMABuf(f, fd, n); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	f.Close()
	d.reap()
	// As on the driver: the import keeps the export, which keeps the
	// context.
	if g, err := d.Open(); !errors.Is(err, unix.EBUSY) {
		if err == nil {
			g.Close()
		}
		t.Fatalf("open after closing a context that imported its own export: %v, want EBUSY", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, ok := settle(before)
	if !ok {
		t.Errorf("after System.Close: %d goroutines (were %d), %d descriptors (were %d), %d simulator mappings (were %d)",
			after.goroutines, before.goroutines, after.fds, before.fds, after.simMaps, before.simMaps)
	}
	d.mu.Lock()
	compute := d.compute
	d.mu.Unlock()
	if compute != nil {
		t.Error("the context outlived System.Close")
	}
}
