package sim

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

func TestInjectFault(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	d.InjectFault(Fault{Ioctl: "OPEN", Errno: unix.EAGAIN})
	if _, err := d.Open(); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("open with a fault armed: %v, want EAGAIN", err)
	}
	f, err := d.Open()
	if err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 8)
	// The second DEVICE_STATUS fails; other ops do not count.
	d.InjectFault(Fault{Ioctl: "INFO", MatchOp: true, Op: hl.HL_INFO_DEVICE_STATUS, Nth: 2, Errno: unix.EIO})
	steps := []struct {
		op   uint32
		want error
	}{
		{hl.HL_INFO_DEVICE_STATUS, nil},
		{hl.HL_INFO_HW_IP_INFO, nil},
		{hl.HL_INFO_DEVICE_STATUS, unix.EIO},
		{hl.HL_INFO_DEVICE_STATUS, nil},
	}
	for i, st := range steps {
		err := info(f, st.op, buf)
		if (st.want == nil && err != nil) || (st.want != nil && !errors.Is(err, st.want)) {
			t.Errorf("step %d (op %d): %v, want %v", i, st.op, err, st.want)
		}
	}
	// A device in reset answers operational-only ops with EBUSY.
	d.SetState(InReset)
	if err := info(f, hl.HL_INFO_CLK_RATE, buf); !errors.Is(err, unix.EBUSY) {
		t.Errorf("CLK_RATE in reset: %v, want EBUSY", err)
	}
	d.SetState(Operational)
	if err := info(f, hl.HL_INFO_CLK_RATE, buf); err != nil {
		t.Errorf("CLK_RATE after reset: %v", err)
	}
}
