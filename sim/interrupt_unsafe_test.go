package sim

import (
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// interruptWait issues one WAIT_CS for interrupt id: on the kernel CQ
// counter cqHandle[0], or on the user counter at addr when cqHandle is 0.
func interruptWait(f *File, id uint32, cqHandle, addr, target, us uint64) (hl.WaitCSOut, error) {
	var a hl.WaitCSArgs
	in := a.In()
	in.Flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | id<<20
	if cqHandle != 0 {
		in.Flags |= hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ
		in.SetCQCountersHandle(cqHandle)
	} else {
		setWaitAddr(in, addr)
	}
	in.SetTarget(target)
	in.SetInterruptTimeoutUs(us)
	err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	return *a.Out(), err
}

// pendingWaits counts the waits on interrupt id.
func pendingWaits(d *Device, id uint32) int {
	s := &d.hardware().sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waits[id])
}

// TestInterruptWaitReset follows hl_release_pending_user_interrupts and
// the two wait paths' answers to it: the kernel CQ wait fails with EIO
// (the arguments untouched), the user-address wait answers ABORTED
// without an error.
func TestInterruptWaitReset(t *testing.T) {
	const id = 48 // GAUDI2_IRQ_NUM_USER_FIRST
	for _, kernelCQ := range []bool{true, false} {
		_, d, f := openSim(t, Gaudi2)
		var cq, addr uint64
		if kernelCQ {
			h, err := cbCreate(f, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			cq = h
		} else {
			mem, _ := hostMem(t, f, 4096)
			addr = uint64(uintptr(unsafe.Pointer(&mem[0])))
		}
		type res struct {
			out hl.WaitCSOut
			err error
		}
		done := make(chan res, 1)
		go func() {
			out, err := interruptWait(f, id, cq, addr, 1, 10_000_000)
			done <- res{out, err}
		}()
		for end := time.Now().Add(5 * time.Second); pendingWaits(d, id) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the wait never became pending")
			}
		}
		d.Reset()
		r := <-done
		if kernelCQ && (r.err != unix.EIO || r.out.Status != uint32(cq)) { // status overlays the handle: untouched
			t.Errorf("kernel CQ wait across a reset: %v, status %d; want EIO, arguments untouched", r.err, r.out.Status)
		}
		if !kernelCQ && (r.err != nil || r.out.Status != hl.HL_WAIT_CS_STATUS_ABORTED) {
			t.Errorf("user-address wait across a reset: %v, status %d; want ABORTED", r.err, r.out.Status)
		}
	}
}

// TestInterruptWaitTimeouts checks the answers without an interrupt: a
// poll of a counter short of its target is BUSY (the kernel CQ wait with
// the call's time, the user-address wait without), a timed-out wait is
// BUSY without a timestamp, and a counter at its target is COMPLETED with
// a timestamp.
func TestInterruptWaitTimeouts(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	cq, err := cbCreate(f, 4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := hostMem(t, f, 4096)
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	for _, tc := range []struct {
		name   string
		cq     uint64
		target uint64
		us     uint64
		status uint32
		stamp  bool
	}{
		{"kernel CQ poll", cq, 1, 0, hl.HL_WAIT_CS_STATUS_BUSY, true},
		{"kernel CQ timeout", cq, 1, 1000, hl.HL_WAIT_CS_STATUS_BUSY, false},
		{"kernel CQ at target", cq, 0, 1000, hl.HL_WAIT_CS_STATUS_COMPLETED, true},
		{"user poll", 0, 1, 0, hl.HL_WAIT_CS_STATUS_BUSY, false},
		{"user timeout", 0, 1, 1000, hl.HL_WAIT_CS_STATUS_BUSY, false},
		{"user at target", 0, 0, 1000, hl.HL_WAIT_CS_STATUS_COMPLETED, true},
	} {
		out, err := interruptWait(f, 48, tc.cq, addr, tc.target, tc.us)
		stamped := out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0 && out.TimestampNsec != 0
		if err != nil || out.Status != tc.status || stamped != tc.stamp {
			t.Errorf("%s: %v, status %d, timestamp %v; want status %d, timestamp %v", tc.name, err, out.Status, stamped, tc.status, tc.stamp)
		}
	}
	if _, err := interruptWait(f, 48, 0, 8, 1, 0); err != unix.EFAULT {
		t.Errorf("user counter at a bad address: %v, want EFAULT", err)
	}
}
