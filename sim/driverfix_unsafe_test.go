package sim

import (
	"testing"

	"github.com/gaudi-go/gaudi/uapi/hl"
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
