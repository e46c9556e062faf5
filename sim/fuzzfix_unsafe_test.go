package sim

import (
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Regressions for inputs that crashed the simulator or raced when it was
// driven at the raw ioctl level. Each input is kept as a test and, where
// the input is small, as a fuzz seed.

// TestWaitSeqZero: a new context starts at sequence 1 (hl_ctx_init sets
// cs_sequence = 1), so sequence 0 names a fence slot no CS took.
// hl_ctx_get_fence_locked reads cs_pending[0], which is NULL, and
// _hl_cs_wait_ioctl reports the NULL fence as a CS that is gone
// (hl_wait_for_fence: CS_WAIT_STATUS_GONE). The simulator dereferenced
// the empty slot and killed the process.
func TestWaitSeqZero(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			for _, us := range []uint64{0, 1000} {
				out, err := waitCS(f, 0, us)
				if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED || out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_GONE == 0 {
					t.Errorf("WAIT_CS seq 0, %d us: %v, status %d, flags %#x; want COMPLETED with GONE", us, err, out.Status, out.Flags)
				}
			}
		})
	}
}

// TestWaitSignalSeqZero: a wait CS whose signal sequence array holds 0
// reaches hl_ctx_get_fence through cs_ioctl_signal_wait; the NULL fence
// means "signal CS already finished": the ioctl succeeds (rc 0) without a
// CS, and out.seq keeps ULLONG_MAX.
func TestWaitSignalSeqZero(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			a, err := waitSignalCS(f, 0, []uint64{0}, 0)
			if err != nil {
				t.Fatalf("wait CS on signal seq 0: %v, want success (signal CS gone)", err)
			}
			if got := a.Out().Seq(); got != ^uint64(0) {
				t.Errorf("out.seq = %#x, want ULLONG_MAX (no CS was made)", got)
			}
		})
	}
}

// FuzzWaitCS issues WAIT_CS on a new context with any sequence number,
// timeout and flags except the interrupt wait (which takes user
// addresses). The seed with sequence 0 crashed the simulator.
func FuzzWaitCS(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint32(0))
	f.Add(uint64(0), uint64(10), uint32(0))
	f.Add(uint64(1), uint64(0), uint32(0))
	f.Add(^uint64(0), uint64(0), uint32(0))
	f.Fuzz(func(t *testing.T, seq, us uint64, flags uint32) {
		if us > 1000 {
			us %= 1000
		}
		flags &^= hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_MULTI_CS
		_, _, fl := openSim(t, Gaudi2)
		var a hl.WaitCSArgs
		a.In().SetSeq(seq)
		a.In().SetTimeoutUs(us)
		a.In().Flags = flags
		_ = fl.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	})
}

// TestResetBesideFirstCall: Device.Reset walks the open files and aborts
// their CSs (File.abort) while a new file's first CB, CS or WAIT call
// builds its submission state; the abort read that state without a lock
// while the first call wrote it, a data race -race reported every time.
// The driver's hard reset (hl_device_reset) likewise runs beside ioctls
// of a context that just opened.
func TestResetBesideFirstCall(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	f.Close()
	for range 200 {
		f, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			cbInfo(f, 0, 0) // the file's first CB call
		}()
		d.Reset()
		<-done
		f.Close()
	}
}
