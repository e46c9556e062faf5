package sim

import (
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
	if _, err := waitCS(f, seq, 1_000_000); err != unix.EIO {
		t.Fatalf("wait for the timed-out CS: %v, want EIO (force-completed)", err)
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
