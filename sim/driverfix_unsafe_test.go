package sim

import (
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
